"""A strict tar reader: the members of an upload or a layer, their names, kinds and where their data lies.

Why our own: Python's tarfile is lenient where dockerd's reader (Go's ``archive/tar``) is not, and
where it is lenient, the two would read one archive two ways. Tar headers: POSIX ustar and pax
(IEEE 1003.1-2008, "pax Interchange Format") and GNU long names; limits and the rules for which
entries carry data follow Go's ``archive/tar``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from sharedtask.service.uploads.bounds import CHUNK, refused

BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
#: Go's archive/tar refuses pax headers and GNU long names above 1 MiB (maxSpecialFileSize).
MAX_META = 1 << 20

#: What a type flag is, for the messages; '0' and NUL are regular files, '5' folders.
KINDS = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device", b"4": "a block device",
          b"6": "a FIFO", b"7": "a contiguous file", b"S": "a sparse file", b"V": "a volume label",
          b"M": "a multi-volume continuation", b"D": "a GNU dump folder", b"N": "an old GNU long name"}
#: Types whose header is followed by no data, whatever its size field says (Go: isHeaderOnlyType).
_HEADER_ONLY = frozenset((b"1", b"2", b"3", b"4", b"5", b"6"))
_USTAR = b"ustar\x0000"  # POSIX ustar and pax: a name prefix at 345; GNU headers have none


class Cut(Exception):
    """The tar stream ended inside a header or a member."""


@dataclass(frozen=True)
class Entry:
    """One member: its raw name, type flag, the bytes of data after its header and where they start."""

    name: bytes
    flag: bytes
    size: int
    offset: int
    sparse: bool

    @property
    def shown(self) -> str:
        return self.name.decode("utf-8", "replace")[:300]


class Reader:
    """Reads a tar stream forward, counting the position; ``skip_to`` seeks when the file can."""

    def __init__(self, fh: BinaryIO, seekable: bool) -> None:
        self.fh, self.seekable, self.pos = fh, seekable, 0

    def read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            part = self.fh.read(min(n - len(out), CHUNK))
            if not part:
                break
            out += part
        self.pos += len(out)
        return bytes(out)

    def exact(self, n: int) -> bytes:
        data = self.read(n)
        if len(data) != n:
            raise Cut()
        return data

    def skip_to(self, target: int) -> None:
        if target < self.pos:
            raise AssertionError("a tar reader only moves forward")
        if self.seekable:
            self.fh.seek(target - self.pos, 1)
            self.pos = target
            return
        while self.pos < target:
            if not self.read(min(target - self.pos, CHUNK)):
                raise Cut()


def padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _number(field: bytes) -> int:
    """A numeric header field: octal text, or base-256 when its first bit is set (GNU, for big values)."""
    if field[:1] and field[0] & 0x80:
        if field[0] == 0xFF:
            raise ValueError("negative")
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.strip(b" \x00")
    if not text:
        return 0
    if not re.fullmatch(rb"[0-7]+", text):
        raise ValueError("not octal")
    return int(text, 8)


def _checksum_ok(block: bytes) -> bool:
    """The header's sum, its checksum field counted as spaces; unsigned bytes, or signed as old tars wrote."""
    stored = _number(block[148:156])
    unsigned = sum(block) - sum(block[148:156]) + 8 * 32
    if stored == unsigned:
        return True
    high = sum(1 for b in block[:148] + block[156:] if b > 127)
    return stored == unsigned - 256 * high


def _pax_records(data: bytes, where: str) -> dict[bytes, bytes]:
    """``"%d %s=%s\\n"`` records; the whole block must be records (Go: parsePAX)."""
    records: dict[bytes, bytes] = {}
    while data:
        length_text, space, _ = data.partition(b" ")
        if not space or not length_text.isdigit() or len(length_text) > 20:
            raise refused(f"corrupt {where}: a pax extended header is malformed")
        length = int(length_text)
        record = data[:length]
        if length <= len(length_text) + 1 or len(record) != length or not record.endswith(b"\n"):
            raise refused(f"corrupt {where}: a pax extended header is malformed")
        key, equals, value = record[len(length_text) + 1:-1].partition(b"=")
        if not equals or not key:
            raise refused(f"corrupt {where}: a pax extended header is malformed")
        records[key] = value
        data = data[length:]
    return records


def entries(reader: Reader, where: str, *, strict_end: bool) -> Iterator[Entry]:
    """Each member of a tar stream; after a member is yielded, its data is skipped.

    ``where`` names the stream in messages. ``strict_end``: the stream must end with the
    end-of-archive block (the upload: a cut archive is refused); a layer may also just end
    between members, as Go's reader allows. Which bytes belong to a member follows Go's
    ``Reader.next``: pax ``x`` records apply to the next member only, a ``g`` header ends
    them, and link, device, folder and FIFO entries carry no data whatever their size says.
    """
    pax: dict[bytes, bytes] = {}
    long_name: bytes | None = None
    while True:
        start = reader.pos
        block = reader.read(BLOCK)
        if not block and not strict_end and not pax and long_name is None:
            return
        if len(block) != BLOCK:
            raise Cut()
        if block == ZERO_BLOCK:
            return
        try:
            valid = _checksum_ok(block)
            size = _number(block[124:136])
        except ValueError:
            valid = False
        if not valid:
            raise refused(f"corrupt {where}: the tar header at byte {start} is not valid")
        flag = block[156:157]
        if flag in (b"x", b"g", b"L", b"K"):
            if size > MAX_META:
                raise refused(f"corrupt {where}: an extended tar header of {size} bytes (at most {MAX_META})")
            data = reader.exact(padded(size))[:size]
            if flag == b"L":
                long_name = data.split(b"\x00", 1)[0]
            elif flag == b"x":
                pax = _pax_records(data, where)
            else:
                if flag == b"g" and any(k.startswith(b"GNU.sparse.") for k in _pax_records(data, where)):
                    raise refused(f"{where} holds a sparse file (a global pax header describes one)")
                if flag == b"g":
                    pax, long_name = {}, None
            continue
        name = block[:100].split(b"\x00", 1)[0]
        if block[257:265] == _USTAR:
            prefix = block[345:500].split(b"\x00", 1)[0]
            if prefix:
                name = prefix + b"/" + name
        if long_name is not None:
            name = long_name
        if b"path" in pax:
            name = pax[b"path"]
        if b"size" in pax:
            if not pax[b"size"].isdigit() or len(pax[b"size"]) > 20:
                raise refused(f"corrupt {where}: a pax header gives a size that is not a number")
            size = int(pax[b"size"])
        if flag == b"\x00" and name.endswith(b"/"):
            flag = b"5"  # pre-POSIX archives mark folders by the trailing slash only
        sparse = flag == b"S" or any(k.startswith(b"GNU.sparse.") for k in pax)
        data_size = 0 if flag in _HEADER_ONLY else size
        entry = Entry(name, flag, data_size, reader.pos, sparse)
        pax, long_name = {}, None
        yield entry
        reader.skip_to(entry.offset + padded(data_size))
