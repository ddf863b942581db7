"""Submitted images: a ``docker save`` archive checked, cleaned of its names and loaded once.

Why cleaned: ``docker load`` applies the tags written in the archive (``manifest.json``'s
``RepoTags`` and the legacy ``repositories`` file). A team could otherwise name its
image ``sharedtask/base:latest`` and replace the organizer's. The archive is copied
member by member without them, which also proves it is a complete tar (a truncated or
corrupt one fails here, before anything is loaded or queued). Layout of the archive:
the Docker image specification, "Combined Image JSON + Filesystem Changeset Format"
(moby/moby, image/spec/v1.2.md).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sharedtask.errors import SharedTaskError

CHUNK = 1 << 20


class UploadError(SharedTaskError):
    """An upload that is refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


@dataclass(frozen=True)
class LoadedImage:
    docker_id: str
    size: int


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


def _safe_member(member: tarfile.TarInfo) -> None:
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts:
        raise UploadError(400, f"corrupt image archive: member {member.name!r} leaves the archive")
    if not (member.isfile() or member.isdir() or member.issym()):
        raise UploadError(400, f"corrupt image archive: member {member.name!r} is not a file, folder or link")


def _without_names(data: bytes, name: str) -> bytes:
    """``manifest.json`` with every ``RepoTags`` emptied; ``index.json`` without ref annotations."""
    try:
        doc: Any = json.loads(data)
    except ValueError:
        raise UploadError(400, f"corrupt image archive: {name} is not JSON") from None
    if name == "manifest.json":
        if not isinstance(doc, list) or not doc or not all(isinstance(m, dict) and "Config" in m for m in doc):
            raise UploadError(400, "corrupt image archive: manifest.json lists no image",
                              hint="send the output of `docker save IMAGE`")
        if len(doc) != 1:
            raise UploadError(400, f"the archive holds {len(doc)} images; submit exactly one")
        for entry in doc:
            entry["RepoTags"] = None
    elif isinstance(doc, dict):
        for entry in doc.get("manifests", []) or []:
            if isinstance(entry, dict):
                entry.pop("annotations", None)
    return json.dumps(doc).encode("utf-8")


def clean_archive(source: Path, target: Path) -> None:
    """Copy the archive without its image names; a corrupt or foreign archive is an :class:`UploadError`."""
    seen_manifest = False
    try:
        with tarfile.open(source, "r|") as tin, tarfile.open(target, "w|", format=tarfile.PAX_FORMAT) as tout:
            for member in tin:
                _safe_member(member)
                name = PurePosixPath(member.name).as_posix()
                if name == "repositories":
                    continue
                if name in ("manifest.json", "index.json") and member.isfile():
                    fh = tin.extractfile(member)
                    assert fh is not None
                    data = _without_names(fh.read(CHUNK * 4), name)
                    seen_manifest = seen_manifest or name == "manifest.json"
                    member.size = len(data)
                    tout.addfile(member, io.BytesIO(data))
                    continue
                tout.addfile(member, tin.extractfile(member) if member.isfile() else None)
    except tarfile.TarError as exc:
        target.unlink(missing_ok=True)
        raise UploadError(400, f"corrupt image archive: {exc}", hint="send the output of `docker save IMAGE`") from None
    except UploadError:
        target.unlink(missing_ok=True)
        raise
    if not seen_manifest:
        target.unlink(missing_ok=True)
        raise UploadError(400, "not an image archive: it has no manifest.json",
                          hint="send the output of `docker save IMAGE`")


#: Loaded submissions are tagged ``sharedtask-submissions:<sha256 of the archive>``: a name of
#: ours, so ``docker image prune`` (which removes untagged images) keeps them.
SUBMISSIONS_REPOSITORY = "sharedtask-submissions"


def load_archive(path: Path, max_size: int, archive_sha256: str) -> LoadedImage:
    """Load a cleaned archive into Docker and tag it; the loaded image must fit ``max_size`` too."""
    from sharedtask.dockerclient import docker_client

    client = docker_client()
    try:
        with open(path, "rb") as fh:
            images = client.images.load(fh)
    except Exception as exc:  # noqa: BLE001 - docker's refusal of the archive is the team's problem
        reason = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else exc.__class__.__name__
        raise UploadError(400, f"docker could not load the image archive: {reason}") from None
    if len(images) != 1:
        raise UploadError(400, f"the archive loaded {len(images)} images; submit exactly one")
    image = images[0]
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


def named_image(reference: str, max_size: int, *, allow_local: bool = False) -> LoadedImage:
    """An image named in a registry, pulled; with ``allow_local`` an image already on the server.

    Why pull by default: a name alone must not let a team run an image that is on the
    server for another reason (another team's upload, the organizer's baselines).
    """
    import docker

    from sharedtask.dockerclient import docker_client

    client = docker_client()
    try:
        if not allow_local:
            raise docker.errors.ImageNotFound("local images are not offered")
        image = client.images.get(reference)
    except docker.errors.ImageNotFound:
        try:
            image = client.images.pull(reference)
        except Exception as exc:  # noqa: BLE001
            raise UploadError(400, f"the image {reference!r} is not on the server and cannot be pulled "
                                   f"({exc.__class__.__name__})", hint="push it to a registry the server reaches, "
                                   "or upload it (sharedtask submit without --registry)") from None
    except docker.errors.APIError as exc:
        raise UploadError(400, f"invalid image reference {reference!r} ({exc.__class__.__name__})") from None
    return _checked(image, max_size)
