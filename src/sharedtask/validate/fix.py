"""``--fix``: write a normalized copy of a run and report what changed.

Normalization, per topic (topics keep their order of first appearance):
1. lines the validator could not read (blank, comments, wrong column count, bad
   encoding, non-numeric or non-finite score) are dropped;
2. duplicate documents are dropped, the first occurrence kept (what the ARQMath
   scripts do, docs/evaluation.md);
3. lines are sorted by score descending, ties broken by docno descending (byte-wise,
   = strcmp): exactly the order trec_eval gives the original run, so the fixed run
   means what the original meant to trec_eval;
4. the list is cut at the task's depth limit and ranks are renumbered 1, 2, 3, ...;
5. tied scores (equal, or equal only as 32-bit floats as in pytrec_eval / trec_eval
   9.0.8) are made distinct by stepping each later one down to the next lower 32-bit
   float, so trec_eval (double or float), pytrec_eval, ir_measures and the Touché
   scorer (by rank) all see the same order; untouched scores keep their text;
6. one run tag (the first one, made safe), ``Q0`` in column 2, LF line endings,
   no comments or blank lines, control characters (CR, NUL, ...) and whitespace around
   the other fields removed (a line whose topic or document id holds them is dropped:
   repairing it would be a guess); TREC runs use spaces, ARQMath runs tabs.
"""

from __future__ import annotations

import gzip
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sharedtask.errors import SharedTaskError
from sharedtask.validate import engine
from sharedtask.formats.layouts import Layout
from sharedtask.validate.model import ValidationResult
from sharedtask.formats.runfile import find_run_file

_PLAIN = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_UNSAFE_TAG = re.compile(r"[^A-Za-z0-9_.+-]")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

#: Findings whose lines the fix drops (counted as "unreadable lines dropped").
_DROPPED_CODES = ("RUN-BLANK-LINE", "RUN-COMMENT", "RUN-COLUMNS", "RUN-ENCODING")


@dataclass
class FixReport:
    """What ``fix_run`` changed, plus the validation of the input and of the output."""

    source: Path
    out_path: Path
    lines_written: int
    changes: dict[str, int] = field(default_factory=dict)
    before: ValidationResult | None = None
    after: ValidationResult | None = None

    @property
    def changed(self) -> bool:
        return any(self.changes.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "out": str(self.out_path),
            "lines_written": self.lines_written,
            "changes": {k: v for k, v in self.changes.items() if v},
            "valid_after": self.after.valid if self.after else None,
            "after": self.after.to_json() if self.after else None,
        }


