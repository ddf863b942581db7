"""Which lines of a run go through the columnar fast path, and which through the line engine.

The engine's pass hands over the run's raw chunks (structure.Scanner.raw_chunks) in batches
of ``block_bytes``. A batch that columnar.parse accepts is booked topic by topic: a plain
topic only adds its figures, any other topic is split into lines and checked by
``ranking.finish_topic`` as before. A batch that is not accepted goes to the line engine
chunk by chunk, exactly as the scanner would have cut it. Findings therefore come out in
the same order as from the line engine alone: byte-level findings of a chunk before the
topic findings its lines cause, topics in file order.

The current topic may go on in the next batch: its lines are then carried over as raw bytes
(``tail``) and parsed again at the head of the next batch, so a topic is booked as a whole.
A topic longer than ``MAX_TAIL_BLOCKS`` batches is split into lines and continues in the line
engine's way (a topic that long is over every task's depth anyway).

Switch: ``SHAREDTASK_VALIDATE_ENGINE=lines`` forces the line engine everywhere, ``columns``
the fast path for every run it can take; the default takes it for runs of at least
``MIN_BYTES``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sharedtask.findings import Severity
from sharedtask.validate.ranking import finish_topic

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from sharedtask.formats.layouts import Layout
    from sharedtask.validate.columnar import Block
    from sharedtask.validate.model import Collector
    from sharedtask.validate.ranking import RankingContext, TopicState
    from sharedtask.validate.structure import Scanner

#: Runs at least this large (bytes on disk; a quarter of it for .gz) use the fast path by default:
#: below, the line engine is about as fast (no numpy import, no batch set-up) and its memory
#: is smaller than a batch's arrays.
MIN_BYTES = 8 << 20
#: A batch is this many of the scanner's chunks (256 KB), four times as many for runs of at
#: least BIG_BYTES: numpy's cost per call then weighs less (~15% of the fast path's time at
#: 10M lines), and memory stays bounded by the batch either way (a few MB).
BLOCK_CHUNKS = 4
BIG_BYTES = 64 << 20
MAX_TAIL_BLOCKS = 4
#: Batches after which a run whose bytes mostly went to the line engine anyway stops trying.
WARM_UP_BLOCKS = 16
ENV = "SHAREDTASK_VALIDATE_ENGINE"


class LinePass(Protocol):
    """What the fast path uses of the engine's pass (engine._Pass)."""

    ctx: RankingContext
    out: Collector
    layout: Layout
    scanner: Scanner
    cur: TopicState | None
    line_no: int

    def next_topic(self, topic: str, lineno: int, column: int) -> TopicState: ...

    def line_loop(self, chunks: Iterable[tuple[int, list[str | None]]]) -> None: ...

    def scan(self, chunks: list[bytes], first_line: int) -> Iterator[tuple[int, list[str | None]]]: ...

    def check_budget(self) -> None: ...


def _size(path: Path) -> int | None:
    """The run's size as read (a .gz counts four times its bytes), None if unknown."""
    try:
        return path.stat().st_size * (4 if path.name.endswith(".gz") else 1)
    except OSError:
        return None


def block_bytes(path: Path, chunk: int) -> int:
    """Bytes per batch for this run (the scanner reads ``chunk`` bytes at a time)."""
    size = _size(path)
    return BLOCK_CHUNKS * chunk * (4 if size is not None and size >= BIG_BYTES else 1)


def wanted(path: Path, layout: Layout) -> bool:
    """Whether this run should go through the fast path (see the module's docstring)."""
    mode = os.environ.get(ENV, "auto")
    if mode == "lines" or layout.answer is not None:
        return False
    if mode == "columns":
        return True
    size = _size(path)
    return size is not None and size >= MIN_BYTES


