"""Per-topic rules: duplicates, ranks, score order, ties, depth, ids, tags.

A topic's lines are collected (as split columns) while the topic lasts and checked
here in one go when it ends: whole-column operations (``set``, ``list ==``,
``map(float)``, one translate or regex over the joined ids, numpy for ties) keep
the cost per line low.

How the peers read a ranking (docs/evaluation.md):
* trec_eval ignores the rank column, sorts by score descending and breaks ties by
  docno descending (``strcmp``); duplicate docnos make it refuse the run;
* pytrec_eval-terrier 0.5.11 (= trec_eval 9.0.8) stores scores as 32-bit floats,
  so scores that differ only after ~7 significant digits tie there;
* the Touché scorer (clef21/evaluate.py) sorts by the rank column instead, so a rank
  order that disagrees with the score order changes the Touché score: error there.
"""

from __future__ import annotations

import operator
import re
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, islice
from typing import TYPE_CHECKING

from sharedtask.findings import Severity
from sharedtask.formats.layouts import Layout
from sharedtask.validate.fields import check_ids, column_of, parse_ranks, parse_scores, rank_strings
from sharedtask.validate.model import Collector

if TYPE_CHECKING:
    import numpy as np

_DOLLAR = re.compile(r"(?<!\\)\$")
_SHOW = 5  # documents named in one tie message


class TopicState:
    """The lines of one topic seen so far, as one flat row-major list, plus a compact line map.

    A split line is appended with ``flat.extend(parts)``: the per-line list is freed at
    once (its memory reused while still in the caches) and the columns are strided
    slices ``flat[i::ncol]`` when the topic ends, ~6x cheaper than ``zip(*rows)``.
    """

    __slots__ = ("topic", "flat", "ncol", "anchor_idx", "anchor_line")

    def __init__(self, topic: str, first_line: int, ncol: int) -> None:
        self.topic = topic
        self.ncol = ncol
        self.flat: list[str] = []
        # Row k sits on line anchor_line[i] + (k - anchor_idx[i]) for the last anchor i with
        # anchor_idx[i] <= k: one anchor per contiguous stretch of the topic's lines.
        self.anchor_idx: list[int] = [0]
        self.anchor_line: list[int] = [first_line]

    def __len__(self) -> int:
        return len(self.flat) // self.ncol

    def anchor(self, next_line: int) -> None:
        """The next row of this topic will be on ``next_line``."""
        idx = len(self)
        if self.anchor_idx[-1] == idx:
            self.anchor_line[-1] = next_line
        else:
            self.anchor_idx.append(idx)
            self.anchor_line.append(next_line)

    def line_numbers(self) -> list[int]:
        n = len(self)
        out: list[int] = []
        bounds = self.anchor_idx[1:] + [n]
        for start, stop, line in zip(self.anchor_idx, bounds, self.anchor_line):
            if stop > start:
                out.extend(range(line, line + stop - start))
        return out


class FlatRows(Sequence[list[str]]):
    """Row k of a flat row-major list, built on demand (findings need a whole row for the column)."""

    __slots__ = ("_flat", "_ncol")

    def __init__(self, flat: list[str], ncol: int) -> None:
        self._flat = flat
        self._ncol = ncol

    def __len__(self) -> int:
        return len(self._flat) // self._ncol

    def __getitem__(self, k: int) -> list[str]:  # type: ignore[override]
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self._flat[k * self._ncol : (k + 1) * self._ncol]


@dataclass
class RankingContext:
    """What the per-topic rules need to know about the task and the run so far."""

    out: Collector
    layout: Layout
    max_depth: int
    touche: bool  # the official scorer sorts by rank: rank/score disagreement is an error
    patterns: dict[str, re.Pattern[str] | None]
    max_answer_chars: int | None = None
    answer_ids: object | None = None  # IdSet of answer post ids (Task 1, with --input)
    formula_ids: object | None = None  # IdSet of formula ids (Task 2, with --input)
    on_topic: Callable[[str, list[list[str]], list[float | None], list[int]], None] | None = None
    tags: dict[str, int] = field(default_factory=dict)  # run tag -> first line
    q0_other: int = 0
    q0_first: int | None = None
    depths: list[int] = field(default_factory=list)
    total_rows: int = 0


def _f32(a: np.ndarray) -> np.ndarray:
    import numpy as np

    with np.errstate(over="ignore"):
        return a.astype(np.float32)


