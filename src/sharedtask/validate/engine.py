"""The single pass over a run: split lines, group them by topic, run the rules.

Memory: for a run grouped by topic (the normal case) only the current topic's lines
and the set of finished topic ids are kept, so memory does not grow with the file.
When a topic shows up again after another one (an interleaved run), the pass starts
over in a mode that keeps every topic's lines until the end of the file: correct,
but memory then grows with the run (about 550 bytes per line, measured as peak RSS of
a 1M-line interleaved args.me run) and the lines before the interleaving was noticed
are read twice.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import Any

from sharedtask.findings import Severity
from sharedtask.validate.arqmath import check_file_name
from sharedtask.validate.fields import ARQ1, ARQ1_TREC, LAYOUTS, Layout
from sharedtask.validate.model import DEFAULT_LIMIT_PER_CODE, Collector, RunStats, ValidationResult
from sharedtask.validate.ranking import RankingContext, TopicState, finish_topic
from sharedtask.validate.structure import TIRA_MAX_BYTES, Scanner

# TIRA's run.txt check (tira.check_format.RunFormat): at least 5 lines and 3 queries.
TIRA_MIN_LINES = 5
TIRA_MIN_TOPICS = 3

#: Split clean chunks as a whole instead of line by line. Off by default: measured on a
#: 1M-line Touché run (64 KB chunks) it costs 0.69-0.71 s CPU against 0.62-0.63 s for the
#: line loop. Also measured and dropped (issue 3): TopicState keeping columns (the line
#: loop then pays the transposition itself; no gain) and ``map(str.split)`` over batches of
#: 2,048 lines (slower). Allocating the split strings, not the loop, is the cost here.
#: The fuzz test keeps both paths equivalent.
VECTORIZE = False

OnTopic = Callable[[str, list[list[str]], list[float | None], list[int]], None]


class _Interleaved(Exception):
    """A topic reappeared: restart keeping every topic's state."""


def _group_end(topics: list[str], pos: int, n: int) -> int:
    """End of the stretch of ``topics[pos]`` starting at ``pos``, by galloping + binary search.

    Assumes the stretch is contiguous; the caller verifies it with one C-level count.
    """
    t = topics[pos]
    step = 1
    lo = pos  # topics[lo] == t
    hi = pos + 1
    while hi < n and topics[hi] == t:
        lo = hi
        step *= 2
        hi = min(n, pos + step)
    # topics[lo] == t and (hi == n or topics[hi] != t)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if topics[mid] == t:
            lo = mid
        else:
            hi = mid
    return hi


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
        try:
            stats = _pass(*args, keep_all=False)
        except _Interleaved:
            out.reset()
            if on_restart is not None:
                on_restart()
            stats = _pass(*args, keep_all=True)
    finally:
        if gc_was_enabled:
            gc.enable()
    check_file_name(out, file_name or path.name, task.output.file_name_pattern)
    return ValidationResult(
        path=path,
        task_id=task.id,
        run_format=task.output.format,
        findings=out.findings,
        omitted={k: v for k, v in out.omitted.items() if v},
        stats=stats,
        valid=not out.has_errors,
    )


def _patterns(task: Any) -> dict[str, re.Pattern[str] | None]:
    raw: dict[str, str] = dict(task.output.patterns or {})
    return {name: re.compile(p, re.ASCII) for name, p in raw.items()}


