"""Submitted images: a ``docker save`` archive checked member by member, rewritten by us, loaded once by id.

Why: ``docker load`` trusts the archive. It extracts every member (links too), then reads
``manifest.json`` by a path that follows links, applies the ``RepoTags`` it finds there
(and, without a manifest, the legacy ``repositories`` file), and unpacks each layer,
compressed or not, to disk before it compares the layer with the image config. A team's
archive could therefore rename any image of the server (``sharedtask/base``, a
baseline, the evaluator) to its own, or make dockerd write gigabytes from a few KB.

So nothing a team wrote reaches dockerd except the image config and the layer blobs:

* :func:`clean_archive` reads the upload with its own strict tar reader. Only regular
  files and folders are accepted: a symbolic or hard link, a device, a FIFO or a sparse
  file is refused by name, as are absolute names, names with ``..``, a name that occurs
  twice, and a member under a name that is a file. Of ``manifest.json`` only the paths
  of one image's ``Config`` and ``Layers`` are used; each must be a regular file of the
  archive. A new archive is written that holds exactly our own ``manifest.json``
  (``RepoTags`` null), the config and the layers under names we choose: no
  ``repositories``, no OCI ``index.json`` (whose ``io.containerd.image.name`` and
  ``org.opencontainers.image.ref.name`` annotations name images on a containerd image
  store), no other member.
* :func:`load_archive` loads only such an archive. Before dockerd sees it, each layer is
  decompressed as a stream (plain tar or gzip, the formats ``docker save`` and the
  common image tools write; bzip2, xz and zstd, which some docker versions also take,
  are refused because their expanded size would not be checked) and the expanded bytes
  are counted against the limit, without being written anywhere; the layer's tar
  headers are read on the way, so that a sparse entry (a few bytes that dockerd would
  expand to its full size) is refused too, and the stream's sha256 must be the config's
  ``diff_id``. Then the image is loaded, docker's answer must name no image (only
  ``Loaded image ID:``), and it is tagged in our own namespace only.

Layout of the archive: the Docker image specification, "Combined Image JSON + Filesystem
Changeset Format" (moby/moby, image/spec/v1.2.md); the OCI image layout
(opencontainers/image-spec, image-layout.md) for ``index.json`` and ``oci-layout``,
which newer ``docker save`` adds next to ``manifest.json``. Tar headers: POSIX ustar and
pax (IEEE 1003.1-2008, "pax Interchange Format") and GNU long names; limits and the
rules for which entries carry data follow Go's ``archive/tar``, the reader dockerd uses.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import re
import secrets
import tarfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from sharedtask.errors import SharedTaskError

log = logging.getLogger("sharedtask.service")

CHUNK = 1 << 20
BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
#: Go's archive/tar refuses pax headers and GNU long names above 1 MiB (maxSpecialFileSize).
MAX_META = 1 << 20
MAX_MEMBERS = 10_000  # docker save writes about 4 per layer and at most 128 layers fit overlayfs
MAX_NAME = 4096
MAX_LAYERS = 1000
MAX_MANIFEST = 1 << 20
MAX_CONFIG = 8 << 20  # an image config is a few KB (its history grows with the layers)

HINT = "send the output of `docker save IMAGE`"
CONFIG_NAME = "config.json"

#: Loaded submissions are tagged ``sharedtask-submissions:<sha256 of the archive>``: a name of
#: ours, so ``docker image prune`` (which removes untagged images) keeps them.
SUBMISSIONS_REPOSITORY = "sharedtask-submissions"


class UploadError(SharedTaskError):
    """An upload that is refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


@dataclass(frozen=True)
class LoadedImage:
    docker_id: str
    size: int


def spool_path(uploads: Path, suffix: str) -> Path:
    """A new spool's path, ``uploads/<pid>-<random><suffix>``: the process id tells a server
    starting up which spools belong to a live sibling (``serve --processes``) and which to a killed one."""
    uploads.mkdir(parents=True, exist_ok=True)
    return uploads / f"{os.getpid()}-{secrets.token_hex(8)}{suffix}"


