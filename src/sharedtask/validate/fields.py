"""The per-field rules of a run (ids, ranks, scores); the layouts come from sharedtask.formats.layouts.

The hot loop only splits lines and groups them by topic; these functions run on
the columns of a whole topic at once (C-level list/str operations) and fall back
to per-value checks only when the quick test fails.

Sources: docs/formats.md (layouts, TIRA's check), docs/evaluation.md
(how trec_eval reads scores: C ``atof``, so ``1_000`` reads as 1 and ``١`` as 0).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from functools import partial
from itertools import compress, repeat

from sharedtask.formats.layouts import Layout
from sharedtask.validate.model import Collector


def column_of(parts: Sequence[str], index: int) -> int:
    """1-based column of field ``index``, assuming one separator character between fields."""
    return 1 + sum(len(p) + 1 for p in parts[:index])


# ----------------------------------------------------------------------------- ids


def bulk_fullmatch(pattern: re.Pattern[str], values: list[str] | tuple[str, ...]) -> bool:
    """True iff every value fully matches ``pattern``, checked in one regex pass where possible.

    Values never contain a newline here (they come from split lines). When the pattern
    provably cannot match a newline nor look around, ``(?:(?:p)\\n)*+`` over the values
    joined by newlines can match only one value per repetition, so a full match proves
    that every value matches (possessive: no backtracking state is kept per value, ~2x
    faster than a MULTILINE ``findall``). Other patterns are matched value by value
    (a MULTILINE count over the joined values is fooled by lookarounds: ``a(?=\\n)``).
    Patterns that are only ASCII character classes (the task id patterns) skip the regex
    engine altogether: see ``_class_checker``.
    """
    if not values:
        return True
    verdict = joined_fullmatch(pattern, "\n".join(values) + "\n", len(values))
    return all(map(pattern.fullmatch, values)) if verdict is None else verdict


def joined_fullmatch(pattern: re.Pattern[str], text: str, count: int) -> bool | None:
    """Whether each of the ``count`` values in ``text`` (each followed by a newline) fully
    matches ``pattern``; None when only a match value by value can tell (see bulk_fullmatch).

    The validator's columnar fast path (columnar.py) builds such a text for a whole block.
    """
    by_class = _class_checker(pattern)
    if by_class is not None:
        return by_class(text, count)
    possessive = _possessive(pattern)
    if possessive is not None:
        return possessive.fullmatch(text) is not None
    return None


_POSSESSIVE_CACHE: dict[tuple[str, int], re.Pattern[str] | None] = {}


def _possessive(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """``(?:(?:p)\\n)*+`` if ``pattern`` can never match a newline, else None."""
    key = (pattern.pattern, pattern.flags)
    if key not in _POSSESSIVE_CACHE:
        got = None
        if not _may_match_newline(pattern):
            try:
                got = re.compile(f"(?:(?:{pattern.pattern})\n)*+", pattern.flags)
            except re.error:  # e.g. global inline flags, which must stay at the start
                got = None
        _POSSESSIVE_CACHE[key] = got
    return _POSSESSIVE_CACHE[key]


# ------------------------------------------------------------ class-only patterns

Checker = Callable[[str, int], bool]  # (values joined and ended by newlines, their count)
_CLASS_CACHE: dict[tuple[str, int], Checker | None] = {}
_BAD = 0x00  # byte for characters no position accepts
_NL = 0x0A  # the separator between joined values keeps its own byte


def _class_checker(pattern: re.Pattern[str]) -> Checker | None:
    """A regex-free test for fixed-length patterns made of ASCII character classes.

    E.g. ``S[0-9a-f]{8}-A[0-9a-f]{8}``: every element is a literal or a class repeated a
    fixed number of times, and two classes are equal or disjoint. Each character is
    translated to the byte of its class (one ``bytes.translate``) and the values joined
    by newlines must then equal the per-position template repeated; the newline keeps
    its own byte, so a value of another length cannot line up. ~30 ms instead of the
    regex's ~130 ms for 1M args.me ids. Other patterns return None (regex engine);
    tests/test_validate_bulk.py checks both agree with per-value fullmatch.
    """
    key = (pattern.pattern, pattern.flags)
    if key not in _CLASS_CACHE:
        _CLASS_CACHE[key] = _build_class_checker(pattern)
    return _CLASS_CACHE[key]


def _build_class_checker(pattern: re.Pattern[str]) -> Checker | None:
    seq = class_sequence(pattern)
    if seq is None or not all(lo == hi for _, lo, hi in seq[1]):
        return None  # e.g. [0-9]+: sre's single-class repeat is as fast as a translate here
    trans, items = seq
    template = bytes(byte for byte, count, _ in items for _ in range(count)) + b"\n"

    def check(text: str, count: int) -> bool:
        if not text.isascii():
            return False  # a non-ASCII character never matches: the caller finds which
        return text.encode("ascii").translate(trans) == template * count

    return check


_SEQUENCE_CACHE: dict[tuple[str, int], tuple[bytes, list[tuple[int, int, int]]] | None] = {}


def class_sequence(pattern: re.Pattern[str]) -> tuple[bytes, list[tuple[int, int, int]]] | None:
    """A pattern made only of ASCII classes, each repeated lo..hi times, as a translate table
    (each character to the byte of its class, 0 for none, the newline to itself) and the
    (class byte, lo, hi) of each element; None for other patterns or overlapping classes."""
    key = (pattern.pattern, pattern.flags)
    if key not in _SEQUENCE_CACHE:
        got = None
        items = None if pattern.flags & (re.IGNORECASE | re.LOCALE) else _class_items(pattern)
        if items is not None:
            classes = sorted({chars for chars, _, _ in items}, key=sorted)
            if not any(a & b for i, a in enumerate(classes) for b in classes[i + 1 :]):
                table = bytearray([_BAD]) * 256
                table[_NL] = _NL
                for k, chars in enumerate(classes):
                    for c in chars:
                        table[c] = 0x80 + k
                lookup = {chars: 0x80 + k for k, chars in enumerate(classes)}
                got = (bytes(table), [(lookup[chars], lo, hi) for chars, lo, hi in items])
        _SEQUENCE_CACHE[key] = got
    return _SEQUENCE_CACHE[key]


def _class_items(pattern: re.Pattern[str]) -> list[tuple[frozenset[int], int, int]] | None:
    """(class, min, max) per element of the pattern, or None if it is not a plain class sequence."""
    tree = _parse_tree(pattern)
    if tree is None:
        return None
    ascii_only = bool(pattern.flags & re.ASCII)
    items: list[tuple[frozenset[int], int, int]] = []
    for op, arg in tree:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = arg  # type: ignore[misc]
            sub = list(sub)
            if len(sub) != 1:
                return None
            chars = _class_of(*sub[0], ascii_only=ascii_only)
            if chars is None:
                return None
            items.append((chars, int(lo), int(hi)))
        else:
            chars = _class_of(op, arg, ascii_only=ascii_only)
            if chars is None:
                return None
            items.append((chars, 1, 1))
    return items


def _class_of(op: object, arg: object, *, ascii_only: bool) -> frozenset[int] | None:
    """The ASCII code points one LITERAL or IN node accepts, or None if not supported."""
    name = str(op)
    if name == "LITERAL":
        members = {int(arg)}  # type: ignore[call-overload]
    elif name == "IN":
        members = set()
        for sub_op, sub_arg in arg:  # type: ignore[attr-defined]
            sub = str(sub_op)
            if sub == "LITERAL":
                members.add(int(sub_arg))
            elif sub == "RANGE":
                lo, hi = sub_arg
                members.update(range(lo, hi + 1))
            elif sub == "CATEGORY" and str(sub_arg) == "CATEGORY_DIGIT" and ascii_only:
                members.update(range(0x30, 0x3A))
            else:
                return None  # negation, Unicode categories, ...
    else:
        return None
    if not members or max(members) > 0x7F or _NL in members or _BAD in members:
        return None
    return frozenset(members)


# Character-set members that contain "\n" (re._parser category names).
_NEWLINE_CATEGORIES = {"CATEGORY_SPACE", "CATEGORY_NOT_DIGIT", "CATEGORY_NOT_WORD", "CATEGORY_LINEBREAK"}
_SAFE_CATEGORIES = {"CATEGORY_DIGIT", "CATEGORY_NOT_SPACE", "CATEGORY_WORD", "CATEGORY_NOT_LINEBREAK"}


def _may_match_newline(pattern: re.Pattern[str]) -> bool:
    """Conservative: False only if no part of ``pattern`` can consume a newline or look around.

    Walks the parse tree of Python's own regex parser; anything not understood here
    (lookarounds, backreferences, conditionals, an unknown node) counts as "may".
    """
    tree = _parse_tree(pattern)
    if tree is None:
        return True
    return _walk_may_match_newline(tree, bool(pattern.flags & re.DOTALL))


def _parse_tree(pattern: re.Pattern[str]) -> list[tuple[object, object]] | None:
    """The top-level nodes of Python's own regex parse of ``pattern``; None if that fails.

    ``re._parser`` is private (``sre_parse`` before 3.11): any surprise means "do not
    optimise", and both fast paths fall back to the regex engine.
    """
    try:
        from re import _parser

        return list(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # noqa: BLE001
        return None


def _walk_may_match_newline(nodes: list[tuple[object, object]], dotall: bool) -> bool:
    for op, arg in nodes:
        name = str(op)
        if name == "LITERAL":
            if arg == 10:
                return True
        elif name == "NOT_LITERAL":
            if arg != 10:
                return True
        elif name == "ANY":
            if dotall:
                return True
        elif name == "IN":
            if _set_may_contain_newline(arg):  # type: ignore[arg-type]
                return True
        elif name == "AT":
            continue  # zero-width anchors: never looser in the joined text than per value
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if _walk_may_match_newline(list(arg[2]), dotall):  # type: ignore[index]
                return True
        elif name == "ATOMIC_GROUP":
            if _walk_may_match_newline(list(arg), dotall):  # type: ignore[arg-type]
                return True
        elif name == "SUBPATTERN":
            _group, add, remove, sub = arg  # type: ignore[misc]
            inner = (dotall or bool(add & re.DOTALL)) and not bool(remove & re.DOTALL)
            if _walk_may_match_newline(list(sub), inner):
                return True
        elif name == "BRANCH":
            if any(_walk_may_match_newline(list(b), dotall) for b in arg[1]):  # type: ignore[index]
                return True
        else:
            return True
    return False


def _set_may_contain_newline(items: list[tuple[object, object]]) -> bool:
    negate = False
    contains = False
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            contains |= arg == 10
        elif name == "RANGE":
            lo, hi = arg  # type: ignore[misc]
            contains |= lo <= 10 <= hi
        elif name == "CATEGORY":
            if str(arg) in _NEWLINE_CATEGORIES:
                contains = True
            elif str(arg) not in _SAFE_CATEGORIES:
                return True
        else:
            return True
    return contains != negate


def check_ids(
    out: Collector,
    code: str,
    what: str,
    pattern: re.Pattern[str] | None,
    values: list[str] | tuple[str, ...],
    lines: list[int],
    index: int,
    rows: Sequence[Sequence[str]],
) -> None:
    """Error for each id not fully matching the task's pattern (the severity rule of docs/findings.md)."""
    if pattern is None or bulk_fullmatch(pattern, values):
        return
    for k, value in enumerate(values):
        if pattern.fullmatch(value) is None:
            out.report(code, lambda: f"{what} {value!r} does not match the task's pattern {pattern.pattern!r}",
                       lines[k], column_of(rows[k], index), hint=f"write {what}s exactly as the collection spells them")