def finish_topic(ctx: RankingContext, st: TopicState) -> None:
    """Run every per-topic rule on a complete topic."""
    flat, ncol = st.flat, st.ncol
    n = len(flat) // ncol
    if n == 0:
        return
    rows = FlatRows(flat, ncol)
    ctx.depths.append(n)
    ctx.total_rows += n
    out = ctx.out
    lay = ctx.layout
    lines = st.line_numbers()
    cols = [flat[i::ncol] for i in range(ncol)]
    topic = st.topic

    if lay.sep is not None:  # tab separated: an empty field is a column fewer for TIRA and trec_eval
        for i, col in enumerate(cols):
            if i != lay.answer and "" in col:
                k = col.index("")
                out.add(
                    Severity.ERROR,
                    "RUN-EMPTY-FIELD",
                    f"topic {topic}: column {i + 1} ({lay.columns[i]}) is empty",
                    hint="two tabs in a row or a tab at the end of the line: whitespace-splitting tools "
                    "see a column fewer",
                    line=lines[k],
                    column=column_of(rows[k], i),
                )
    docs: Sequence[str] | None = cols[lay.doc] if lay.doc is not None else None
    if docs is not None:
        what = "formula id" if lay.post is not None else ("post id" if lay.name.startswith("arqmath") else "docno")
        check_ids(out, "RUN-DOC-ID", what, ctx.patterns.get("formula" if lay.post is not None else "document"),
                  docs, lines, lay.doc, rows)
        has_dups = len(set(docs)) != n
        if has_dups:
            _duplicates(out, topic, docs, lines, rows, lay.doc, what)
    if lay.post is not None:
        posts = cols[lay.post]
        check_ids(out, "RUN-POST-ID", "post id", ctx.patterns.get("document"), posts, lines, lay.post, rows)
        if len(set(posts)) != n:
            _tira_post_duplicates(out, topic, posts, lines)
    if lay.q0 is not None:
        q0s = cols[lay.q0]
        ok = q0s.count("Q0")
        if ok != n:
            ctx.q0_other += n - ok
            if ctx.q0_first is None:
                ctx.q0_first = next(lines[k] for k, v in enumerate(q0s) if v != "Q0")
    _tags(ctx, cols[lay.tag], lines, rows)

    scores, clean = parse_scores(out, cols[lay.score], lines, lay.score, rows)
    rank_col = cols[lay.rank]
    if rank_col == rank_strings(n):
        ranks: list[int | None] = list(range(1, n + 1))
        in_file_order = True
    else:
        ranks = parse_ranks(out, rank_col, lines, lay.rank, rows)
        in_file_order = _rank_rules(ctx, topic, ranks, lines)

    if lay.answer is not None:
        _answers(ctx, topic, rows, lines)
    elif n > ctx.max_depth:
        out.add(
            Severity.ERROR,
            "RUN-DEPTH",
            f"topic {topic} has {n:,} results; the task evaluates at most {ctx.max_depth:,}",
            hint=f"keep the top {ctx.max_depth:,} per topic (sharedtask validate --fix does)",
            line=lines[ctx.max_depth],
        )
    if clean and in_file_order and scores == sorted(scores, reverse=True):  # type: ignore[type-var]
        # The common case: ranks 1..n in file order, scores non-increasing. Ties are then
        # runs of neighbours, found vectorized (float64 and float32 at once).
        if docs is not None:
            _ties_sorted(ctx, topic, docs, ranks, scores, lines, has_dups)  # type: ignore[arg-type]
    else:
        _order(ctx, topic, ranks, scores, lines, in_file_order)
        if docs is not None:
            _ties(ctx, topic, docs, ranks, scores, lines, clean)
    if ctx.answer_ids is not None and docs is not None:
        _in_collection(out, "RUN-NOT-ANSWER", ctx.answer_ids, docs, lines,
                       "post {v} is not an answer in the collection (Posts.xml)",
                       "Task 1 retrieves answers (PostTypeId 2): questions and unknown ids are never relevant")
    if ctx.formula_ids is not None and docs is not None:
        _in_collection(out, "RUN-UNKNOWN-FORMULA", ctx.formula_ids, docs, lines,
                       "formula id {v} is not in the formula index",
                       "the official evaluation cannot map it to a visual id and skips it")
    if ctx.on_topic is not None:
        ctx.on_topic(topic, list(rows), scores, lines)


# ------------------------------------------------------------------------- rules