def _pass(
    path: Path,
    task: Any,
    layout: Layout,
    out: Collector,
    topics: set[str] | None,
    answer_ids: object | None,
    formula_ids: object | None,
    on_topic: OnTopic | None,
    *,
    keep_all: bool,
) -> RunStats:
    patterns = _patterns(task)
    ctx = RankingContext(
        out=out,
        layout=layout,
        max_depth=int(task.output.max_results_per_topic),
        touche=task.family == "touche",
        patterns=patterns,
        max_answer_chars=task.output.max_answer_chars,
        answer_ids=answer_ids,
        formula_ids=formula_ids,
        on_topic=on_topic,
    )
    scanner = Scanner(path, out, check_separators=layout.sep is None, answers=layout.answer is not None,
                      tabs_only=layout.sep == "\t" and layout.answer is None)
    topic_pattern = patterns.get("topic")
    sep = layout.sep
    maxsplit = layout.maxsplit
    ncol = layout.ncol
    it = layout.topic
    states: dict[str, TopicState] = {}  # keep_all: every topic; grouped: unused
    finished: set[str] = set()
    seen_order: list[str] = []
    cur: TopicState | None = None
    sep_reported = [0]

    def new_topic(topic: str, lineno: int, parts: list[str]) -> TopicState:
        seen_order.append(topic)
        column = 1 + sum(len(p) + 1 for p in parts[:it])
        if topic_pattern is not None and topic_pattern.fullmatch(topic) is None:
            out.add(
                Severity.ERROR,
                "RUN-TOPIC-ID",
                f"topic id {topic!r} does not match the task's pattern {topic_pattern.pattern!r}",
                hint="write topic ids exactly as in the topics file (case matters)",
                line=lineno,
                column=column,
            )
        elif topics is not None and topic not in topics:
            out.add(
                Severity.ERROR,
                "RUN-UNKNOWN-TOPIC",
                f"topic {topic!r} is not one of the task's topics",
                hint="the evaluation ignores it: check the topic ids (and the --topics/--input you gave)",
                line=lineno,
                column=column,
            )
        st = TopicState(topic, lineno, ncol)
        if keep_all:
            states[topic] = st
        return st

    def slow(line: str | None, lineno: int) -> TopicState | None:
        """Everything the fast path does not handle; returns the (possibly new) current topic."""
        if line is None:  # undecodable, already reported
            if cur is not None:
                cur.anchor(lineno + 1)
            return cur
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            blank = not stripped
            code = "RUN-BLANK-LINE" if blank else "RUN-COMMENT"
            if out.wants(code):
                out.add(
                    Severity.ERROR,
                    code,
                    "blank line" if blank else "comment line",
                    hint="TIRA's run check rejects blank and # comment lines: remove them",
                    line=lineno,
                )
            else:
                out.count_only(Severity.ERROR, code)
            if cur is not None:
                cur.anchor(lineno + 1)
            return cur
        parts = line.split(sep, maxsplit)
        if len(parts) != ncol and sep is not None:
            alt = line.split(None, maxsplit)
            if len(alt) == ncol:
                if out.wants("RUN-SEPARATOR"):
                    out.add(
                        Severity.ERROR,
                        "RUN-SEPARATOR",
                        f"columns are not separated by tabs ({layout.name} is tab separated)",
                        hint="the official ARQMath scripts split on tabs: separate every column by one tab",
                        line=lineno,
                    )
                else:
                    out.count_only(Severity.ERROR, "RUN-SEPARATOR")
                sep_reported[0] += 1
                parts = alt
        if len(parts) != ncol:
            if out.wants("RUN-COLUMNS"):
                out.add(
                    Severity.ERROR,
                    "RUN-COLUMNS",
                    f"expected {ncol} columns ({layout.column_text()}), found {len(parts)}",
                    hint="TIRA and trec_eval reject lines with a different number of columns",
                    line=lineno,
                )
            else:
                out.count_only(Severity.ERROR, "RUN-COLUMNS")
            if cur is not None:
                cur.anchor(lineno + 1)
            return cur
        topic = parts[it]
        if cur is not None and topic == cur.topic:
            cur.flat.extend(parts)
            return cur
        return switch(topic, lineno, parts)

    def switch(topic: str, lineno: int, parts: list[str] | tuple[str, ...]) -> TopicState:
        """Make ``topic`` current (a new one, or a known one in keep_all mode) and add its row."""
        nonlocal cur
        if keep_all:
            st = states.get(topic)
            if st is not None:
                st.anchor(lineno)
            else:
                st = new_topic(topic, lineno, parts)
        else:
            if topic in finished:
                raise _Interleaved
            if cur is not None:
                finish_topic(ctx, cur)
                finished.add(cur.topic)
            st = new_topic(topic, lineno, parts)
        st.flat.extend(parts)
        cur = st
        return st

    def whole_chunk(text: str, n: int, first_line: int) -> bool:
        """Columns of a clean chunk in a few C calls; False (nothing done) if it needs the line loop.

        Every line is split at one separator character; after turning each newline into its
        own token, the newline tokens must sit exactly every ncol+1 tokens and no token may be
        empty: then every line has exactly ncol non-empty columns. Topics must form contiguous
        groups; the topic switches go through the same code as the line loop.
        """
        if layout.sep is not None:
            csep = layout.sep
        elif "\t" not in text:
            csep = " "
        elif " " not in text:
            csep = "\t"
        else:
            return False
        step = ncol + 1
        toks = text.replace("\n", csep + "\n" + csep).split(csep)
        if len(toks) != step * n + 1 or toks.count("") != 1 or toks[ncol::step].count("\n") != n:
            return False
        cols = [toks[c : step * n : step] for c in range(ncol)]
        topics = cols[it]
        groups: list[tuple[str, int, int]] = []
        in_chunk: set[str] = set()
        pos = 0
        while pos < n:
            t = topics[pos]
            if t in in_chunk or t.startswith("#"):
                return False  # interleaved inside the chunk, or comment lines: the line loop handles them
            in_chunk.add(t)
            end = _group_end(topics, pos, n)
            if topics[pos:end].count(t) != end - pos:
                return False
            groups.append((t, pos, end))
            pos = end
        for t, start, end in groups:
            if cur is not None and t == cur.topic:
                cur.anchor(first_line + start)
                st = cur
            else:
                st = switch(t, first_line + start, tuple(c[start] for c in cols))
                start += 1
            if end > start:
                st.flat.extend(chain.from_iterable(zip(*[c[start:end] for c in cols])))
        return True

    # ------------------------------------------------------------------ hot loop
    cur_topic: str | None = None
    add_row: Callable[[list[str]], None] = lambda _p: None  # noqa: E731 - extends the topic's flat list
    vectorize = VECTORIZE and layout.answer is None
    for first_line, lines in scanner.chunks():
        text = scanner.clean_text
        if vectorize and text is not None and lines and whole_chunk(text, len(lines), first_line):
            if cur is not None:
                cur_topic = cur.topic
                add_row = cur.flat.extend
            continue
        for k, line in enumerate(lines, first_line):
            if line is not None:
                parts = line.split(sep, maxsplit)
                if len(parts) == ncol and parts[it] == cur_topic:
                    add_row(parts)
                    continue
            st = slow(line, k)
            if st is not None:
                cur_topic = st.topic
                add_row = st.flat.extend
    if keep_all:
        for topic in seen_order:
            finish_topic(ctx, states.pop(topic))
    elif cur is not None:
        finish_topic(ctx, cur)
    scanner.finish()
    return _finish_run(path, task, layout, ctx, scanner, topics, seen_order, keep_all)