# --------------------------------------------------------------------------- score

_PLAIN_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_SCIENTIFIC = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


def parse_scores(
    out: Collector,
    scores: list[str] | tuple[str, ...],
    lines: list[int],
    index: int,
    rows: Sequence[Sequence[str]],
) -> tuple[list[float | None], bool]:
    """Floats for a topic's score column; None where the score is unusable (reported).

    The flag says whether every score was read on the quick path (no None anywhere).

    Quick path: ``map(float)`` succeeds, no ``e``/``_``/non-ASCII anywhere and the sum
    is finite (float sum, else fsum). Otherwise every value is classified on its own.
    """
    try:
        values: list[float | None] = list(map(float, scores))
        joined = "".join(scores)
        if joined.isascii() and "e" not in joined and "E" not in joined and "_" not in joined:
            # A finite sum means every value is finite. The plain float sum takes ~4 us per
            # 1,000 scores against ~18 us for fsum; fsum (exact partials) decides only when the
            # plain sum overflows. (They could disagree only for sums within ~1e-13 of the
            # largest double, where both then still read the values with float().)
            total = sum(values)  # type: ignore[arg-type]
            if not math.isfinite(total):
                total = math.fsum(values)  # type: ignore[arg-type]
            if math.isfinite(total):
                return values, True
    except (ValueError, OverflowError):
        pass
    return _classify_scores(out, scores, lines, index, rows), False


