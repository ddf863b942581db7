"""The single pass over a run: split lines, group them by topic, run the rules.

Memory: for a run grouped by topic (the normal case) only the current topic's lines
and the set of finished topic ids are kept, so memory does not grow with the file.
When a topic shows up again after another one (an interleaved run), the pass starts
over in a mode that keeps every topic's lines until the end of the file (the lines before
the interleaving was noticed are read twice). What is kept is bounded by the task
(budget.py, checked once per chunk): a run that needs more is refused with
RUN-MEMORY-BOUND and the rest is not read.

Large grouped runs go through the columnar fast path (fastpath.py, columnar.py) where
their blocks are plain; it books plain topics and hands every other topic and block to
the code here, so the result is the same (tests/test_validate_columnar.py).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from sharedtask import families
from sharedtask.validate.arqmath import check_file_name
from sharedtask.formats.layouts import ARQ1, ARQ1_TREC, Layout
from sharedtask.formats.layouts import RUN_LAYOUTS as LAYOUTS
from sharedtask.validate.budget import Budget
from sharedtask.validate.model import DEFAULT_LIMIT_PER_CODE, Collector, RunStats, ValidationResult
from sharedtask.validate.ranking import RankingContext, TopicState, finish_topic
from sharedtask.validate import structure
from sharedtask.validate.fastpath import FastPath, block_bytes, wanted
from sharedtask.validate.fields import column_of
from sharedtask.validate.structure import TIRA_MAX_BYTES, Scanner
from sharedtask.units import format_size

# TIRA's run.txt check (tira.check_format.RunFormat): at least 5 lines and 3 queries.
TIRA_MIN_LINES = 5
TIRA_MIN_TOPICS = 3

OnTopic = Callable[[str, list[list[str]], list[float | None], list[int]], None]


class _Interleaved(Exception):
    """A topic reappeared: restart keeping every topic's state."""


class _OverBudget(Exception):
    """Going on would keep more of the run than the task's bound (budget.py)."""


def choose_layout(path: Path, run_format: str) -> Layout:
    """The task's layout; for ARQMath Task 1 the first data line picks 5 columns or the TREC variant."""
    if run_format not in LAYOUTS:
        from sharedtask.errors import SharedTaskError

        raise SharedTaskError(f"the validator does not know the run format {run_format!r}")
    layout = LAYOUTS[run_format]
    if layout is not ARQ1:
        return layout
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:  # type: ignore[operator]
            head = fh.read(1 << 16)
    except (OSError, EOFError):
        return layout
    for raw in head.split(b"\n")[:50]:
        text = raw.decode("utf-8", "replace").strip()
        if text and not text.startswith("#"):
            cols = text.split("\t") if "\t" in text else text.split()
            return ARQ1_TREC if len(cols) == 6 else ARQ1
    return layout


def run(
    path: Path,
    task: Any,
    *,
    topics: set[str] | None,
    answer_ids: object | None = None,
    formula_ids: object | None = None,
    file_name: str | None = None,
    on_topic: OnTopic | None = None,
    on_restart: Callable[[], None] | None = None,
    limit_per_code: int = DEFAULT_LIMIT_PER_CODE,
) -> ValidationResult:
    out = Collector(str(path), limit_per_code)
    layout = choose_layout(path, task.output.format)
    args = (path, task, layout, out, topics, answer_ids, formula_ids, on_topic)
    # The pass allocates millions of small lists that never form cycles: the cyclic GC
    # would only rescan them over and over (about 40% of the loop's time).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        pass_ = _Pass(*args, keep_all=False)
        try:
            stats = pass_.run()
        except _Interleaved:
            out.reset()
            if on_restart is not None:
                on_restart()
            pass_ = _Pass(*args, keep_all=True)
            stats = pass_.run()
    finally:
        if gc_was_enabled:
            gc.enable()
    check_file_name(out, file_name or path.name, task.output.file_name_pattern)
    if layout.answer is not None:
        # read no further than the pass did when it stopped early (a bound, a broken gzip stream)
        scanner = pass_.scanner
        _official_quoting(out, path, scanner.consumed if scanner.state.aborted else task.output.run_bytes_bound)
    return ValidationResult(
        path=path,
        task_id=task.id,
        run_format=task.output.format,
        findings=out.findings,
        omitted={k: v for k, v in out.omitted.items() if v},
        stats=stats,
        valid=not out.has_errors,
    )


