"""The validator's fast path: a block of a run's lines parsed and checked on columns (numpy).

Why: the line engine (engine.py) costs about half a microsecond of Python per line, seven
times what a columnar CSV reader needs to parse the same run. Here a whole block (256 KB
or 1 MB of lines, fastpath.py) is parsed at once over its raw bytes, and the per-topic rules of
ranking.py are evaluated as array operations: every topic then either provably has no
finding but capped ties (the engine only books its figures) or is handed, as split lines,
to ``ranking.finish_topic`` itself. So every finding is still made by the line engine's
own code, with its exact line, column and message.

A block qualifies only when every line is plain: ASCII, no control byte, no DEL, exactly
``ncol`` non-empty fields separated by single tabs (TREC: tabs or spaces), not starting with
``#``. Then none of the byte-level rules of structure.py can fire and every line splits into
exactly these fields, as the line engine would split it. Any other block goes to the line
engine unchanged. Byte strings of up to eight bytes are read as one little-endian 64-bit
word (a strided view of the block); numbers are parsed with SWAR arithmetic on such words.

A topic is "plain" (no finding) when: ranks are exactly 1..n in file order, every score is
a decimal ``[-+]?digits[.digits]`` of at most 15 digits (read exactly: an integer below 2**53
divided by a power of ten <= 1e8 is correctly rounded, the same double as Python's
``float``; Clinger 1990, "How to read floating point numbers accurately"), scores do not
increase, Q0 is ``Q0``, the tag is the run's single tag, ids match the task's patterns and
are distinct within the topic (a 64-bit hash: a collision only sends the topic to the line
engine), and the topic is not deeper than the task allows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from sharedtask.formats.layouts import Layout
from sharedtask.validate.fields import class_sequence, joined_fullmatch

_U = np.uint64
#: MASKS[k]: the low k bytes of a word (k = 0..8).
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=_U)
_ZEROS = _U(0x3030303030303030)  # eight ASCII "0"
#: For k digits: how far to move them to the top of a word, and "0" bytes to fill the rest.
_SHIFT = np.array([8 * (8 - k) for k in range(9)], dtype=_U)
_FILL = np.array([int.from_bytes(b"0" * (8 - k), "little") for k in range(9)], dtype=_U)
_POW10 = 10.0 ** np.arange(9)
_POW10_INT = np.array([10**k for k in range(9)], dtype=_U)
_HASH = (_U(0x9E3779B97F4A7C15), _U(0xC2B2AE3D27D4EB4F), _U(0x165667B19E3779F9))


@dataclass
class TopicFacts:
    """What the engine needs to book a plain topic (or to know it is not plain)."""

    plain: bool  # no finding from the per-topic rules, ties aside
    ties: int  # groups of tied scores (RUN-TIE), as ranking._ties_sorted counts them
    float32_ties: int  # groups equal only as 32-bit floats (RUN-FLOAT32-TIE)


class _Words:
    """Little-endian 64-bit words starting at any byte of a block (zero-padded past its end)."""

    def __init__(self, padded: bytes, size: int) -> None:
        self.bytes = np.frombuffer(padded, dtype=np.uint8, count=size)
        base = np.frombuffer(padded, dtype=_U)
        # every word that starts inside the padded bytes: fields read at most 24 bytes past their start
        self.view = as_strided(base, shape=(len(padded) - 7,), strides=(1,), writeable=False)

    def at(self, pos: np.ndarray, length: np.ndarray | None = None) -> np.ndarray:
        """The word at each position, keeping only its first ``min(length, 8)`` bytes if given."""
        w = self.view[pos]
        if length is not None:
            w &= _MASKS[np.minimum(length, 8)]
        return w


def padding(size: int) -> bytes:
    """Zero bytes to append to ``size`` bytes of lines so that _Words can read past the end."""
    return bytes(32 + (-size) % 8)


def _parse8(w: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and validity of the first k (0..8) bytes of each word read as decimal digits.

    SWAR: the digits are moved to the top of the word and the rest filled with "0", then
    pairs, quads and the two halves are combined by multiplications (Lemire, "Faster
    integer parsing", 2018). Valid iff every byte is 0x30..0x39 (the bytes are ASCII).
    """
    aligned = ((w & _MASKS[k]) << _SHIFT[k]) | _FILL[k]  # numpy shifts by 64 bits to 0 (k = 0)
    v = aligned - _ZEROS
    ok = (((aligned + _U(0x4646464646464646)) | v) & _U(0x8080808080808080)) == 0
    v = v * _U(10) + (v >> _U(8))
    v = (((v & _U(0x000000FF000000FF)) * _U(100 + (1000000 << 32)))
         + (((v >> _U(16)) & _U(0x000000FF000000FF)) * _U(1 + (10000 << 32)))) >> _U(32)
    return v & _U(0xFFFFFFFF), ok