_NONFINITE = frozenset({"nan", "inf", "infinity"})


def _classify_scores(
    out: Collector,
    scores: list[str] | tuple[str, ...],
    lines: list[int],
    index: int,
    rows: Sequence[Sequence[str]],
) -> list[float | None]:
    """The slow path of :func:`parse_scores`: each score put in its class by whole-column
    C-level passes (regex, set membership), findings reported per class with
    :meth:`Collector.report_each`, so a column of bad scores costs no Python call per value.

    Classes: plain decimal (a value; RUN-SCORE-RANGE when it overflows), scientific (a
    value and RUN-SCORE-SCIENTIFIC, or RANGE), nan/inf (RUN-SCORE-NONFINITE), read by
    Python's float but not by C's atof (``1_000``, non-ASCII digits: RUN-SCORE-FORMAT), and
    the rest (RUN-SCORE)."""
    n = len(scores)
    plain = list(map(_PLAIN_DECIMAL.fullmatch, scores))
    result: list[float | None] = [float(s) if m else None for s, m in zip(scores, plain)]
    by_code: dict[str, list[int]] = {}
    if not all(map(math.isfinite, filter(partial(operator.is_not, None), result))):
        overflow = [k for k, v in enumerate(result) if v is not None and not math.isfinite(v)]
        for k in overflow:
            result[k] = None
        by_code["RUN-SCORE-RANGE"] = overflow
    others = list(compress(range(n), map(operator.not_, plain)))
    if others:
        raws = [scores[k] for k in others]
        scientific = list(map(_SCIENTIFIC.fullmatch, raws))
        for k, raw in zip(compress(others, scientific), compress(raws, scientific)):
            value = float(raw)
            if math.isfinite(value):
                result[k] = value
                by_code.setdefault("RUN-SCORE-SCIENTIFIC", []).append(k)
            else:
                by_code.setdefault("RUN-SCORE-RANGE", []).append(k)
        rest = list(compress(others, map(operator.not_, scientific)))
        words = [scores[k] for k in rest]
        nonfinite = list(map(_NONFINITE.__contains__, map(operator.methodcaller("lstrip", "+-"), map(str.lower, words))))
        by_code.setdefault("RUN-SCORE-NONFINITE", []).extend(compress(rest, nonfinite))
        unclassed = list(compress(rest, map(operator.not_, nonfinite)))
        texts = [scores[k] for k in unclassed]
        # ASCII without "_" that is none of the classes above is no number for Python either;
        # the others (e.g. "1_000", non-ASCII digits) are tried one by one
        odd = list(map(operator.or_, map(operator.not_, map(str.isascii, texts)),
                       map(operator.contains, texts, repeat("_"))))
        by_code.setdefault("RUN-SCORE", []).extend(compress(unclassed, map(operator.not_, odd)))
        for k, raw in zip(compress(unclassed, odd), compress(texts, odd)):
            by_code.setdefault("RUN-SCORE-FORMAT" if _python_float(raw) else "RUN-SCORE", []).append(k)
    for positions in by_code.values():
        positions.sort()
    out.report_each({c: ks for c, ks in by_code.items() if ks},
                    lambda code, k: (_SCORE_MESSAGES[code].format(raw=scores[k]), lines[k], column_of(rows[k], index)))
    return result