def _official_quoting(out: Collector, path: Path, max_bytes: int) -> None:
    """ARQMath-3 Task 3: say what the official scripts will read otherwise than written. They
    read the run with ``csv.reader(delimiter='\\t')`` and default quoting (sharedtask.formats.task3csv):
    an answer that begins with an unmatched ``"`` swallows the lines after it; a field that
    begins with ``"`` and closes on its line loses its quotes (``""`` becomes ``"``); a NUL
    byte or a field over csv's size limit stops them.

    Two streaming passes, each reading at most the task's ``max_run_bytes`` (a hostile run must
    not cost memory here either, issue 26): the swallowed lines first, then the misread fields."""
    from sharedtask.formats import task3csv

    stop: task3csv.CsvStop | None = None
    try:
        for taken in task3csv.iter_quoting(path, max_bytes):
            if not isinstance(taken, task3csv.Swallowed):
                continue
            for n, topic in taken.lines:
                out.report("RUN-ANSWER-QUOTE",
                           f"topic {topic or '(blank line)'} will be swallowed by {taken.topic}'s answer: line {n} is "
                           f"read as part of that answer, which begins with \" and has no closing quote on its line "
                           "(the official scripts read the run with Python's csv quoting)", taken.line)
    except task3csv.CsvStop as exc:
        stop = exc
    except (UnicodeDecodeError, OSError, EOFError):
        return  # the structure checks have reported what makes the file unreadable
    try:
        for m in task3csv.iter_quoting(path, max_bytes):
            if not isinstance(m, task3csv.Misread):
                continue
            field = m.written[m.column - 1]
            how = (f"as {m.read[m.column - 1]!r}" if len(m.read) == len(m.written) else
                   f"as {len(m.read)} field(s) instead of {len(m.written)}, from there {m.read[m.column - 1:]!r}")
            out.report("RUN-ANSWER-QUOTE",
                       lambda m=m, field=field, how=how: (
                           f"topic {m.topic}: column {m.column} is written {field!r} and the official scripts read it "
                           f"{how}: for Python's csv a field that begins with \" is quoted (the quotes are dropped, "
                           "\"\" inside is one \", text after the closing quote is kept)"),
                       m.line, 1 + sum(len(f) + 1 for f in m.written[:m.column - 1]),
                       hint="to keep the text as written, write the field as csv quotes it: enclosed in \" with every "
                            "\" inside doubled (\"\"\"a\"\" b\" is read as \"a\" b)")
    except task3csv.CsvStop:
        pass  # the same stop as in the first pass
    except (UnicodeDecodeError, OSError, EOFError):
        return
    if stop is not None:
        out.report("RUN-ANSWER-QUOTE", f"the official scripts stop reading the run here: Python's csv raises "
                                       f"'{stop.reason}'", stop.line)


def _patterns(task: Any) -> dict[str, re.Pattern[str] | None]:
    raw: dict[str, str] = dict(task.output.patterns or {})
    return {name: re.compile(p, re.ASCII) for name, p in raw.items()}


