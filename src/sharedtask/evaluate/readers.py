"""Evaluator-side reading of runs, qrels and truth files.

The evaluator reads runs in one streaming pass and keeps only what a measure
needs (for ARQMath: judged documents only), so that a 10M-line run costs little
memory. Qrels and runs other than ARQMath Task 1 go through the shared readers
of ``sharedtask.formats`` (rules: docs/formats.md); Task 1 runs are
streamed by :func:`sharedtask.evaluate.arqmath.prime_task1`, which filters as it reads.

Errors a user can cause (wrong column count, a run of another task, qrels that
are not qrels) raise :class:`~sharedtask.errors.FormatError` with a hint.
"""

from __future__ import annotations

from pathlib import Path

from sharedtask.errors import FormatError

from sharedtask.formats._io import open_text
from sharedtask.formats.layouts import BY_SHORT, RUN_LAYOUTS
from sharedtask.formats.trec import detect_layout, load_qrels_dict, read_run  # noqa: F401

Qrels = dict[str, dict[str, int]]

def _sniff(path: Path) -> str | None:
    """The first non-blank line of a file (None if there is none)."""
    try:
        with open_text(path) as handle:
            for line in handle:
                if line.strip():
                    return line
    except UnicodeDecodeError:
        raise FormatError(path, "not UTF-8 text", hint="runs and qrels are plain text files") from None
    return None


def load_qrels(path: Path) -> Qrels:
    """Qrels ``{topic: {doc: rel}}`` through the shared reader (``formats.load_qrels_dict``).

    A file whose first line has the shape of a run gets a clear error first.
    """
    path = Path(path)
    first = _sniff(path)
    if first is None:
        raise FormatError(path, "the qrels file is empty")
    n = len(first.split())
    if n != 4:
        hint = ("this looks like a run, not qrels" if n in (5, 6)
                else "qrels are TREC format: topic, 0 (or Q0), document id, grade")
        raise FormatError(path, f"expected qrels lines 'topic 0 doc relevance' (4 columns), found {n}",
                          line=1, hint=hint)
    return load_qrels_dict(path)


def check_run_layout(path: Path, run_format: str, task_id: str) -> str:
    """Refuse a run written for another task, judged from its first line; returns the layout.

    ``formats.detect_layout`` recognises the layouts by column count and topic prefix
    (A./B.), see docs/formats.md ("Runs").
    """
    expected = RUN_LAYOUTS[run_format].short
    first = _sniff(path)
    if first is None:
        raise FormatError(path, "the run is empty", hint="a run needs at least one line per topic")
    found = detect_layout(first)
    if found != expected:
        raise FormatError(
            path, f"this is {BY_SHORT[found].describe()}, but task {task_id} expects {BY_SHORT[expected].describe()}",
            line=1, hint="check --task",
        )
    return expected


def wrong_columns(path: Path, lineno: int, found: int, fmt: str) -> FormatError:
    """The error for a line whose column count does not fit ``fmt``; guesses which task it is for."""
    guesses = {
        5: "an ARQMath Task 1 run (Topic_Id Post_Id Rank Score Run_Tag)",
        4: "a qrels file (topic 0 doc relevance)",
        6: "a TREC run (qid Q0 doc rank score tag) or an ARQMath Task 2 run",
    }
    hint = f"this line looks like {guesses[found]}" if found in guesses else None
    if hint:
        hint += "; check --task"
    return FormatError(
        path, f"{fmt} lines have {RUN_LAYOUTS[fmt].ncol} columns, found {found}", line=lineno, hint=hint
    )


def parse_score(path: Path, lineno: int, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise FormatError(path, f"score {text!r} is not a number", line=lineno) from None


def parse_rank(path: Path, lineno: int, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise FormatError(path, f"rank {text!r} is not an integer", line=lineno) from None