_SCORE_MESSAGES = {
    "RUN-SCORE-RANGE": "score {raw!r} overflows a double",
    "RUN-SCORE-SCIENTIFIC": "score {raw!r} uses scientific notation",
    "RUN-SCORE-NONFINITE": "score {raw!r} is not a finite number",
    # e.g. "1_000" or non-ASCII digits: Python (TIRA) reads them, C atof (trec_eval) does not
    "RUN-SCORE-FORMAT": "score {raw!r} is read differently by TIRA (Python float) and trec_eval (C atof)",
    "RUN-SCORE": "score {raw!r} is not a number",
}


def _python_float(raw: str) -> bool:
    try:
        float(raw)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------- rank

_RANK_CACHE: list[str] = []


def rank_strings(n: int) -> list[str]:
    """["1", "2", ..., str(n)]: a topic whose rank column equals this needs no more checks."""
    if len(_RANK_CACHE) < n:
        _RANK_CACHE.extend(str(i) for i in range(len(_RANK_CACHE) + 1, n + 1))
    return _RANK_CACHE[:n]


def parse_ranks(
    out: Collector,
    ranks: list[str] | tuple[str, ...],
    lines: list[int],
    index: int,
    rows: Sequence[Sequence[str]],
) -> list[int | None]:
    """Ints for a rank column; None where TIRA's ``int()`` would fail (error).

    Non-canonical integers (``+1``, ``01``) are read alike by every tool: warning.
    """
    joined = "\t" + "\t".join(ranks)  # no field holds a tab: the split took them out
    if joined.isascii() and joined.replace("\t", "").isdigit() and "" not in ranks \
            and joined.count("\t0") == ranks.count("0"):  # no rank but "0" itself starts with 0
        return list(map(int, ranks))  # every rank canonical: one whole-column conversion
    result: list[int | None] = []
    for k, raw in enumerate(ranks):
        if raw.isascii() and raw.isdigit() and (raw == "0" or raw[0] != "0"):
            result.append(int(raw))
            continue
        try:
            value = int(raw)
        except ValueError:
            value = None
        column = column_of(rows[k], index)
        if value is None or not raw.isascii() or "_" in raw:
            code = "RUN-RANK"
            out.report(code, lambda: f"rank {raw!r} is not an integer", lines[k], column)
            result.append(None)
            continue
        if raw.lstrip("+-").isdigit() and not raw.startswith("-"):
            code = "RUN-RANK-FORMAT"
            out.report(code, lambda: f"rank {raw!r} is not written canonically", lines[k], column)
        result.append(value)
    return result