class _Pass:
    """One pass over the run. The state the steps share (current topic, finished topics,
    every topic's rows in keep-all mode) lives here; the hot loop in :meth:`lines` keeps
    the common case (a line of the current topic with the right column count) inline."""

    def __init__(self, path: Path, task: Any, layout: Layout, out: Collector, topics: set[str] | None,
                 answer_ids: object | None, formula_ids: object | None, on_topic: OnTopic | None,
                 keep_all: bool) -> None:
        patterns = _patterns(task)
        self.ctx = RankingContext(
            out=out,
            layout=layout,
            max_depth=int(task.output.max_results_per_topic),
            touche=families.get(task.family).strict_ranks,
            patterns=patterns,
            max_answer_chars=task.output.max_answer_chars,
            answer_ids=answer_ids,
            formula_ids=formula_ids,
            on_topic=on_topic,
        )
        self.scanner = Scanner(path, out, check_separators=layout.sep is None, answers=layout.answer is not None,
                               tabs_only=layout.sep == "\t" and layout.answer is None,
                               max_bytes=task.output.run_bytes_bound, max_line=task.output.line_bytes_bound)
        self.path, self.task, self.layout, self.out, self.topics = path, task, layout, out, topics
        self.topic_pattern = patterns.get("topic")
        self.keep_all = keep_all
        self.states: dict[str, TopicState] = {}  # keep_all: every topic; grouped: unused
        self.finished: set[str] = set()
        self.seen_order: list[str] = []
        self.cur: TopicState | None = None
        self.line_no = 1  # the next line to read
        self.budget = Budget.for_task(task, topics)
        # Bytes read when the current chunk (or batch) began, and when the oldest kept topic
        # began: their difference to the bytes read bounds the text kept (0 in keep_all mode).
        self.chunk_origin = 0
        self.topic_origin = 0
        self.columnar: FastPath | None = None
        if not keep_all and on_topic is None and answer_ids is None and formula_ids is None and wanted(path, layout):
            self.columnar = FastPath(self, block_bytes(path, structure.CHUNK))

    def run(self) -> RunStats:
        self.lines()
        if self.keep_all:
            for topic in self.seen_order:
                finish_topic(self.ctx, self.states.pop(topic))
        elif self.cur is not None:
            finish_topic(self.ctx, self.cur)
        self.scanner.finish()
        return _finish_run(self.path, self.task, self.layout, self.ctx, self.scanner, self.topics, self.seen_order,
                           self.keep_all)

    def lines(self) -> None:
        """Every line of the run, through the columnar fast path where blocks qualify."""
        try:
            if self.columnar is None:
                self.line_loop(self.scanner.chunks())
                return
            self.columnar.feed(self.scanner.raw_chunks())
        except _OverBudget as exc:
            last = self.line_no - 1
            self.scanner.state.aborted = True
            self.scanner.state.lines = last
            self.out.report("RUN-MEMORY-BOUND", f"validation stopped after line {last:,}: {exc}; the rest of the run "
                            "was not read", last)
            return
        self.scanner.end(self.line_no)

    def check_budget(self) -> None:
        """After a chunk or batch: raise _OverBudget when the pass keeps more than the task allows."""
        rows = self.line_no - 1 if self.keep_all else (len(self.cur) if self.cur is not None else 0)
        why = self.budget.over(rows=rows, kept_bytes=self.scanner.consumed - self.topic_origin,
                               topics=len(self.seen_order), tags=len(self.ctx.tags))
        self.chunk_origin = self.scanner.consumed
        if why is not None:
            raise _OverBudget(why)

    def line_loop(self, chunks: Iterable[tuple[int, list[str | None]]]) -> None:
        """The hot loop: rows of the current topic are appended without a call per line."""
        layout = self.layout
        sep, maxsplit, ncol, it = layout.sep, layout.maxsplit, layout.ncol, layout.topic
        slow = self.slow
        cur = self.cur
        cur_topic: str | None = cur.topic if cur is not None else None
        add_row: Callable[[list[str]], None] = cur.flat.extend if cur is not None else lambda _p: None
        # Lines of the wrong width once RUN-COLUMNS is at its cap are only counted, here, in bulk:
        # a file of the wrong layout then costs a split per line, not a call (whitespace-split
        # layouts only: a tab layout's line may still be one of the right width with spaces).
        columns_capped = sep is None and not self.out.wants("RUN-COLUMNS")
        for first_line, lines in chunks:
            wrong = 0
            for k, line in enumerate(lines, first_line):
                if line is not None:
                    parts = line.split(sep, maxsplit)
                    if len(parts) == ncol:
                        if parts[it] == cur_topic:
                            add_row(parts)
                            continue
                    elif columns_capped and parts and parts[0][0] != "#":
                        wrong += 1
                        if self.cur is not None:
                            self.cur.anchor(k + 1)
                        continue
                st = slow(line, k)
                if st is not None:
                    cur_topic = st.topic
                    add_row = st.flat.extend
                columns_capped = sep is None and not self.out.wants("RUN-COLUMNS")
            if wrong:
                self.out.count("RUN-COLUMNS", wrong)
            self.line_no = first_line + len(lines)
            self.check_budget()

    def scan(self, chunks: list[bytes], first_line: int) -> Iterator[tuple[int, list[str | None]]]:
        """Chunks read by the fast path, given to the line engine as the scanner would."""
        for buf in chunks:
            lines = self.scanner.check_chunk(buf, first_line)
            yield first_line, lines
            first_line += len(lines)

    def slow(self, line: str | None, lineno: int) -> TopicState | None:
        """Everything the hot loop does not handle; returns the (possibly new) current topic."""
        out, layout, cur = self.out, self.layout, self.cur
        if line is None:  # undecodable, already reported
            if cur is not None:
                cur.anchor(lineno + 1)
            return cur
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            out.report("RUN-COMMENT" if stripped else "RUN-BLANK-LINE", "comment line" if stripped else "blank line", lineno)
            if cur is not None:
                cur.anchor(lineno + 1)
            return cur
        ncol = layout.ncol
        parts = line.split(layout.sep, layout.maxsplit)
        if len(parts) != ncol and layout.sep is not None:
            alt = line.split(None, layout.maxsplit)
            if len(alt) == ncol:
                out.report("RUN-SEPARATOR", f"columns are not separated by tabs ({layout.name} is tab separated)", lineno)
                parts = alt
        if len(parts) != ncol:
            out.report("RUN-COLUMNS", lambda: f"expected {ncol} columns ({layout.column_text()}), found {len(parts)}", lineno)
            if cur is not None:
                cur.anchor(lineno + 1)
            return cur
        topic = parts[layout.topic]
        if cur is not None and topic == cur.topic:
            cur.flat.extend(parts)
            return cur
        return self.switch(topic, lineno, parts)

    def switch(self, topic: str, lineno: int, parts: list[str]) -> TopicState:
        """Make ``topic`` current (a new one, or a known one in keep_all mode) and add its row."""
        if self.keep_all:
            st = self.states.get(topic)
            if st is not None:
                st.anchor(lineno)
            else:
                st = self.new_topic(topic, lineno, column_of(parts, self.layout.topic))
        else:
            st = self.next_topic(topic, lineno, column_of(parts, self.layout.topic))
        st.flat.extend(parts)
        self.cur = st
        return st

    def next_topic(self, topic: str, lineno: int, column: int) -> TopicState:
        """In a grouped run: finish the current topic and start ``topic`` on line ``lineno``."""
        if topic in self.finished:
            raise _Interleaved
        if self.cur is not None:
            if self.columnar is not None:
                self.columnar.finish_current()
            else:
                finish_topic(self.ctx, self.cur)
            self.finished.add(self.cur.topic)
        st = self.new_topic(topic, lineno, column)
        self.cur = st
        self.topic_origin = self.chunk_origin
        return st

    def new_topic(self, topic: str, lineno: int, column: int) -> TopicState:
        self.seen_order.append(topic)
        pattern = self.topic_pattern
        if pattern is not None and pattern.fullmatch(topic) is None:
            self.out.report("RUN-TOPIC-ID", f"topic id {topic!r} does not match the task's pattern {pattern.pattern!r}",
                            lineno, column)
        elif self.topics is not None and topic not in self.topics:
            self.out.report("RUN-UNKNOWN-TOPIC", f"topic {topic!r} is not one of the task's topics", lineno, column)
        st = TopicState(topic, lineno, self.layout.ncol)
        if self.keep_all:
            self.states[topic] = st
        return st


