"""An uploaded ``docker save`` archive checked member by member and written again by us: only our
own manifest, the image config and the layers reach dockerd; each layer's expanded size is
counted before any load (see the package's docstring for why)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from sharedtask.service.uploads.bounds import (CHUNK, CONFIG_NAME, MAX_CONFIG, MAX_LAYERS, MAX_MANIFEST, MAX_MEMBERS,
                                               MAX_NAME, UploadError, refused)
from sharedtask.service.uploads.tar import KINDS, Cut, Entry, Reader, entries


@dataclass(frozen=True)
class _Member:
    offset: int
    size: int
    folder: bool


@dataclass(frozen=True)
class Plan:
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
        raise refused(f"the image archive holds a member whose name is not UTF-8 ({raw[:100]!r})") from None
    if len(name) > MAX_NAME:
        raise refused(f"the image archive holds a member with a name of {len(name)} characters")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or ".." in parts:
        raise refused(f"corrupt image archive: member {name!r} leaves the archive "
                       "(an absolute name or one with '..')")
    if not parts:
        if folder:
            return None
        raise refused(f"corrupt image archive: a file named {name!r}")
    return "/".join(parts)


def _member_kind(entry: Entry) -> bool:
    """True for a folder, False for a regular file; any other member is refused by name."""
    if entry.sparse:
        raise refused(f"the image archive holds {entry.shown!r} as a sparse file; only regular files and "
                       "folders are accepted")
    if entry.flag in (b"0", b"\x00"):
        return False
    if entry.flag == b"5":
        return True
    kind = KINDS.get(entry.flag, f"a member of tar type {entry.flag!r}")
    raise refused(f"the image archive holds {entry.shown!r} as {kind}; only regular files and folders "
                   "are accepted")


def _read(fh: BinaryIO, member: _Member) -> bytes:
    fh.seek(member.offset)
    return fh.read(member.size)


def scan(path: Path) -> Plan:
    """Check the archive's members and its manifest; an :class:`UploadError` names what is wrong."""
    file_size = path.stat().st_size
    members: dict[str, _Member] = {}
    with open(path, "rb") as fh:
        reader = Reader(fh, seekable=True)
        try:
            for count, entry in enumerate(entries(reader, "image archive", strict_end=True), 1):
                if count > MAX_MEMBERS:
                    raise refused(f"the image archive has more than {MAX_MEMBERS} members")
                folder = _member_kind(entry)
                name = _normal(entry.name, folder)
                if name is None:
                    continue
                if name in ("manifest.json", "repositories", "index.json", "oci-layout") and folder:
                    raise refused(f"the image archive holds {name!r} as a folder; it must be a regular file")
                if name in members:
                    raise refused(f"the image archive holds {name!r} twice")
                if entry.offset + entry.size > file_size:
                    raise Cut()
                members[name] = _Member(entry.offset, entry.size, folder)
        except Cut:
            raise refused("corrupt image archive: it ends in the middle (the upload was cut, or it is not "
                           "a tar archive)") from None
        for name in members:  # a member under a file: docker's extraction would fail half-way
            parts = name.split("/")
            for depth in range(1, len(parts)):
                parent = members.get("/".join(parts[:depth]))
                if parent is not None and not parent.folder:
                    raise refused(f"the image archive holds {name!r} under {'/'.join(parts[:depth])!r}, "
                                   "which is a file")
        manifest_member = members.get("manifest.json")
        if manifest_member is None:
            raise refused("not an image archive: it has no manifest.json")
        if manifest_member.size > MAX_MANIFEST:
            raise refused(f"manifest.json is {manifest_member.size} bytes; a docker save manifest of one "
                           f"image is a few KB (at most {MAX_MANIFEST})")
        manifest = _read(fh, manifest_member)
        config_name, layers = _manifest_paths(manifest, members)
        config_member = members[config_name]
        if config_member.size > MAX_CONFIG:
            raise refused(f"the image config {config_name!r} is {config_member.size} bytes (at most {MAX_CONFIG})")
        config = _read(fh, config_member)
    diff_ids = _diff_ids(config, config_name, len(layers))
    return Plan(members, config_name, config, tuple(layers), tuple(diff_ids), manifest)