class _Writer:
    def __init__(self, path: Path, layout: Layout, task: Any) -> None:
        self.path = path
        self.layout = layout
        self.task = task
        self.sep = " " if layout.sep is None else "\t"
        self.depth = int(task.output.max_results_per_topic)
        self.tag: str | None = None
        self.fh: IO[str] | None = None
        self.changes: dict[str, int] = {}
        self.written = 0
        self.open()

    def open(self) -> None:
        if self.fh is not None:
            self.fh.close()
        if self.path.name.endswith(".gz"):
            self.fh = gzip.open(self.path, "wt", encoding="utf-8", newline="\n")
        else:
            self.fh = open(self.path, "w", encoding="utf-8", newline="\n")
        self.changes = {}
        self.written = 0

    def bump(self, key: str, n: int = 1) -> None:
        if n:
            self.changes[key] = self.changes.get(key, 0) + n

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None

    def _tag(self, raw: str) -> str:
        if self.tag is None:
            pattern = (self.task.output.patterns or {}).get("tag")
            tag = raw
            if pattern is not None and re.fullmatch(pattern, tag) is None:
                tag = _UNSAFE_TAG.sub("_", tag)[:100] or "run"
                self.bump("run tag made safe")
            self.tag = tag
        return self.tag

    def topic(self, topic: str, rows: list[list[str]], scores: list[float | None], lines: list[int]) -> None:
        lay = self.layout
        if self.tag is None and rows:
            self._tag(rows[0][lay.tag])  # the run's first tag in file order
        keep = [k for k, s in enumerate(scores) if s is not None]
        self.bump("lines with an unusable score dropped", len(rows) - len(keep))
        # An id with control characters or surrounding whitespace cannot be repaired without
        # guessing (cleaning it could merge it with another topic or document): drop the line.
        ids = [i for i in (lay.topic, lay.doc, lay.post) if i is not None]
        intact = [k for k in keep if not any(_CONTROL.search(rows[k][i]) or rows[k][i] != rows[k][i].strip()
                                             for i in ids)]
        self.bump("lines with damaged ids dropped", len(keep) - len(intact))
        keep = intact
        if lay.answer is not None:  # Task 3: one answer, rank 1
            self.bump("extra answers dropped", max(0, len(keep) - 1))
            for k in keep[:1]:
                row = list(rows[k])
                if row[lay.rank] != "1":
                    self.bump("ranks renumbered")
                row[lay.rank] = "1"
                row[lay.tag] = self._tag(row[lay.tag])
                self._write(row)
            return
        key = lay.doc
        seen: set[str] = set()
        unique: list[int] = []
        for k in keep:
            d = rows[k][key]  # type: ignore[index]
            if d in seen:
                continue
            seen.add(d)
            unique.append(k)
        self.bump("duplicate documents dropped", len(keep) - len(unique))
        order = sorted(unique, key=lambda k: (scores[k], rows[k][key]), reverse=True)  # type: ignore[index]
        if order != unique:
            self.bump("topics re-sorted by score")
        if len(order) > self.depth:
            self.bump("lines beyond the depth limit cut", len(order) - self.depth)
            order = order[: self.depth]
        texts = self._scores([scores[k] for k in order], [rows[k][lay.score] for k in order])  # type: ignore[misc]
        for rank, (k, score_text) in enumerate(zip(order, texts), 1):
            row = list(rows[k])
            if row[lay.rank] != str(rank):
                self.bump("ranks renumbered")
            row[lay.rank] = str(rank)
            row[lay.score] = score_text
            if lay.q0 is not None and row[lay.q0] != "Q0":
                row[lay.q0] = "Q0"
                self.bump("column 2 set to Q0")
            tag = self._tag(row[lay.tag])
            if row[lay.tag] != tag:
                self.bump("run tags unified")
            row[lay.tag] = tag
            self._write(row)

    def _scores(self, values: list[float], texts: list[str]) -> list[str]:
        """Score texts, strictly decreasing as doubles and as 32-bit floats."""
        import numpy as np  # lazily: importing the validator should not cost numpy's import

        with warnings.catch_warnings(), np.errstate(over="ignore"):
            warnings.simplefilter("ignore")
            f32 = np.asarray(values, dtype=np.float32)
            out = [t if _PLAIN.fullmatch(t) else _positional(v) for t, v in zip(texts, values)]
            if len(f32) < 2 or bool(np.all(f32[1:] < f32[:-1])):
                if out != texts:
                    self.bump("scores rewritten as plain decimals", sum(a != b for a, b in zip(out, texts)))
                return out
            down = np.float32(-np.inf)
            prev = f32[0]
            adjusted = 0
            for i in range(1, len(f32)):
                cur = f32[i]
                if not cur < prev:
                    cur = np.nextafter(prev, down, dtype=np.float32)
                    out[i] = np.format_float_positional(cur, unique=True, trim="-")
                    adjusted += 1
                prev = cur
            self.bump("tied scores made distinct", adjusted)
            return out

    def _write(self, row: list[str]) -> None:
        assert self.fh is not None
        clean = [_CONTROL.sub("", f) if i == self.layout.answer else _CONTROL.sub("", f).strip()
                 for i, f in enumerate(row)]
        if clean != row:
            self.bump("control characters or stray whitespace removed from fields")
        self.fh.write(self.sep.join(clean) + "\n")
        self.written += 1


def _positional(value: float) -> str:
    import numpy as np

    return np.format_float_positional(np.float64(value), unique=True, trim="-")


def fix_run(run_path: Path, task: Any, out_path: Path) -> FixReport:
    """Write the normalized run to ``out_path``; the report holds the validation before and after."""
    source = find_run_file(Path(run_path))
    out_path = Path(out_path)
    if out_path.resolve() == source.resolve():
        raise SharedTaskError(f"{out_path}: --fix must write to a new file, not over the run")
    layout = engine.choose_layout(source, task.output.format)
    writer = _Writer(out_path, layout, task)
    try:
        before = engine.run(source, task, topics=None, on_topic=writer.topic, on_restart=writer.open)
    finally:
        writer.close()
    for code in _DROPPED_CODES:
        n = sum(1 for f in before.findings if f.code == code) + before.omitted.get(code, 0)
        writer.bump("unreadable lines dropped", n)
    for f in before.findings:
        if f.code == "RUN-MEMORY-BOUND" and f.line:  # the fix saw only the lines the validator read
            writer.bump("reading stopped at this line (RUN-MEMORY-BOUND): the fixed run holds nothing after it",
                        f.line)
    # The layout variant (ARQMath Task 1: 5 or 6 columns) is the participant's choice and kept.
    after = engine.run(out_path, task, topics=None, file_name="run.txt")
    return FixReport(source, out_path, writer.written, writer.changes, before, after)