def _duplicates(out: Collector, topic: str, docs: Sequence[str], lines: list[int], rows: Sequence[Sequence[str]],
                index: int, what: str) -> None:
    first: dict[str, int] = {}
    for k, d in enumerate(docs):
        if d not in first:
            first[d] = k
            continue
        out.report("RUN-DUPLICATE-DOC", lambda: f"{what} {d} appears again for topic {topic} (first on line "
                   f"{lines[first[d]]})", lines[k], column_of(rows[k], index))


def _tira_post_duplicates(out: Collector, topic: str, posts: Sequence[str], lines: list[int]) -> None:
    counts = Counter(posts)
    repeated = sum(c - 1 for c in counts.values() if c > 1)
    k = next(k for k, p in enumerate(posts) if counts[p] > 1 and posts.index(p) != k)
    out.add(
        Severity.WARNING,
        "RUN-TIRA-DUPLICATE-POST",
        f"topic {topic}: {repeated:,} formula(s) come from a post already listed for this topic",
        hint="legal for ARQMath Task 2, but TIRA's generic run.txt check reads column 3 as the docno and "
        "rejects repeated ones: submit outside TIRA's run check or keep one formula per post",
        line=lines[k],
    )


def _tags(ctx: RankingContext, tags: Sequence[str], lines: list[int], rows: Sequence[Sequence[str]]) -> None:
    known = ctx.tags
    if len(known) == 1:
        (only,) = known
        if tags.count(only) == len(tags):
            return
    for k, t in enumerate(tags):
        if t in known:
            continue
        known[t] = lines[k]
        pattern = ctx.patterns.get("tag")
        if pattern is not None and pattern.fullmatch(t) is None:
            ctx.out.add(
                Severity.WARNING,
                "RUN-TAG",
                f"run tag {t!r} does not match {pattern.pattern!r}",
                hint="use a short tag of letters, digits and _ . + -",
                line=lines[k],
                column=column_of(rows[k], ctx.layout.tag),
            )


def _rank_rules(ctx: RankingContext, topic: str, ranks: list[int | None], lines: list[int]) -> bool:
    """Rank start, gaps, duplicates, file order. Returns whether ranks follow the file order."""
    if None not in ranks:
        return _whole_rank_rules(ctx, topic, ranks, lines)  # type: ignore[arg-type]
    return _rank_rules_loop(ctx, topic, ranks, lines)


def _rank_rules_loop(ctx: RankingContext, topic: str, ranks: list[int | None], lines: list[int]) -> bool:
    """:func:`_rank_rules` value by value: unreadable ranks, repeated ranks, gaps."""
    out = ctx.out
    valid = [(r, k) for k, r in enumerate(ranks) if r is not None]
    if not valid:
        return False
    lowest = min(valid)
    if lowest[0] != 1:
        out.add(
            Severity.WARNING,
            "RUN-RANK-START",
            f"topic {topic}: ranks start at {lowest[0]}, not 1",
            hint="trec_eval ignores ranks, but the Touché scorer and readers expect 1, 2, 3, ...",
            line=lines[lowest[1]],
        )
    counts = Counter(r for r, _ in valid)
    dup_sev = Severity.ERROR if ctx.touche else Severity.WARNING
    dup_hint = "give every line of a topic its own rank: the Touché scorer sorts by rank, so their order is undefined" \
        if ctx.touche else None
    seen: set[int] = set()
    for r, k in valid:
        if counts[r] > 1 and r in seen:
            out.report("RUN-RANK-DUPLICATE", f"topic {topic}: rank {r} is used {counts[r]} times", lines[k],
                       hint=dup_hint, severity=dup_sev)
            counts[r] = 1  # report each repeated rank once
        seen.add(r)
    distinct = sorted(counts)
    for a, b in zip(distinct, distinct[1:]):
        if b != a + 1:
            k = next(k for r, k in valid if r == b)
            out.add(
                Severity.WARNING,
                "RUN-RANK-GAP",
                f"topic {topic}: ranks jump from {a} to {b}",
                hint="number the lines of each topic 1, 2, 3, ... without gaps",
                line=lines[k],
            )
            break
    in_order = all(x[0] <= y[0] for x, y in zip(valid, valid[1:]))
    if not in_order:
        k = next(y[1] for x, y in zip(valid, valid[1:]) if x[0] > y[0])
        out.add(
            Severity.WARNING,
            "RUN-RANK-ORDER",
            f"topic {topic}: lines are not in rank order (rank {ranks[k]} follows a higher rank)",
            hint="write each topic's lines from rank 1 down",
            line=lines[k],
        )
    return in_order