def _first_byte(w: np.ndarray, byte: int) -> np.ndarray:
    """Index (0..7) of the first occurrence of ``byte`` in each word, 8 where there is none."""
    x = w ^ _U(byte * 0x0101010101010101)
    t = (x - _U(0x0101010101010101)) & ~x & _U(0x8080808080808080)  # exact for the lowest zero byte
    low = t & (~t + _U(1))
    return np.where(t == 0, 8, np.bitwise_count(low - _U(1)) >> 3).astype(np.int64)


def _classes(lens: np.ndarray, words: list[np.ndarray], masks: list[np.ndarray], table: bytes,
             items: list[tuple[int, int, int]]) -> bool:
    """Every id (its first 24 bytes as three masked words) is the class sequence ``items``:
    fixed elements, then the last one lo..hi times (fields.class_sequence, whose ``table``
    maps each byte to its class byte and NUL to itself)."""
    fixed = bytes(byte for byte, count, _ in items[:-1] for _ in range(count))
    last, lo, hi = items[-1]
    ok = (lens >= len(fixed) + lo) & (lens <= len(fixed) + hi)
    for i, (w, mask) in enumerate(zip(words, masks)):
        want = fixed[8 * i : 8 * i + 8]
        want += bytes([last]) * (8 - len(want))  # past the fixed elements: the last one's class
        classes = np.frombuffer(w.tobytes().translate(table), dtype=_U)
        ok &= classes == (_U(int.from_bytes(want, "little")) & mask)
    return bool(ok.all())


def _fixed_length(seq: tuple[bytes, list[tuple[int, int, int]]] | None) -> int | None:
    """The one length a class sequence allows, if it allows one."""
    if seq is None or any(lo != hi for _, lo, hi in seq[1]):
        return None
    return sum(count for _, count, _ in seq[1])


