"""Byte-level reading of a run: finding the file, line splitting, encoding rules.

The run is read in binary, in 64 KB chunks cut at a newline (small enough to stay in
the CPU caches). Each chunk gets a few C-speed scans (NUL/control bytes, lone CR,
trailing/leading whitespace, UTF-8 decoding, non-ASCII) and only chunks that fail one
are looked at line by line, so a clean 10M-line run costs one decode and one
``split`` per chunk. Every count and finding is the same wherever chunks are cut.

Why these rules (docs/formats.md, TIRA's ``check_format.py``):
TIRA reads ``run.txt`` in text mode, so a lone CR starts a new line for it and a
BOM becomes part of the first topic id; it splits on Unicode whitespace (``\\s+``)
while trec_eval splits on ASCII whitespace only, so a no-break space or U+001C is
read as a separator by one and as part of an id by the other.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sharedtask.errors import SharedTaskError
from sharedtask.findings.codes import code as catalogue_entry
from sharedtask.findings import Severity
from sharedtask.units import format_size
from sharedtask.validate.model import Collector

#: TIRA's run check (tira.check_format.FormatBase.max_size_mb).
TIRA_MAX_BYTES = 75 * 1024 * 1024
#: Bytes read per chunk. Small on purpose: every byte-level check, the decode and the line
#: split then work on data that stays in the CPU caches. Measured on a 1M-line Touché run:
#: 0.59 s CPU with 64 KB chunks vs 0.64 s with 4 MB (median of 5, interleaved in one process).
CHUNK = 1 << 16

_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Every byte except the control ones: ``buf.translate(None, _NOT_CONTROL)`` leaves only the
# control bytes, a C-speed test that is ~5x faster than a regex search.
_NOT_CONTROL = bytes(b for b in range(256) if not _CONTROL.match(bytes([b])))
_LONE_CR = re.compile(rb"\r(?!\n)")
_TRAILING = re.compile(rb"[ \t]+\n")
_LEADING = re.compile(rb"(?:^|\n)[ \t]+(?=[^ \t\n])")
# Quick probes for the two rules above. A regex that starts with a literal is searched by
# sre's prefix scan, about 3x faster than ``b" \n" in buf`` (CPython's substring search
# skips only ~3 bytes at a time for such a needle): ~13 ms instead of ~40 ms per 47 MB.
_TRAILING_SPACE = re.compile(rb" \n")
_TRAILING_TAB = re.compile(rb"\t\n")
_LEADING_PROBE = re.compile(rb"\n[ \t]")
# Whitespace Python splits on but C isspace() does not (U+00A0, U+2000..., U+3000, U+0085).
_ODD_SPACE = re.compile(r"[^\S \t\n\r\x0b\x0c\x1c-\x1f]")


# For each separator byte: every byte but it and the newline (bytes.translate deletes them).
_ALL_BUT = {sep: bytes(b for b in range(256) if b not in (sep[0], 0x0A)) for sep in (b" ", b"\t")}


def _lines_containing(buf: bytes, sep: bytes) -> int:
    """Lines of ``buf`` (which ends with a newline) that contain ``sep``."""
    kept = buf.translate(None, _ALL_BUT[sep])  # only separators and newlines are left
    lines = kept.count(b"\n")
    if not kept.startswith(b"\n") and b"\n\n" not in kept:
        return lines  # no line without a separator
    return lines - (kept.split(b"\n").count(b"") - 1)  # minus the empty piece after the last newline


@dataclass
class ScanState:
    """File-level facts the scanner gathers for the end-of-file findings."""

    lines: int = 0
    crlf: int = 0
    tab_lines: int = 0
    space_lines: int = 0
    mixed_lines: int = 0
    first_mixed: int | None = None
    final_newline: bool = True
    aborted: bool = False
    first_tab_line: int | None = None
    first_space_line: int | None = None
    notes: list[str] = field(default_factory=list)


class Scanner:
    """Yields ``(first_line_number, lines)`` per chunk; an undecodable line is ``None``."""

    def __init__(self, path: Path, out: Collector, *, check_separators: bool, answers: bool,
                 tabs_only: bool = False, max_bytes: int | None = None, max_line: int | None = None) -> None:
        self.path = path
        # Bounds on what the host reads (docs/threat-model.md): a decompression bomb or a
        # line without end is cut off here, in constant memory, as a finding.
        self.max_bytes, self.max_line = max_bytes, max_line
        self.out = out
        self.tabs_only = tabs_only  # ARQMath Tasks 1/2: a space can only be inside a field
        self.check_separators = check_separators  # TREC: tabs and spaces are both legal, mixing is a warning
        self.answers = answers  # Task 3: the last column is free text
        self.state = ScanState()
        #: Bytes of whole lines handed out so far (after decompression): the validator's memory
        #: bound (budget.py) measures the text it keeps with it.
        self.consumed = 0
        #: The decoded chunk when it passed every byte-level check (else None): the engine
        #: may then split it as a whole instead of line by line.
        self.clean_text: str | None = None
        #: Why reading stopped early: reports the finding at the line the consumer reached.
        self.abort: Callable[[int], None] | None = None

    def chunks(self) -> Iterator[tuple[int, list[str | None]]]:
        """Each chunk's first line number and its lines, checked byte by byte (the line engine)."""
        line_no = 1
        for buf in self.raw_chunks():
            lines = self._chunk(buf, line_no)
            yield line_no, lines
            line_no += len(lines)
        self.end(line_no)

    def check_chunk(self, buf: bytes, first_line: int) -> list[str | None]:
        """The byte-level rules on one chunk of whole lines; its lines (None: undecodable)."""
        return self._chunk(buf, first_line)

    def end(self, next_line: int) -> None:
        """After the last chunk: report why reading stopped early, if it did, or count the lines."""
        if self.abort is not None:
            self.abort(next_line)
            self.abort = None
        elif not self.state.aborted:
            self.state.lines = next_line - 1

    def raw_chunks(self) -> Iterator[bytes]:
        """The run's bytes in chunks of whole lines, each ending with a newline.

        Reads CHUNK bytes at a time and cuts after the last newline, so the cuts depend on
        the file alone (the order of findings does too). When reading stops early (gzip
        error, byte or line bound) the finding waits in ``self.abort`` for the line number
        the consumer has reached, given to :meth:`end`.
        """
        out = self.out
        try:
            fh = gzip.open(self.path, "rb") if self.path.name.endswith(".gz") else open(self.path, "rb")
        except OSError as exc:
            raise SharedTaskError(f"{self.path}: cannot open: {exc.strerror or exc}") from None
        rest = b""
        first = True
        read = 0
        with fh:
            while True:
                try:
                    block = fh.read(CHUNK)
                except (OSError, EOFError, zlib.error) as exc:
                    message = f"the gzip stream is broken: {exc}"
                    self._stop(lambda line: out.add(
                        Severity.ERROR,
                        "RUN-GZIP",
                        message,
                        hint="recompress the run with gzip, or submit it uncompressed",
                        line=line,
                    ))
                    return
                if first:
                    first = False
                    if block.startswith(b"\xef\xbb\xbf"):
                        out.add(
                            Severity.ERROR,
                            "RUN-BOM",
                            "the file starts with a UTF-8 byte order mark",
                            hint="TIRA and trec_eval read the BOM as part of the first topic id: save without BOM",
                            line=1,
                            column=1,
                        )
                        block = block[3:]
                if not block:
                    break
                read += len(block)
                if self.max_bytes is not None and read > self.max_bytes:
                    text = (f"the run holds more than {format_size(self.max_bytes)}"
                            + (" once decompressed" if self.path.name.endswith(".gz") else "")
                            + "; the rest was not read")
                    self._stop(lambda line: out.report("RUN-TOO-LARGE", text, line=line))
                    return
                buf = rest + block
                cut = buf.rfind(b"\n")
                if cut < 0:
                    rest = buf
                    if self.max_line is not None and len(rest) > self.max_line:
                        limit = format_size(self.max_line)
                        self._stop(lambda line: out.report(
                            "RUN-LINE-TOO-LONG", f"line {line} is longer than {limit}; the rest of the run was not read",
                            line=line))
                        return
                    continue
                rest = buf[cut + 1 :]
                self.consumed += cut + 1
                yield buf[: cut + 1]
        if rest:
            self.state.final_newline = False
            self.consumed += len(rest)
            yield rest + b"\n"

    def _stop(self, report: Callable[[int], None]) -> None:
        self.abort = report
        self.state.aborted = True

    # ------------------------------------------------------------------ one chunk

    def _where(self, buf: bytes, offset: int, first_line: int) -> tuple[int, int]:
        line = first_line + buf.count(b"\n", 0, offset)
        column = offset - (buf.rfind(b"\n", 0, offset) + 1) + 1
        return line, column

    def _report_matches(
        self, pattern: re.Pattern[bytes], buf: bytes, first_line: int, code: str, message: str,
        skip_newline: bool = False,
    ) -> None:
        out = self.out
        severity = catalogue_entry(code).severity
        for m in pattern.finditer(buf):
            if not out.wants(code):  # past the cap: skip locating the match
                out.count_only(severity, code)
                continue
            offset = m.start() + (1 if skip_newline and buf[m.start() : m.start() + 1] == b"\n" else 0)
            line, column = self._where(buf, offset, first_line)
            byte = buf[m.start() : m.start() + 1]
            out.report(code, message.format(byte=byte), line, column)

    def _chunk(self, buf: bytes, first_line: int) -> list[str | None]:
        st = self.state
        self.clean_text = None
        clean = True
        if b"\r" in buf:
            n_crlf = buf.count(b"\r\n")
            if n_crlf != buf.count(b"\r"):
                clean = False
                self._report_matches(
                    _LONE_CR, buf, first_line, "RUN-CR", "a carriage return (CR) inside a line")
            if n_crlf:
                st.crlf += n_crlf
                buf = buf.replace(b"\r\n", b"\n")
        if buf.translate(None, _NOT_CONTROL):
            clean = False
            self._report_matches(
                _CONTROL, buf, first_line, "RUN-CONTROL-CHAR", "control character {byte!r} in the line")
        if not self.answers:
            has_tab = b"\t" in buf  # memchr: skips the probe for the separator the file does not use
            if (b" " in buf and _TRAILING_SPACE.search(buf)) or (has_tab and _TRAILING_TAB.search(buf)):
                self._report_matches(
                    _TRAILING, buf, first_line, "RUN-TRAILING-WHITESPACE", "whitespace at the end of the line")
            if buf[:1] in (b" ", b"\t") or _LEADING_PROBE.search(buf):
                self._report_matches(
                    _LEADING, buf, first_line, "RUN-LEADING-WHITESPACE", "whitespace at the start of the line",
                    skip_newline=True,
                )
        try:
            text = buf.decode("utf-8")
        except UnicodeDecodeError:
            return self._decode_lines(buf, first_line)
        lines: list[str | None] = text.split("\n")  # type: ignore[assignment]
        lines.pop()  # buf ends with a newline
        if not text.isascii() and _ODD_SPACE.search(text):
            clean = False
            if not self.answers:
                self._odd_spaces(lines, first_line)
        if self.check_separators:
            self._separators(buf, lines, first_line)
        if self.tabs_only and b" " in buf:
            self._spaces_in_fields(lines, first_line)
        if clean:
            self.clean_text = text
        return lines

    def _spaces_in_fields(self, lines: list[str | None], first_line: int) -> None:
        """A space inside a tab-separated field: TIRA and trec_eval split there, the ARQMath scripts do not."""
        code = "RUN-SPACE-IN-FIELD"
        for k, ln in enumerate(lines):
            if ln is None or " " not in ln or "\t" not in ln.strip():
                continue  # no tab at all: the line gets RUN-SEPARATOR instead
            self.out.report(code, "a space inside a tab-separated column", first_line + k, ln.index(" ") + 1)

    def _decode_lines(self, buf: bytes, first_line: int) -> list[str | None]:
        raw_lines = buf.split(b"\n")
        raw_lines.pop()
        lines: list[str | None] = []
        for k, raw in enumerate(raw_lines):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                lines.append(None)
                self.out.report("RUN-ENCODING", lambda: f"not UTF-8: byte(s) {raw[exc.start : exc.end]!r} at byte "
                                f"{exc.start + 1} ({exc.reason})", first_line + k, exc.start + 1)
        decoded = [ln for ln in lines if ln is not None]
        if not self.answers and any(not ln.isascii() and _ODD_SPACE.search(ln) for ln in decoded):
            self._odd_spaces(lines, first_line)
        if self.check_separators:
            self._separators(buf, lines, first_line, per_line=True)  # undecodable lines count for nothing
        if self.tabs_only and b" " in buf:
            self._spaces_in_fields(lines, first_line)
        return lines

    def _odd_spaces(self, lines: list[str | None], first_line: int) -> None:
        for k, ln in enumerate(lines):
            if ln is None or ln.isascii():
                continue
            m = _ODD_SPACE.search(ln)
            if m is None:
                continue
            self.out.report("RUN-UNICODE-SPACE", f"non-ASCII whitespace U+{ord(m.group()):04X} in the line",
                            first_line + k, m.start() + 1)

    def _separators(self, buf: bytes, lines: list[str | None], first_line: int, per_line: bool = False) -> None:
        st = self.state
        has_tab = b"\t" in buf
        has_space = b" " in buf
        if not (has_tab and has_space) and not per_line:
            # One separator in the whole chunk: the same counts as the loop below, at C speed,
            # so that they do not depend on where chunks are cut (blank lines count for nothing).
            if has_tab or has_space:
                sep = b"\t" if has_tab else b" "
                n_with = _lines_containing(buf, sep)
                first = first_line + buf.count(b"\n", 0, buf.find(sep))
                if has_tab:
                    st.tab_lines += n_with
                    if st.first_tab_line is None:
                        st.first_tab_line = first
                else:
                    st.space_lines += n_with
                    if st.first_space_line is None:
                        st.first_space_line = first
            return
        for k, ln in enumerate(lines):
            if ln is None:
                continue
            t = "\t" in ln
            s = " " in ln
            if t and s:
                st.mixed_lines += 1
                if st.first_mixed is None:
                    st.first_mixed = first_line + k
            elif t:
                st.tab_lines += 1
                if st.first_tab_line is None:
                    st.first_tab_line = first_line + k
            elif s:
                st.space_lines += 1
                if st.first_space_line is None:
                    st.first_space_line = first_line + k

    def finish(self) -> None:
        """End-of-file findings about the file as a whole."""
        st = self.state
        out = self.out
        if st.crlf:
            out.report("RUN-CRLF", f"{st.crlf:,} line(s) end with CRLF (Windows line endings)")
        if not st.final_newline:
            out.report("RUN-NO-FINAL-NEWLINE", "the last line has no newline at its end", st.lines)
        if self.check_separators and (st.mixed_lines or (st.tab_lines and st.space_lines)):
            where = st.first_mixed or max(st.first_tab_line or 0, st.first_space_line or 0) or None
            out.report("RUN-MIXED-SEPARATORS", f"columns are separated inconsistently: {st.tab_lines:,} line(s) with "
                       f"tabs, {st.space_lines:,} with spaces, {st.mixed_lines:,} with both", where)