def _whole_rank_rules(ctx: RankingContext, topic: str, ranks: list[int], lines: list[int]) -> bool:
    """:func:`_rank_rules` for a column with every rank readable, in whole-list operations; the
    rare topics with a repeated rank or a gap go through the general loop (same findings)."""
    distinct = set(ranks)
    if len(distinct) != len(ranks) or max(distinct) - min(distinct) != len(distinct) - 1:
        return _rank_rules_loop(ctx, topic, ranks, lines)  # type: ignore[arg-type]
    lowest = min(distinct)
    if lowest != 1:
        ctx.out.add(
            Severity.WARNING,
            "RUN-RANK-START",
            f"topic {topic}: ranks start at {lowest}, not 1",
            hint="trec_eval ignores ranks, but the Touché scorer and readers expect 1, 2, 3, ...",
            line=lines[ranks.index(lowest)],
        )
    following = islice(ranks, 1, None)
    if all(map(operator.le, ranks, following)):
        return True
    k = next(compress(count(1), map(operator.gt, ranks, islice(ranks, 1, None))))
    ctx.out.add(
        Severity.WARNING,
        "RUN-RANK-ORDER",
        f"topic {topic}: lines are not in rank order (rank {ranks[k]} follows a higher rank)",
        hint="write each topic's lines from rank 1 down",
        line=lines[k],
    )
    return False


def _order(ctx: RankingContext, topic: str, ranks: list[int | None], scores: list[float | None],
           lines: list[int], in_file_order: bool) -> None:
    """Scores must not increase along the rank order (and along the file order)."""
    out = ctx.out
    if None not in ranks and None not in scores:
        both: list[int] = list(range(len(ranks)))
    else:
        both = [k for k in range(len(ranks)) if ranks[k] is not None and scores[k] is not None]
    if len(both) < 2:
        return
    if in_file_order and len(both) == len(ranks):
        seq = both
        plain = scores  # type: ignore[assignment]
        if plain == sorted(plain, reverse=True):  # type: ignore[type-var]
            return
    else:
        seq = sorted(both, key=ranks.__getitem__)  # stable: equal ranks keep file order
    ranked = list(operator.itemgetter(*seq)(scores))
    rises = list(compress(range(len(seq) - 1), map(operator.gt, islice(ranked, 1, None), ranked)))
    bad = [(seq[i], seq[i + 1]) for i in rises]
    if bad:
        a, b = bad[0]
        out.report(
            "RUN-RANK-SCORE",
            f"topic {topic}: rank {ranks[b]} (line {lines[b]}, score {scores[b]!r}) scores higher than "
            f"rank {ranks[a]} (line {lines[a]}, score {scores[a]!r}); {len(bad):,} such inversion(s) in this topic",
            lines[b],
            # the catalogue's hint is trec_eval's side; Touché's scorer sorts by rank instead
            hint="the official Touché scorer sorts by rank while trec_eval sorts by score, so the two evaluate "
            "different rankings: sort each topic by score descending and renumber ranks (--fix)" if ctx.touche else None,
            severity=Severity.ERROR if ctx.touche else Severity.WARNING,
        )
    if not in_file_order:
        file_scores = [scores[k] for k in both]
        if file_scores != sorted(file_scores, reverse=True):  # type: ignore[type-var]
            out.add(
                Severity.WARNING,
                "RUN-SCORE-ORDER",
                f"topic {topic}: lines are not sorted by score descending",
                hint="trec_eval re-sorts by score, but people and simple scripts read the file top-down",
                line=lines[both[0]],
            )