def _finish_run(path: Path, task: Any, layout: Layout, ctx: RankingContext, scanner: Scanner,
                topics: set[str] | None, seen_order: list[str], interleaved: bool) -> RunStats:
    out = ctx.out
    size = path.stat().st_size
    n_topics = len(seen_order)
    rows = ctx.total_rows
    if rows == 0 and not scanner.state.aborted:
        out.report("RUN-EMPTY", _empty_why(out, layout, scanner.state.lines),
                   hint=f"write one line per result: {layout.column_text()}")
    if layout is ARQ1_TREC:
        out.report("RUN-LAYOUT-VARIANT", "6-column TREC layout (Topic Q0 Post Rank Score Tag) instead of ARQMath's 5 columns")
    if layout.tira_compatible:
        if rows and rows < TIRA_MIN_LINES:
            out.report("RUN-TIRA-MIN-LINES", f"the run has {rows} result line(s); TIRA's run check needs at least {TIRA_MIN_LINES}")
        if n_topics and n_topics < TIRA_MIN_TOPICS:
            out.report("RUN-TIRA-MIN-TOPICS", f"the run has {n_topics} topic(s); TIRA's run check needs at least {TIRA_MIN_TOPICS}")
        if size > TIRA_MAX_BYTES:
            out.report("RUN-TIRA-SIZE",
                       f"the file has {format_size(size)}; TIRA's run check allows at most {format_size(TIRA_MAX_BYTES)}")
    else:
        out.report(
            "RUN-TIRA-LAYOUT",
            f"TIRA's generic run.txt check cannot accept the {layout.name} layout "
            f"({layout.ncol} columns: {layout.column_text()}); it needs 6 TREC columns",
            hint=None if layout is not ARQ1 else "on TIRA, such runs need the task's own checker; for Task 1 the "
            "6-column TREC variant (Topic Q0 Post Rank Score Tag) passes",
        )
    if ctx.q0_other:
        out.report("RUN-Q0", f"{ctx.q0_other:,} line(s) have something other than Q0 in column 2", ctx.q0_first)
    if len(ctx.tags) > 1:
        shown = ", ".join(f"{t!r} (line {ln})" for t, ln in list(ctx.tags.items())[:5])
        out.report("RUN-TAG-MIXED", f"the run uses {len(ctx.tags)} different run tags: {shown}", list(ctx.tags.values())[1])
    missing: list[str] = []
    if topics is not None:
        seen = set(seen_order)
        missing = sorted(topics - seen, key=_natural)
        if missing:
            shown = ", ".join(missing[:20]) + (f", ... ({len(missing) - 20} more)" if len(missing) > 20 else "")
            out.report("RUN-MISSING-TOPICS", f"{len(missing)} of {len(topics)} topics have no results: {shown}")
    else:
        out.report("RUN-TOPICS-UNCHECKED", "topic ids were not checked against a topic set")
    if interleaved:
        out.report("RUN-INTERLEAVED", "the lines of some topics are not contiguous (topics are interleaved)")
    depths = ctx.depths
    return RunStats(
        bytes=size,
        lines=scanner.state.lines,
        data_lines=rows,
        topics=n_topics,
        min_depth=min(depths) if depths else 0,
        max_depth=max(depths) if depths else 0,
        tags=list(ctx.tags),
        layout=layout.name,
        interleaved=interleaved,
        gzip=path.name.endswith(".gz"),
        topics_expected=len(topics) if topics is not None else None,
        topics_missing=len(missing) if topics is not None else None,
    )


def _empty_why(out: Any, layout: Layout, lines: int) -> str:
    """RUN-EMPTY's message, naming what kept every line out when there were lines.

    Why: RUN-EMPTY has no line number, so it leads the findings; "the run has no result
    lines" above 4-column lines or binary bytes hid the real problem (field test, issue 40).
    """
    if not lines:
        return "the run has no result lines"
    seen = {code: out.kept[code] + out.omitted[code] for code in ("RUN-ENCODING", "RUN-CONTROL-CHAR", "RUN-COLUMNS")}
    if seen["RUN-ENCODING"] or seen["RUN-CONTROL-CHAR"]:
        return (f"not a text run: none of its {lines:,} line(s) is a result line ({seen['RUN-ENCODING']:,} not UTF-8, "
                f"{seen['RUN-CONTROL-CHAR']:,} control character(s)); runs are plain UTF-8 text")
    if seen["RUN-COLUMNS"]:
        return (f"wrong layout: none of its {lines:,} line(s) has the {layout.ncol} columns of {layout.name} "
                f"({layout.column_text()})")
    return f"the run has no result lines (its {lines:,} line(s) are blank or comments)"


def _natural(topic: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", topic))