def _finish_run(path: Path, task: Any, layout: Layout, ctx: RankingContext, scanner: Scanner,
                topics: set[str] | None, seen_order: list[str], interleaved: bool) -> RunStats:
    out = ctx.out
    size = path.stat().st_size
    n_topics = len(seen_order)
    rows = ctx.total_rows
    if rows == 0 and not scanner.state.aborted:
        out.add(Severity.ERROR, "RUN-EMPTY", "the run has no result lines",
                hint=f"write one line per result: {layout.column_text()}")
    if layout is ARQ1_TREC:
        out.add(
            Severity.INFO,
            "RUN-LAYOUT-VARIANT",
            "6-column TREC layout (Topic Q0 Post Rank Score Tag) instead of ARQMath's 5 columns",
            hint="accepted (the official scripts did, and TIRA's run check needs 6 columns)",
        )
    if layout.tira_compatible:
        if rows and rows < TIRA_MIN_LINES:
            out.add(Severity.ERROR, "RUN-TIRA-MIN-LINES",
                    f"the run has {rows} result line(s); TIRA's run check needs at least {TIRA_MIN_LINES}",
                    hint="a real run has many results per topic")
        if n_topics and n_topics < TIRA_MIN_TOPICS:
            out.add(Severity.ERROR, "RUN-TIRA-MIN-TOPICS",
                    f"the run has {n_topics} topic(s); TIRA's run check needs at least {TIRA_MIN_TOPICS}",
                    hint="answer every topic of the dataset")
        if size > TIRA_MAX_BYTES:
            out.add(Severity.ERROR, "RUN-TIRA-SIZE",
                    f"the file has {size / 2**20:,.1f} MB; TIRA's run check allows at most {TIRA_MAX_BYTES // 2**20} MB",
                    hint="gzip it as run.txt.gz (TIRA checks the compressed size) or cut the depth")
    else:
        out.add(
            Severity.INFO,
            "RUN-TIRA-LAYOUT",
            f"TIRA's generic run.txt check cannot accept the {layout.name} layout "
            f"({layout.ncol} columns: {layout.column_text()}); it needs 6 TREC columns",
            hint="on TIRA, such runs need the task's own checker"
            + ("; for Task 1 the 6-column TREC variant (Topic Q0 Post Rank Score Tag) passes" if layout is ARQ1 else ""),
        )
    if ctx.q0_other:
        out.add(
            Severity.WARNING,
            "RUN-Q0",
            f"{ctx.q0_other:,} line(s) have something other than Q0 in column 2",
            hint="trec_eval ignores the column, but write the literal Q0 as the format says",
            line=ctx.q0_first,
        )
    if len(ctx.tags) > 1:
        shown = ", ".join(f"{t!r} (line {ln})" for t, ln in list(ctx.tags.items())[:5])
        out.add(
            Severity.WARNING,
            "RUN-TAG-MIXED",
            f"the run uses {len(ctx.tags)} different run tags: {shown}",
            hint="a run has one tag; trec_eval reports only the first",
            line=list(ctx.tags.values())[1],
        )
    missing: list[str] = []
    if topics is not None:
        seen = set(seen_order)
        missing = sorted(topics - seen, key=_natural)
        if missing:
            shown = ", ".join(missing[:20]) + (f", ... ({len(missing) - 20} more)" if len(missing) > 20 else "")
            out.add(
                Severity.WARNING,
                "RUN-MISSING-TOPICS",
                f"{len(missing)} of {len(topics)} topics have no results: {shown}",
                hint="a topic without results scores 0 in averages over all topics",
            )
    else:
        out.add(Severity.INFO, "RUN-TOPICS-UNCHECKED", "topic ids were not checked against a topic set",
                hint="pass --topics FILE or --input DATASET_DIR")
    if interleaved:
        out.add(
            Severity.WARNING,
            "RUN-INTERLEAVED",
            "the lines of some topics are not contiguous (topics are interleaved)",
            hint="legal, but group each topic's lines together: streaming tools (and this validator) then need "
            "far less memory",
        )
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


def _natural(topic: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", topic))