def remove_stale_spools(uploads: Path) -> None:
    """Remove the spools of server processes that are gone (killed mid-upload); a spool of a process
    of this host that still runs (a sibling server process) is left alone."""
    from sharedtask.service.locks import gone, owner

    if not uploads.is_dir():
        return
    host = owner().partition(":")[0]
    for leftover in uploads.iterdir():
        pid = leftover.name.partition("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not gone(f"{host}:{pid}:"):
            continue
        if leftover.is_file() or leftover.is_symlink():
            leftover.unlink(missing_ok=True)


class Spool:
    """Writes an upload to a file while hashing and counting it; refuses past ``limit`` bytes."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.size = 0
        self._sha = hashlib.sha256()
        self._fh = open(path, "wb")

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise UploadError(413, f"the image archive is larger than the limit of {self.limit} bytes",
                              hint="make the image smaller (multi-stage build, fewer layers)")
        self._sha.update(chunk)
        self._fh.write(chunk)

    def close(self) -> str:
        self._fh.close()
        return self._sha.hexdigest()

    def discard(self) -> None:
        self._fh.close()
        self.path.unlink(missing_ok=True)


def _refused(message: str, hint: str = HINT) -> UploadError:
    return UploadError(400, message, hint=hint)


# ----------------------------------------------------------------------------- a strict tar reader

#: What a type flag is, for the messages; '0' and NUL are regular files, '5' folders.
_KINDS = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device", b"4": "a block device",
          b"6": "a FIFO", b"7": "a contiguous file", b"S": "a sparse file", b"V": "a volume label",
          b"M": "a multi-volume continuation", b"D": "a GNU dump folder", b"N": "an old GNU long name"}
#: Types whose header is followed by no data, whatever its size field says (Go: isHeaderOnlyType).
_HEADER_ONLY = frozenset((b"1", b"2", b"3", b"4", b"5", b"6"))
_USTAR = b"ustar\x0000"  # POSIX ustar and pax: a name prefix at 345; GNU headers have none


class _Cut(Exception):
    """The tar stream ended inside a header or a member."""


@dataclass(frozen=True)
class _Entry:
    """One member: its raw name, type flag, the bytes of data after its header and where they start."""

    name: bytes
    flag: bytes
    size: int
    offset: int
    sparse: bool

    @property
    def shown(self) -> str:
        return self.name.decode("utf-8", "replace")[:300]


class _Reader:
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
            raise _Cut()
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
                raise _Cut()


def _padded(size: int) -> int:
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
            raise _refused(f"corrupt {where}: a pax extended header is malformed")
        length = int(length_text)
        record = data[:length]
        if length <= len(length_text) + 1 or len(record) != length or not record.endswith(b"\n"):
            raise _refused(f"corrupt {where}: a pax extended header is malformed")
        key, equals, value = record[len(length_text) + 1:-1].partition(b"=")
        if not equals or not key:
            raise _refused(f"corrupt {where}: a pax extended header is malformed")
        records[key] = value
        data = data[length:]
    return records


def _entries(reader: _Reader, where: str, *, strict_end: bool) -> Iterator[_Entry]:
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
            raise _Cut()
        if block == ZERO_BLOCK:
            return
        try:
            valid = _checksum_ok(block)
            size = _number(block[124:136])
        except ValueError:
            valid = False
        if not valid:
            raise _refused(f"corrupt {where}: the tar header at byte {start} is not valid")
        flag = block[156:157]
        if flag in (b"x", b"g", b"L", b"K"):
            if size > MAX_META:
                raise _refused(f"corrupt {where}: an extended tar header of {size} bytes (at most {MAX_META})")
            data = reader.exact(_padded(size))[:size]
            if flag == b"L":
                long_name = data.split(b"\x00", 1)[0]
            elif flag == b"x":
                pax = _pax_records(data, where)
            else:
                if flag == b"g" and any(k.startswith(b"GNU.sparse.") for k in _pax_records(data, where)):
                    raise _refused(f"{where} holds a sparse file (a global pax header describes one)")
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
                raise _refused(f"corrupt {where}: a pax header gives a size that is not a number")
            size = int(pax[b"size"])
        if flag == b"\x00" and name.endswith(b"/"):
            flag = b"5"  # pre-POSIX archives mark folders by the trailing slash only
        sparse = flag == b"S" or any(k.startswith(b"GNU.sparse.") for k in pax)
        data_size = 0 if flag in _HEADER_ONLY else size
        entry = _Entry(name, flag, data_size, reader.pos, sparse)
        pax, long_name = {}, None
        yield entry
        reader.skip_to(entry.offset + _padded(data_size))


# ----------------------------------------------------------------------------- the upload


@dataclass(frozen=True)
class _Member:
    offset: int
    size: int
    folder: bool


@dataclass(frozen=True)
class _Plan:
    """What an archive holds for docker: the config (its bytes) and the layer members, in manifest order."""

    members: dict[str, _Member]
    config_name: str
    config: bytes
    layers: tuple[str, ...]
    diff_ids: tuple[str, ...]
    manifest: bytes

    def distinct_layers(self) -> list[str]:
        return list(dict.fromkeys(self.layers))

    def our_names(self) -> tuple[str, list[str]]:
        """The names the archive we write gives the config and each layer of the manifest."""
        index = {name: n for n, name in enumerate(self.distinct_layers())}
        return CONFIG_NAME, [f"layer-{index[name]}.tar" for name in self.layers]

    def our_manifest(self) -> bytes:
        config, layers = self.our_names()
        return json.dumps([{"Config": config, "RepoTags": None, "Layers": layers}]).encode("utf-8")

    @property
    def written_by_us(self) -> bool:
        """Whether this is exactly the archive :func:`clean_archive` writes for it (nothing else inside)."""
        config, layers = self.our_names()
        return (self.config_name == config and list(self.layers) == layers
                and set(self.members) == {"manifest.json", config, *layers}
                and self.manifest == self.our_manifest())


def _normal(raw: bytes, folder: bool) -> str | None:
    """The member's path without ``.`` and empty parts; ``None`` for the archive's own root folder."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _refused(f"the image archive holds a member whose name is not UTF-8 ({raw[:100]!r})") from None
    if len(name) > MAX_NAME:
        raise _refused(f"the image archive holds a member with a name of {len(name)} characters")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or ".." in parts:
        raise _refused(f"corrupt image archive: member {name!r} leaves the archive "
                       "(an absolute name or one with '..')")
    if not parts:
        if folder:
            return None
        raise _refused(f"corrupt image archive: a file named {name!r}")
    return "/".join(parts)


def _member_kind(entry: _Entry) -> bool:
    """True for a folder, False for a regular file; any other member is refused by name."""
    if entry.sparse:
        raise _refused(f"the image archive holds {entry.shown!r} as a sparse file; only regular files and "
                       "folders are accepted")
    if entry.flag in (b"0", b"\x00"):
        return False
    if entry.flag == b"5":
        return True
    kind = _KINDS.get(entry.flag, f"a member of tar type {entry.flag!r}")
    raise _refused(f"the image archive holds {entry.shown!r} as {kind}; only regular files and folders "
                   "are accepted")


def _read(fh: BinaryIO, member: _Member) -> bytes:
    fh.seek(member.offset)
    return fh.read(member.size)


def _scan(path: Path) -> _Plan:
    """Check the archive's members and its manifest; an :class:`UploadError` names what is wrong."""
    file_size = path.stat().st_size
    members: dict[str, _Member] = {}
    with open(path, "rb") as fh:
        reader = _Reader(fh, seekable=True)
        try:
            for count, entry in enumerate(_entries(reader, "image archive", strict_end=True), 1):
                if count > MAX_MEMBERS:
                    raise _refused(f"the image archive has more than {MAX_MEMBERS} members")
                folder = _member_kind(entry)
                name = _normal(entry.name, folder)
                if name is None:
                    continue
                if name in ("manifest.json", "repositories", "index.json", "oci-layout") and folder:
                    raise _refused(f"the image archive holds {name!r} as a folder; it must be a regular file")
                if name in members:
                    raise _refused(f"the image archive holds {name!r} twice")
                if entry.offset + entry.size > file_size:
                    raise _Cut()
                members[name] = _Member(entry.offset, entry.size, folder)
        except _Cut:
            raise _refused("corrupt image archive: it ends in the middle (the upload was cut, or it is not "
                           "a tar archive)") from None
        for name in members:  # a member under a file: docker's extraction would fail half-way
            parts = name.split("/")
            for depth in range(1, len(parts)):
                parent = members.get("/".join(parts[:depth]))
                if parent is not None and not parent.folder:
                    raise _refused(f"the image archive holds {name!r} under {'/'.join(parts[:depth])!r}, "
                                   "which is a file")
        manifest_member = members.get("manifest.json")
        if manifest_member is None:
            raise _refused("not an image archive: it has no manifest.json")
        if manifest_member.size > MAX_MANIFEST:
            raise _refused(f"manifest.json is {manifest_member.size} bytes; a docker save manifest of one "
                           f"image is a few KB (at most {MAX_MANIFEST})")
        manifest = _read(fh, manifest_member)
        config_name, layers = _manifest_paths(manifest, members)
        config_member = members[config_name]
        if config_member.size > MAX_CONFIG:
            raise _refused(f"the image config {config_name!r} is {config_member.size} bytes (at most {MAX_CONFIG})")
        config = _read(fh, config_member)
    diff_ids = _diff_ids(config, config_name, len(layers))
    return _Plan(members, config_name, config, tuple(layers), tuple(diff_ids), manifest)


def _manifest_paths(raw: bytes, members: dict[str, _Member]) -> tuple[str, list[str]]:
    """The config and layer members of the manifest's one image; each must be a regular file."""
    try:
        doc: Any = json.loads(raw)
    except (ValueError, RecursionError):
        raise _refused("corrupt image archive: manifest.json is not JSON") from None
    if not isinstance(doc, list) or not doc or not all(isinstance(m, dict) for m in doc):
        raise _refused("corrupt image archive: manifest.json lists no image")
    if len(doc) != 1:
        raise _refused(f"the archive holds {len(doc)} images; submit exactly one",
                       hint="send the output of `docker save IMAGE` for one image")
    entry = doc[0]
    config, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config, str) or not isinstance(layers, list) or not layers \
            or not all(isinstance(layer, str) for layer in layers):
        raise _refused("corrupt image archive: manifest.json gives no Config file or no Layers")
    if len(layers) > MAX_LAYERS:
        raise _refused(f"the image has {len(layers)} layers (at most {MAX_LAYERS})")

    def member(path: str, what: str) -> str:
        try:
            name = _normal(path.encode("utf-8"), False)
        except UploadError:
            raise _refused(f"manifest.json names {path!r} as {what}, a path outside the archive") from None
        found = members.get(name or "")
        if found is None or found.folder:
            raise _refused(f"manifest.json names {path!r} as {what}, but the archive has no such file")
        return str(name)

    return member(config, "the image config"), [member(layer, "a layer") for layer in layers]