def _runs(eq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and (inclusive) end positions of runs of equal neighbours; eq[i] = v[i] == v[i+1]."""
    import numpy as np

    d = np.diff(np.concatenate(([0], eq.view(np.int8), [0])))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def _neighbours_distinct_f32(scores: list[float]) -> bool:
    """Whether no two neighbouring scores are equal as 32-bit floats (so none as doubles either).

    Why: a run without ties then never imports numpy (~0.08 s of a small run's start-up).
    ``array("f")`` converts with C's ``(float)`` cast, as numpy's ``astype(float32)`` does
    (round to nearest, inf beyond the float range); the loop stops at the first tie.
    """
    f32 = array("f", scores)
    return not any(map(operator.eq, f32, islice(f32, 1, None)))


def _ties_sorted(ctx: RankingContext, topic: str, docs: Sequence[str], ranks: list[int | None],
                 scores: list[float], lines: list[int], has_dups: bool) -> None:
    if _neighbours_distinct_f32(scores):
        return  # what the numpy path below finds too (eq implies eq_b), without its import
    # numpy is imported here, not at module load: the sandbox runner and the CLI import the
    # validator, and numpy's import costs ~0.1 s CPU. Per topic it is ~5x faster than pure Python.
    import numpy as np

    out = ctx.out
    a = np.asarray(scores, dtype=np.float64)
    b = _f32(a)
    eq = a[1:] == a[:-1]
    eq_b = b[1:] == b[:-1]
    if not eq_b.any():
        return  # eq implies eq_b
    if has_dups:  # duplicates are reported already; the general path leaves them out
        _ties(ctx, topic, docs, ranks, scores, lines, True)  # type: ignore[arg-type]
        return
    if eq.any():
        starts, ends = _runs(eq)
        for g, (s0, e0) in enumerate(zip(starts.tolist(), ends.tolist())):
            if not out.wants("RUN-TIE"):
                out.count_only(Severity.WARNING, "RUN-TIE", len(starts) - g)
                break
            _tie_finding(ctx, topic, docs, ranks, scores, lines, list(range(s0, e0 + 1)))  # type: ignore[arg-type]
    only32 = eq_b & ~eq
    if only32.any():
        starts, ends = _runs(eq_b)
        has32 = np.add.reduceat(only32.astype(np.int64), starts) > 0
        for s0, e0 in zip(starts[has32].tolist(), ends[has32].tolist()):
            if not out.wants("RUN-FLOAT32-TIE"):
                out.count_only(Severity.WARNING, "RUN-FLOAT32-TIE")
                continue
            _float32_finding(ctx, topic, docs, scores, lines, list(range(s0, e0 + 1)))  # type: ignore[arg-type]


def _tie_finding(ctx: RankingContext, topic: str, docs: Sequence[str], ranks: list[int | None],
                 scores: list[float | None], lines: list[int], members: list[int]) -> None:
    ctx.out.add(
        Severity.WARNING,
        "RUN-TIE",
        f"topic {topic}: {len(members)} documents share score {scores[members[0]]!r} "
        f"(lines {_list(lines[k] for k in members)}); {_tie_story(docs, ranks, members, ctx.touche)}",
        hint="break ties yourself (e.g. by a second feature) or run --fix, which orders them as "
        "trec_eval does and makes the scores distinct",
        line=lines[members[0]],
    )


def _float32_finding(ctx: RankingContext, topic: str, docs: Sequence[str], scores: list[float | None],
                     lines: list[int], members: list[int]) -> None:
    shown = ", ".join(f"{docs[k]} ({scores[k]!r})" for k in members[:_SHOW])
    order = sorted(members, key=lambda k: docs[k], reverse=True)
    ctx.out.add(
        Severity.WARNING,
        "RUN-FLOAT32-TIE",
        f"topic {topic}: scores differ but are equal as 32-bit floats: {shown}"
        f"{' ...' if len(members) > _SHOW else ''}; pytrec_eval (trec_eval 9.0.8) ties them and "
        f"orders them by docno descending: {_list(docs[k] for k in order)}",
        hint="keep scores at most 7 significant digits apart, or run --fix",
        line=lines[members[0]],
    )


def _ties(ctx: RankingContext, topic: str, docs: Sequence[str], ranks: list[int | None],
          scores: list[float | None], lines: list[int], clean: bool) -> None:
    out = ctx.out
    idx = range(len(scores)) if clean else [k for k, s in enumerate(scores) if s is not None]
    if len(set(docs)) != len(docs):  # later duplicates are reported already: leave them out
        first: set[str] = set()
        kept = []
        for k in idx:
            if docs[k] not in first:
                first.add(docs[k])
                kept.append(k)
        idx = kept
    vals = scores if len(idx) == len(scores) else [scores[k] for k in idx]
    distinct = set(vals)
    if len(distinct) != len(vals):
        repeated = {v for v, c in Counter(vals).items() if c > 1}
        groups: dict[float, list[int]] = {}
        if out.wants("RUN-TIE"):
            for k in compress(idx, map(repeated.__contains__, vals)):  # only the tied ones, in order
                groups.setdefault(scores[k], []).append(k)  # type: ignore[arg-type]
        for g, members in enumerate(groups.values()):
            if not out.wants("RUN-TIE"):
                break
            _tie_finding(ctx, topic, docs, ranks, scores, lines, members)
        else:
            g = len(groups)
        if len(repeated) > g:  # one finding per tied value; past the cap they are only counted
            out.count_only(Severity.WARNING, "RUN-TIE", len(repeated) - g)
    # pytrec_eval-terrier 0.5.11 (trec_eval 9.0.8) keeps scores as C float: docs/evaluation.md.
    try:
        f32 = array("f", distinct)  # type: ignore[arg-type]
    except (OverflowError, TypeError):
        return
    if len(set(f32)) == len(distinct):
        return
    by32: dict[float, list[int]] = {}
    for k, v in zip(idx, array("f", vals)):
        by32.setdefault(v, []).append(k)
    for members in by32.values():
        if len(members) < 2 or len({scores[k] for k in members}) < 2:
            continue
        if not out.wants("RUN-FLOAT32-TIE"):
            out.count_only(Severity.WARNING, "RUN-FLOAT32-TIE")
            continue
        _float32_finding(ctx, topic, docs, scores, lines, members)


def _tie_story(docs: Sequence[str], ranks: list[int | None], members: list[int], touche: bool) -> str:
    trec = sorted(members, key=lambda k: docs[k], reverse=True)  # strcmp order = code point order of UTF-8
    story = f"trec_eval orders them by docno descending: {_list(docs[k] for k in trec)}"
    if all(ranks[k] is not None for k in members):
        by_rank = sorted(members, key=lambda k: (ranks[k], k))
        if by_rank == trec:
            return story + " (the same order as your ranks)"
        story += f", but your ranks say {_list(docs[k] for k in by_rank)}"
        if touche:
            story += " (the Touché scorer follows your ranks)"
    return story


def _list(items: object, limit: int = _SHOW) -> str:
    values = [str(v) for v in items]  # type: ignore[attr-defined]
    shown = ", ".join(values[:limit])
    return shown + (f", ... ({len(values) - limit} more)" if len(values) > limit else "")


def _answers(ctx: RankingContext, topic: str, rows: Sequence[Sequence[str]], lines: list[int]) -> None:
    """ARQMath-3 Task 3 (docs/formats.md): one answer, <= 1,200 chars, rank 1, $ balance."""
    out = ctx.out
    lay = ctx.layout
    if len(rows) > 1:
        out.add(
            Severity.ERROR,
            "RUN-ANSWER-COUNT",
            f"topic {topic} has {len(rows)} answers; Task 3 takes exactly one per topic",
            hint="keep only your best answer for each topic",
            line=lines[1],
        )
    row = rows[0]
    line = lines[0]
    if row[lay.rank] != "1":
        out.add(Severity.WARNING, "RUN-ANSWER-RANK", f"topic {topic}: the answer has rank {row[lay.rank]!r}",
                hint="Task 3 answers have rank 1", line=line, column=column_of(row, lay.rank))
    answer = row[lay.answer]  # type: ignore[index]
    column = column_of(row, lay.answer)  # type: ignore[arg-type]
    if not answer.strip():
        out.add(Severity.ERROR, "RUN-ANSWER-EMPTY", f"topic {topic}: the answer is empty",
                hint="write the answer text in the last column", line=line, column=column)
        return
    limit = ctx.max_answer_chars
    if limit is not None and len(answer) > limit:
        out.add(
            Severity.ERROR,
            "RUN-ANSWER-LENGTH",
            f"topic {topic}: the answer has {len(answer):,} characters; at most {limit:,} are allowed",
            hint="the limit counts Unicode characters: shorten the answer",
            line=line,
            column=column,
        )
    dollars = len(_DOLLAR.findall(answer))
    if dollars % 2:
        out.add(
            Severity.WARNING,
            "RUN-ANSWER-DOLLAR",
            f"topic {topic}: the answer has an odd number ({dollars}) of unescaped $",
            hint="an unbalanced $ breaks the LaTeX rendering assessors see: close the formula or write \\$",
            line=line,
            column=column,
        )


def _in_collection(out: Collector, code: str, ids: object, values: Sequence[str], lines: list[int],
                   message: str, hint: str) -> None:
    numbers = [int(v) if v.isascii() and v.isdigit() else -1 for v in values]
    missing = ids.missing(numbers)  # type: ignore[attr-defined]
    for k in missing:
        if numbers[k] < 0:
            continue  # already reported by the id pattern rule
        out.report(code, lambda: message.format(v=values[k]), lines[k], hint=hint)