class FastPath:
    """Feeds batches of raw chunks to columnar.parse, or to the line engine when it refuses them."""

    def __init__(self, owner: LinePass, block_bytes: int) -> None:
        from sharedtask.validate import columnar  # numpy: imported only for runs that take this path

        self.columnar = columnar
        self.p = owner
        self.block_bytes = block_bytes
        self.tail = b""  # the current topic's lines, not yet booked
        self.tail_line = 0
        self.pending: tuple[Block, int] | None = None  # the current topic is this block's segment
        # Bytes booked by the fast path and bytes it handed to the line engine: a run that is
        # mostly handed over (every topic with a finding, CRLF everywhere, ...) stops trying.
        self.booked = self.handed = 0
        self.enabled = True

    def feed(self, chunks: Iterable[bytes]) -> None:
        """All chunks of the run, in batches of about ``block_bytes`` (copied once, into the batch)."""
        buf, sizes = bytearray(), []
        for chunk in chunks:
            buf += chunk
            sizes.append(len(chunk))
            if len(buf) >= self.block_bytes:
                self.block(buf, sizes, final=False)
                buf, sizes = bytearray(), []
        self.block(buf, sizes, final=True)

    def block(self, batch: bytearray, sizes: list[int], final: bool) -> None:
        """Check the carried tail, then ``batch`` (made of chunks of ``sizes`` bytes)."""
        p = self.p
        tail = self.tail
        if not batch and not tail:
            return
        if tail:
            batch[:0] = tail
            sizes.insert(0, len(tail))
        size = len(batch)
        batch += self.columnar.padding(size)
        data = batch
        first = self.tail_line if tail else p.line_no
        self.tail = b""
        blk = self.columnar.parse(data, size, p.layout) if self.enabled else None
        if blk is None:
            offsets = [0]
            for n in sizes:
                offsets.append(offsets[-1] + n)
            p.line_loop(p.scan([bytes(data[a:b]) for a, b in zip(offsets, offsets[1:])], first))
            self._tally(0, size)
            return
        tag = list(p.ctx.tags)[0] if len(p.ctx.tags) == 1 else blk.field(0, p.layout.tag)
        blk.check(p.ctx.patterns, tag, p.ctx.max_depth)
        for j in range(blk.n_segments):
            lo, hi = blk.bounds(j)
            topic = blk.topic(j)
            cur = p.cur
            if j == 0 and cur is not None and topic == cur.topic:
                if tail:  # the carried lines of the current topic head this block
                    self.pending = (blk, 0)
                else:
                    cur.flat.extend(blk.rows(lo, hi))
            else:
                p.next_topic(topic, first + lo, blk.column(lo, p.layout.topic))
                self.pending = (blk, j)
        lo, hi = blk.bounds(blk.n_segments - 1)
        carry = (not final and self.pending is not None and self.pending[0] is blk
                 and size - blk.byte_offset(lo) <= MAX_TAIL_BLOCKS * self.block_bytes)
        self._count_separators(blk, lo if carry else blk.n, first)
        if carry:
            self.tail = bytes(data[blk.byte_offset(lo) : size])
            self.tail_line = first + lo
            self.pending = None
        elif self.pending is not None and self.pending[0] is blk:
            p.cur.flat.extend(blk.rows(lo, hi))  # type: ignore[union-attr]
            self.pending = None
        p.line_no = first + blk.n
        self._tally(0, 0)
        p.check_budget()

    def _tally(self, booked: int, handed: int) -> None:
        """Count bytes; after WARM_UP_BLOCKS, give up when the line engine took over twice as much."""
        self.booked += booked
        self.handed += handed
        if self.booked + self.handed >= WARM_UP_BLOCKS * self.block_bytes and self.handed > 2 * self.booked:
            self.enabled = False

    def finish_current(self) -> None:
        """Finish the current topic: book it when plain, else run the per-topic rules on its lines."""
        p = self.p
        cur = p.cur
        assert cur is not None
        if self.pending is None:
            finish_topic(p.ctx, cur)
            return
        blk, j = self.pending
        self.pending = None
        lo, hi = blk.bounds(j)
        facts = blk.facts(j)
        out, ctx = p.out, p.ctx
        if (facts.plain and list(ctx.tags) == [blk.tag]
                and not (facts.ties and out.wants("RUN-TIE"))
                and not (facts.float32_ties and out.wants("RUN-FLOAT32-TIE"))):
            # what finish_topic does for such a topic: its figures, and tie groups past the cap counted
            ctx.depths.append(hi - lo)
            ctx.total_rows += hi - lo
            if facts.ties:
                out.count_only(Severity.WARNING, "RUN-TIE", facts.ties)
            if facts.float32_ties:
                out.count_only(Severity.WARNING, "RUN-FLOAT32-TIE", facts.float32_ties)
            self._tally(blk.span(lo, hi), 0)
            return
        cur.flat.extend(blk.rows(lo, hi))
        finish_topic(ctx, cur)
        self._tally(0, blk.span(lo, hi))

    def _count_separators(self, blk: Block, stop: int, first: int) -> None:
        """The scanner's per-line separator counts (TREC) for lines [0, stop) of the block."""
        scanner = self.p.scanner
        if not scanner.check_separators or stop == 0:
            return
        st = scanner.state
        tabs, spaces, both, first_tab, first_space, first_both = blk.separator_lines(0, stop)
        st.tab_lines += tabs
        st.space_lines += spaces
        st.mixed_lines += both
        if st.first_tab_line is None and first_tab is not None:
            st.first_tab_line = first + first_tab
        if st.first_space_line is None and first_space is not None:
            st.first_space_line = first + first_space
        if st.first_mixed is None and first_both is not None:
            st.first_mixed = first + first_both