def _diff_ids(raw: bytes, name: str, layers: int) -> list[str]:
    try:
        config: Any = json.loads(raw)
    except (ValueError, RecursionError):
        raise _refused(f"corrupt image archive: the image config {name!r} is not JSON") from None
    rootfs = config.get("rootfs") if isinstance(config, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(
            isinstance(d, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", d) for d in diff_ids):
        raise _refused(f"corrupt image archive: the image config {name!r} has no rootfs.diff_ids")
    if len(diff_ids) != layers:
        raise _refused(f"corrupt image archive: the image config lists {len(diff_ids)} layers, manifest.json "
                       f"{layers}")
    return diff_ids


class _Slice:
    """``size`` bytes of a file from ``offset``, read in chunks of at most :data:`CHUNK`."""

    def __init__(self, fh: BinaryIO, offset: int, size: int) -> None:
        self.fh, self.left = fh, size
        fh.seek(offset)

    def peek(self, n: int) -> bytes:
        data = self.fh.read(min(n, self.left))
        self.fh.seek(-len(data), 1)
        return data

    def read(self, n: int | None = -1) -> bytes:
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = self.fh.read(min(n, CHUNK))
        self.left -= len(data)
        return data


def _write(source: Path, plan: _Plan, target: Path) -> None:
    """The archive docker gets: our manifest.json, the config and each layer once, under our names."""
    config_name, layer_names = plan.our_names()
    with open(source, "rb") as fh, tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tout:
        tout.copybufsize = CHUNK

        def add(name: str, size: int, data: Any) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = size, 0o644, 0
            tout.addfile(info, data)

        manifest = plan.our_manifest()
        add("manifest.json", len(manifest), io.BytesIO(manifest))
        add(config_name, len(plan.config), io.BytesIO(plan.config))
        written: set[str] = set()
        for source_name, name in zip(plan.layers, layer_names):
            if name not in written:
                written.add(name)
                member = plan.members[source_name]
                add(name, member.size, _Slice(fh, member.offset, member.size))


def clean_archive(source: Path, target: Path, max_size: int | None = None) -> None:
    """Check the archive member by member and write the one docker may load to ``target``.

    Everything refused is an :class:`UploadError` (400; 413 when ``max_size`` is given and
    the layers expand past it). ``target`` holds our ``manifest.json`` (no names), the
    image config and the layers, nothing else; it exists only when all checks passed.
    """
    source, target = Path(source), Path(target)
    try:
        plan = _scan(source)
        if max_size is not None:
            _measure(source, plan, max_size)
        _write(source, plan, target)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------- layer sizes


class _Counted:
    """A layer's expanded bytes as they are read: hashed, counted, refused once the total passes the limit."""

    def __init__(self, stream: Any, name: str, *, before: int, references: int, limit: int) -> None:
        self.stream, self.name = stream, name
        self.before, self.references, self.limit = before, references, limit
        self.count = 0
        self.sha = hashlib.sha256()

    def read(self, n: int) -> bytes:
        try:
            data = self.stream.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise _refused(f"layer {self.name!r} is not valid gzip ({exc})") from None
        self.count += len(data)
        if self.before + self.count * self.references > self.limit:
            raise UploadError(413, f"the image's layers unpack to more than the task's limit of {self.limit} "
                                   "bytes", hint="make the image smaller: a multi-stage build, fewer files")
        self.sha.update(data)
        return data


#: Compressions some docker versions also unpack (moby pkg/archive DetectCompression), refused here.
_OTHER_COMPRESSIONS = ((b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))


def _layer_stream(raw: _Slice, name: str) -> Any:
    """The layer's expanded bytes: a plain tar as it is, gzip decompressed; another compression is refused.

    Recognised by the magic bytes, as dockerd does: what dockerd would decompress must be
    decompressed here too, or its size would go unchecked.
    """
    head = raw.peek(10)
    if head.startswith(b"\x1f\x8b\x08"):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[arg-type]
    what = next((w for magic, w in _OTHER_COMPRESSIONS if head.startswith(magic)), None)
    if what is None and len(head) >= 4 and head[1:4] == b"\x2a\x4d\x18" and head[0] & 0xF0 == 0x50:
        what = "zstd"  # a zstd skippable frame
    if what is None:
        return raw
    raise _refused(f"layer {name!r} is compressed with {what}; the server takes layers as plain tar or gzip",
                   hint="send the output of `docker save IMAGE`, whose layers are plain tar")


def _measure(path: Path, plan: _Plan, max_size: int) -> None:
    """Expand each layer as a stream, writing nothing: 413 as soon as the total passes ``max_size``.

    Also 400 for a layer dockerd would refuse only after writing it: not a tar, a sparse
    entry (expanded by dockerd to its full size), or a sha256 that is not the config's
    ``diff_id``. A layer the manifest lists twice counts twice, as dockerd unpacks it twice.
    """
    references = Counter(plan.layers)
    total = 0
    with open(path, "rb") as fh:
        for name in plan.distinct_layers():
            member = plan.members[name]
            counted = _Counted(_layer_stream(_Slice(fh, member.offset, member.size), name), name,
                               before=total, references=references[name], limit=max_size)
            reader = _Reader(counted, seekable=False)  # type: ignore[arg-type]
            try:
                for entry in _entries(reader, f"layer {name!r}", strict_end=False):
                    if entry.sparse:
                        raise _refused(f"layer {name!r} holds {entry.shown!r} as a sparse file, which docker "
                                       "would expand to its full size",
                                       hint="rebuild the image with `docker build`, whose layers have no "
                                            "sparse entries")
                while reader.read(CHUNK):  # dockerd hashes what follows the tar's end too
                    pass
            except _Cut:
                raise _refused(f"layer {name!r} is not a complete tar archive") from None
            digest = "sha256:" + counted.sha.hexdigest()
            for position, (layer, expected) in enumerate(zip(plan.layers, plan.diff_ids), 1):
                if layer == name and expected != digest:
                    raise _refused(f"layer {position} ({name!r}) does not match the image config: its sha256 is "
                                   f"{digest}, the config expects {expected}")
            total += counted.count * references[name]


# ----------------------------------------------------------------------------- docker


def load_archive(path: Path, max_size: int, archive_sha256: str) -> LoadedImage:
    """Load an archive :func:`clean_archive` wrote, once its layers are known to fit ``max_size``.

    The image is addressed by its id only: the archive names nothing, docker's answer must
    name nothing but that id, and the one tag added is ours (``sharedtask-submissions``).
    """
    from sharedtask.images.client import docker_client

    path = Path(path)
    plan = _scan(path)
    if not plan.written_by_us:
        raise ValueError(f"{path} was not written by clean_archive; only such an archive is given to docker")
    _measure(path, plan, max_size)
    client = docker_client()
    ids, names = [], []
    try:
        with open(path, "rb") as fh:
            for chunk in client.api.load_image(fh, quiet=True):
                if "errorDetail" in chunk or "error" in chunk:
                    detail = chunk.get("errorDetail", {}).get("message") or chunk.get("error") or "error"
                    raise RuntimeError(str(detail))
                line = str(chunk.get("stream", "")).strip()
                if line.startswith("Loaded image ID: "):
                    ids.append(line[len("Loaded image ID: "):])
                elif line.startswith("Loaded image: "):
                    names.append(line[len("Loaded image: "):])
    except Exception as exc:  # noqa: BLE001 - docker's refusal of the archive is the team's problem
        reason = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else exc.__class__.__name__
        raise _refused(f"docker could not load the image archive: {reason}") from None
    if names:  # cannot happen: the archive names nothing; if docker ever did, say so loudly
        log.error("docker load named %s for an archive without names (%s)", names, path)
        raise UploadError(500, f"docker gave the uploaded image the name(s) {', '.join(names)}; the upload "
                               "was refused and the organizer must check the server's images")
    if len(ids) != 1:
        raise _refused(f"docker loaded {len(ids)} images from the archive; submit exactly one")
    image = client.images.get(ids[0])
    try:
        loaded = _checked(image, max_size)
    except UploadError:
        # Removed only when nothing names it: the same content may be on the server already
        # under another name (an organizer's image), and `docker rmi ID` would delete a
        # singly-tagged image. Not forced, so an image a container uses stays too.
        try:
            image.reload()
            if not image.tags:
                client.images.remove(image.id)
        except Exception:  # noqa: BLE001 - best effort: an untagged leftover is harmless
            pass
        raise
    image.tag(SUBMISSIONS_REPOSITORY, tag=archive_sha256[:64])
    return loaded


def _checked(image: Any, max_size: int) -> LoadedImage:
    size = int(image.attrs.get("Size") or 0)
    if size > max_size:
        raise UploadError(413, f"the image is {size} bytes, more than the task's limit of {max_size}",
                          hint="make the image smaller")
    return LoadedImage(str(image.id), size)


def _allowed_registry(reference: str, registries: tuple[str, ...]) -> None:
    from sharedtask.images.dockerfile import registry_of

    host = registry_of(reference) or "docker.io"
    if host not in registries:
        allowed = ", ".join(registries) if registries else "no registry (serve --registry HOST:PORT)"
        raise UploadError(400, f"the image {reference!r} names the registry {host}; this server pulls from "
                               f"{allowed}", hint="upload the image instead (sharedtask submit without "
                               "--registry), or push it to the organizer's registry")


def named_image(reference: str, max_size: int, *, allow_local: bool = False,
                registries: tuple[str, ...] = ()) -> LoadedImage:
    """An image named in a registry, pulled; with ``allow_local`` an image already on the server.

    Why pull by default: a name alone must not let a team run an image that is on the
    server for another reason (another team's upload, the organizer's baselines). Why only
    from ``registries``: a pull makes dockerd connect to the host the name gives, so any
    other name would let a team point the organizer's daemon at a host of its choosing.
    """
    import docker

    from sharedtask.images.client import docker_client

    if not allow_local:
        _allowed_registry(reference, registries)  # before the daemon is asked anything
    client = docker_client()
    try:
        if not allow_local:
            raise docker.errors.ImageNotFound("local images are not offered")
        image = client.images.get(reference)
    except docker.errors.ImageNotFound:
        _allowed_registry(reference, registries)
        try:
            image = client.images.pull(reference)
        except Exception as exc:  # noqa: BLE001
            raise UploadError(400, f"the image {reference!r} is not on the server and cannot be pulled "
                                   f"({exc.__class__.__name__})", hint="push it to a registry the server reaches, "
                                   "or upload it (sharedtask submit without --registry)") from None
    except docker.errors.APIError as exc:
        raise UploadError(400, f"invalid image reference {reference!r} ({exc.__class__.__name__})") from None
    return _checked(image, max_size)