class _Ranks:
    """The words and lengths of "1", "2", ... (a topic's rank column in the common case)."""

    words = np.zeros(1, dtype=_U)
    lengths = np.zeros(1, dtype=np.int64)

    @classmethod
    def upto(cls, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(cls.words) <= n:
            size = max(n + 1, 2 * len(cls.words), 1024)
            text = [str(i).encode() for i in range(size)]
            cls.words = np.array([int.from_bytes(t[:8], "little") for t in text], dtype=_U)
            cls.lengths = np.array([len(t) for t in text], dtype=np.int64)
        return cls.words, cls.lengths


class Block:
    """A block of plain lines, parsed into field positions, with per-topic verdicts."""

    def __init__(self, data: bytes, layout: Layout, words: _Words, ends: np.ndarray) -> None:
        self.data, self.layout, self.words = data, layout, words
        self.size = len(words.bytes)
        self.n = ends.shape[1]
        self.ends = ends  # (ncol, n): position of the delimiter after each field (int32)
        self._starts: dict[int, np.ndarray] = {}
        self._id_words: dict[int, list[np.ndarray]] = {}  # an id column's first 24 bytes, zero-padded
        self._lengths: dict[int, np.ndarray] = {}

    def start(self, col: int) -> np.ndarray:
        """Position of field ``col``'s first byte on every line."""
        got = self._starts.get(col)
        if got is None:
            if col:
                got = self.ends[col - 1] + 1
            else:
                got = np.empty(self.n, dtype=np.int32)
                got[0] = 0
                got[1:] = self.ends[-1][:-1] + 1
            self._starts[col] = got
        return got

    def length(self, col: int) -> np.ndarray:
        got = self._lengths.get(col)
        if got is None:
            got = self._lengths[col] = self.ends[col] - self.start(col)
        return got

    # ------------------------------------------------------------------ topics

    def segment(self) -> bool:
        """Split the lines into runs of one topic; False if a topic id is too long to compare here."""
        it = self.layout.topic
        lens = self.length(it)
        if int(lens.max()) > 16:
            return False
        pos = self.start(it)
        key = self.words.at(pos, lens)
        change = np.empty(self.n, dtype=bool)
        change[0] = True
        np.not_equal(key[1:], key[:-1], out=change[1:])
        change[1:] |= lens[1:] != lens[:-1]
        if int(lens.max()) > 8:
            tail = np.where(lens > 8, self.words.at(pos + lens - 8), _U(0))
            change[1:] |= tail[1:] != tail[:-1]
        self.seg_starts = np.flatnonzero(change)
        self.seg_ids = np.cumsum(change) - 1
        return True

    @property
    def n_segments(self) -> int:
        return len(self.seg_starts)

    def bounds(self, j: int) -> tuple[int, int]:
        """Line indexes [lo, hi) of topic segment j."""
        hi = int(self.seg_starts[j + 1]) if j + 1 < len(self.seg_starts) else self.n
        return int(self.seg_starts[j]), hi

    def topic(self, j: int) -> str:
        return self.field(int(self.seg_starts[j]), self.layout.topic)

    def span(self, lo: int, hi: int) -> int:
        """Bytes of lines [lo, hi)."""
        return int(self.ends[-1][hi - 1]) + 1 - self.byte_offset(lo)

    def byte_offset(self, line: int) -> int:
        return int(self.start(0)[line])

    def field(self, line: int, col: int) -> str:
        return self.data[int(self.start(col)[line]) : int(self.ends[col][line])].decode("ascii")

    def column(self, line: int, col: int) -> int:
        """1-based column of field ``col`` on ``line``."""
        return int(self.start(col)[line] - self.start(0)[line]) + 1

    def rows(self, lo: int, hi: int) -> list[str]:
        """The fields of lines [lo, hi) row-major, exactly as the line engine splits them."""
        text = self.data[self.byte_offset(lo) : int(self.ends[-1][hi - 1])].decode("ascii")
        if self.layout.sep is None:
            return text.split()
        return text.replace("\n", "\t").split("\t")

    # ---------------------------------------------------------- separators

    def separator_lines(self, lo: int, hi: int) -> tuple[int, int, int, int | None, int | None, int | None]:
        """(lines with tabs only, with spaces only, with both, and the first of each), lines [lo, hi)."""
        if hi <= lo:
            return 0, 0, 0, None, None, None
        if b"\t" not in self.data:  # every line has a separator: all of them spaces
            return 0, hi - lo, 0, None, lo, None
        if b" " not in self.data:
            return hi - lo, 0, 0, lo, None, None
        chars = self.words.bytes[self.ends[:-1, lo:hi]]
        tab = (chars == 9).any(axis=0)
        space = (chars == 32).any(axis=0)
        both = tab & space
        only_tab, only_space = tab & ~space, space & ~tab

        def first(mask: np.ndarray) -> int | None:
            k = int(np.argmax(mask))
            return lo + k if mask[k] else None

        return (int(only_tab.sum()), int(only_space.sum()), int(both.sum()), first(only_tab), first(only_space),
                first(both))

    # ------------------------------------------------------------ verdicts

    def check(self, patterns: dict[str, re.Pattern[str] | None], tag: str, max_depth: int) -> None:
        """Compute per topic segment whether it is plain (``tag``: the run's only tag), and its tie groups."""
        lay = self.layout
        self.tag = tag
        bad = np.zeros(self.n, dtype=bool)
        block_ok = True
        if lay.q0 is not None:
            bad |= ~self._equals(lay.q0, b"Q0")
        raw_tag = tag.encode("utf-8")
        if len(raw_tag) > 24:
            block_ok = False
        elif lay.tag != lay.ncol - 1 or not self._last_field_everywhere(raw_tag):
            bad |= ~self._equals(lay.tag, raw_tag)
        keys = []
        if lay.doc is not None:
            name = "formula" if lay.post is not None else "document"
            ok, key = self._ids(lay.doc, patterns.get(name), bad)
            block_ok &= ok
            keys.append(key)
        if lay.post is not None:
            ok, key = self._ids(lay.post, patterns.get("document"), bad)
            block_ok &= ok
            keys.append(key)
        self._ranks(bad)
        scores = self._scores(bad)
        seg = self.seg_ids
        same = seg[1:] == seg[:-1]
        bad[1:] |= same & (scores[1:] > scores[:-1])  # a score above the one before: rank/score rules
        nseg = self.n_segments
        seg_bad = np.logical_or.reduceat(bad, self.seg_starts) if self.n else np.zeros(0, dtype=bool)
        for key in keys:
            seg_bad |= self._has_duplicates(key, nseg)
        sizes = np.diff(np.append(self.seg_starts, self.n))
        seg_bad |= sizes > max_depth
        if not block_ok:
            seg_bad[:] = True
        self.plain = seg_bad
        self.ties, self.float32_ties = self._ties(scores, same, nseg)

    def facts(self, j: int) -> TopicFacts:
        return TopicFacts(not bool(self.plain[j]), int(self.ties[j]), int(self.float32_ties[j]))

    def _last_field_everywhere(self, const: bytes) -> bool:
        """Whether every line ends with a separator, ``const`` and its newline (one C search per
        separator: each line holds one newline, so each line is counted at most once)."""
        found = sum(self.data.count(sep + const + b"\n", 0, self.size) for sep in (b" ", b"\t"))
        return found == self.n

    def _equals(self, col: int, const: bytes) -> np.ndarray:
        """Per line: field ``col`` equals ``const`` (at most 24 bytes)."""
        lens = self.length(col)
        pos = self.start(col)
        ok = lens == len(const)
        for off in range(0, len(const), 8):
            piece = const[off : off + 8]
            want = _U(int.from_bytes(piece, "little"))
            ok &= (self.words.view[pos + off] & _MASKS[len(piece)]) == want
        return ok

    def _ids(self, col: int, pattern: re.Pattern[str] | None, bad: np.ndarray) -> tuple[bool, np.ndarray]:
        """Whether every id of column ``col`` matches ``pattern`` (None: no pattern) and a hash key per line.

        Ids longer than 24 bytes mark their line as not plain.
        """
        lens = self.length(col)
        pos = self.start(col)
        bad |= lens > 24
        seq = class_sequence(pattern) if pattern is not None else None
        fixed = _fixed_length(seq)
        if fixed is not None and bool((lens == fixed).all()):
            # every id has the pattern's one length: the same masks on every line
            masks = [_MASKS[min(max(fixed - 8 * i, 0), 8)] for i in range(3)]
        else:
            masks = [_MASKS[np.minimum(np.maximum(lens - 8 * i, 0), 8)] for i in range(3)]
        w = [self.words.view[pos + 8 * i] & masks[i] for i in range(3)]
        self._id_words[col] = w
        key = (w[0] * _HASH[0]) ^ (w[1] * _HASH[1]) ^ (w[2] * _HASH[2]) ^ lens.astype(_U)
        key ^= key >> _U(31)
        if pattern is None:
            return True, key
        if seq is not None and all(lo == hi for _, lo, hi in seq[1][:-1]):
            return _classes(lens, w, masks, *seq), key
        # Any other pattern: the ids joined by newlines, checked as fields.bulk_fullmatch does.
        # The bytes past an id are zero in its words (ASCII ids hold no NUL); the newline goes at its length.
        mat = np.zeros((self.n, 4), dtype=_U)
        for i in range(3):
            mat[:, i] = w[i]
        raw = mat.view(np.uint8).reshape(self.n, 32)
        raw[np.arange(self.n), np.minimum(lens, 31)] = 10
        text = raw[raw != 0].tobytes().decode("ascii")
        verdict = joined_fullmatch(pattern, text, self.n)
        if verdict is None:
            verdict = all(map(pattern.fullmatch, text.split("\n")[:-1]))
        return bool(verdict), key

    def _ranks(self, bad: np.ndarray) -> None:
        col = self.layout.rank
        lens = self.length(col)
        expected = np.arange(self.n, dtype=np.int32) - self.seg_starts[self.seg_ids] + 1
        words, lengths = _Ranks.upto(int(expected.max()))
        got = self.words.at(self.start(col), lens)
        bad |= (lens != lengths[expected]) | (got != words[expected])

    def _scores(self, bad: np.ndarray) -> np.ndarray:
        col = self.layout.score
        lens = self.length(col)
        pos = self.start(col)
        bad |= lens > 16
        first = self.words.view[pos]
        lead = first & _U(0xFF)
        neg = lead == 45
        sign = (neg | (lead == 43)).astype(np.intp)
        dot = _first_byte(first, 0x2E)  # a dot past the first 8 bytes: not plain (see below)
        has_dot = (dot < 8) & (dot < lens)
        dot = np.where(has_dot, dot, lens)
        n_int = dot - sign  # >= 0: a sign is never a dot
        n_frac = np.where(has_dot, lens - dot - 1, 0)
        bad |= (n_int > 7) | (n_frac > 8) | (n_int + n_frac == 0) | (~has_dot & (lens > 8))
        n_int = np.minimum(n_int, 7)
        n_frac = np.minimum(n_frac, 8)
        whole, ok_whole = _parse8(first >> (sign.astype(_U) << _U(3)), n_int)
        frac, ok_frac = _parse8(self.words.view[pos + dot + 1], n_frac)
        bad |= ~(ok_whole & ok_frac)
        # at most 7 + 8 digits: the integer is below 2**53, an exact double, and so is 10**n_frac
        values = (whole * _POW10_INT[n_frac] + frac).astype(np.float64)
        values /= _POW10[n_frac]
        np.negative(values, out=values, where=neg)  # -0.0 too, as float("-0")
        return values

    def _has_duplicates(self, key: np.ndarray, nseg: int) -> np.ndarray:
        """Per segment: two lines share a key (equal ids always do)."""
        tagged = (self.seg_ids.astype(_U) << _U(40)) | (key >> _U(24))
        tagged.sort()
        dup = tagged[1:] == tagged[:-1]
        out = np.zeros(nseg, dtype=bool)
        out[(tagged[1:][dup] >> _U(40)).astype(np.intp)] = True
        return out

    def _id_below(self, col: int) -> np.ndarray:
        """below[i]: line i+1's id sorts before line i's as strcmp does (ids <= 24 bytes, no NUL)."""
        w = [x.byteswap() for x in self._id_words[col]]  # big-endian: integer order = byte order
        a, b = [x[:-1] for x in w], [x[1:] for x in w]
        return (a[0] > b[0]) | ((a[0] == b[0]) & ((a[1] > b[1]) | ((a[1] == b[1]) & (a[2] > b[2]))))

    def _ties(self, scores: np.ndarray, same: np.ndarray, nseg: int) -> tuple[np.ndarray, np.ndarray]:
        """Tie groups per segment as ranking._ties_sorted counts them (scores non-increasing)."""
        ties = np.zeros(nseg, dtype=np.int64)
        f32 = np.zeros(nseg, dtype=np.int64)
        if self.n < 2:
            return ties, f32
        with np.errstate(over="ignore"):
            s32 = scores.astype(np.float32)
        eq32 = same & (s32[1:] == s32[:-1])  # eq32[i]: lines i and i+1 tie as floats
        if not eq32.any():
            return ties, f32
        eq = same & (scores[1:] == scores[:-1])
        start = eq.copy()
        start[1:] &= ~eq[:-1]
        pair_seg = self.seg_ids[1:]
        # Only groups that trec_eval orders otherwise than the ranks (ranking._reorders): ranks
        # are 1..n here, so a group counts when some neighbour's docno is not below the one before.
        below = self._id_below(self.layout.doc) if self.layout.doc is not None else np.zeros(self.n - 1, bool)
        bad_pair = eq & ~below
        if bad_pair.any():
            group = np.cumsum(start)
            _, first = np.unique(group[bad_pair], return_index=True)
            np.add.at(ties, pair_seg[bad_pair][first], 1)
        only32 = eq32 & ~eq
        if only32.any():
            start32 = eq32.copy()
            start32[1:] &= ~eq32[:-1]
            run = np.cumsum(start32)
            groups, first = np.unique(run[only32], return_index=True)
            np.add.at(f32, pair_seg[only32][first], 1)
        return ties, f32


def parse(padded: bytes, size: int, layout: Layout) -> Block | None:
    """The block as plain lines of ``layout``, or None when a line is not plain (or the layout
    has free text). ``padded`` holds ``size`` bytes of whole lines, each ending with a newline,
    then :func:`padding`."""
    if layout.answer is not None or not size or not padded.isascii() or b"\x7f" in padded or b"\r" in padded:
        return None
    words = _Words(padded, size)
    raw = words.bytes
    delims = np.flatnonzero(raw <= 32)
    ncol = layout.ncol
    if len(delims) % ncol:
        return None  # a line with another number of fields
    chars = raw[delims].reshape(-1, ncol)
    if not (chars[:, -1] == 10).all():
        return None
    inner = chars[:, :-1]
    seps_ok = (inner == 9) if layout.sep is not None else ((inner == 32) | (inner == 9))
    if not seps_ok.all():
        return None
    ends = np.ascontiguousarray(delims.reshape(-1, ncol).T, dtype=np.int32)
    del delims, chars, inner, seps_ok
    block = Block(padded, layout, words, ends)
    if min(int(block.length(c).min()) for c in range(ncol)) < 1 or (raw[block.start(0)] == 35).any():
        return None  # an empty field (two separators in a row, or one at the start or end), or a comment
    if not block.segment():
        return None
    return block