def _manifest_paths(raw: bytes, members: dict[str, _Member]) -> tuple[str, list[str]]:
    """The config and layer members of the manifest's one image; each must be a regular file."""
    try:
        doc: Any = json.loads(raw)
    except (ValueError, RecursionError):
        raise refused("corrupt image archive: manifest.json is not JSON") from None
    if not isinstance(doc, list) or not doc or not all(isinstance(m, dict) for m in doc):
        raise refused("corrupt image archive: manifest.json lists no image")
    if len(doc) != 1:
        raise refused(f"the archive holds {len(doc)} images; submit exactly one",
                       hint="send the output of `docker save IMAGE` for one image")
    entry = doc[0]
    config, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config, str) or not isinstance(layers, list) or not layers \
            or not all(isinstance(layer, str) for layer in layers):
        raise refused("corrupt image archive: manifest.json gives no Config file or no Layers")
    if len(layers) > MAX_LAYERS:
        raise refused(f"the image has {len(layers)} layers (at most {MAX_LAYERS})")

    def member(path: str, what: str) -> str:
        try:
            name = _normal(path.encode("utf-8"), False)
        except UploadError:
            raise refused(f"manifest.json names {path!r} as {what}, a path outside the archive") from None
        found = members.get(name or "")
        if found is None or found.folder:
            raise refused(f"manifest.json names {path!r} as {what}, but the archive has no such file")
        return str(name)

    return member(config, "the image config"), [member(layer, "a layer") for layer in layers]


def _diff_ids(raw: bytes, name: str, layers: int) -> list[str]:
    try:
        config: Any = json.loads(raw)
    except (ValueError, RecursionError):
        raise refused(f"corrupt image archive: the image config {name!r} is not JSON") from None
    rootfs = config.get("rootfs") if isinstance(config, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(
            isinstance(d, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", d) for d in diff_ids):
        raise refused(f"corrupt image archive: the image config {name!r} has no rootfs.diff_ids")
    if len(diff_ids) != layers:
        raise refused(f"corrupt image archive: the image config lists {len(diff_ids)} layers, manifest.json "
                       f"{layers}")
    return diff_ids


class Slice:
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


def _write(source: Path, plan: Plan, target: Path) -> None:
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
                add(name, member.size, Slice(fh, member.offset, member.size))


def clean_archive(source: Path, target: Path, max_size: int | None = None) -> None:
    """Check the archive member by member and write the one docker may load to ``target``.

    Everything refused is an :class:`UploadError` (400; 413 when ``max_size`` is given and
    the layers expand past it). ``target`` holds our ``manifest.json`` (no names), the
    image config and the layers, nothing else; it exists only when all checks passed.
    """
    source, target = Path(source), Path(target)
    try:
        plan = scan(source)
        if max_size is not None:
            measure(source, plan, max_size)
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
            raise refused(f"layer {self.name!r} is not valid gzip ({exc})") from None
        self.count += len(data)
        if self.before + self.count * self.references > self.limit:
            raise UploadError(413, f"the image's layers unpack to more than the task's limit of {self.limit} "
                                   "bytes", hint="make the image smaller: a multi-stage build, fewer files")
        self.sha.update(data)
        return data


#: Compressions some docker versions also unpack (moby pkg/archive DetectCompression), refused here.
_OTHER_COMPRESSIONS = ((b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))


def _layer_stream(raw: Slice, name: str) -> Any:
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
    raise refused(f"layer {name!r} is compressed with {what}; the server takes layers as plain tar or gzip",
                   hint="send the output of `docker save IMAGE`, whose layers are plain tar")


def measure(path: Path, plan: Plan, max_size: int) -> None:
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
            counted = _Counted(_layer_stream(Slice(fh, member.offset, member.size), name), name,
                               before=total, references=references[name], limit=max_size)
            reader = Reader(counted, seekable=False)  # type: ignore[arg-type]
            try:
                for entry in entries(reader, f"layer {name!r}", strict_end=False):
                    if entry.sparse:
                        raise refused(f"layer {name!r} holds {entry.shown!r} as a sparse file, which docker "
                                       "would expand to its full size",
                                       hint="rebuild the image with `docker build`, whose layers have no "
                                            "sparse entries")
                while reader.read(CHUNK):  # dockerd hashes what follows the tar's end too
                    pass
            except Cut:
                raise refused(f"layer {name!r} is not a complete tar archive") from None
            digest = "sha256:" + counted.sha.hexdigest()
            for position, (layer, expected) in enumerate(zip(plan.layers, plan.diff_ids), 1):
                if layer == name and expected != digest:
                    raise refused(f"layer {position} ({name!r}) does not match the image config: its sha256 is "
                                   f"{digest}, the config expects {expected}")
            total += counted.count * references[name]
