"""Images travel by reference and id: the organizer ships them, a worker checks the id before a run.

The id is the sha256 of the image's configuration (``docker inspect``'s Id), which
names its content: a worker runs a job only on an image whose id is the organizer's,
whatever tag it found, loaded (``docker save`` archive, a path or an http(s) URL) or
pulled (a registry reference ``name@sha256:<manifest digest>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from sharedtask.errors import SharedTaskError

if TYPE_CHECKING:
    from sharedtask.executor.job import Job


def image_id(client: Any, reference: str) -> str:
    """The local image's id, or a clear error when it is not here (or the reference is malformed)."""
    from sharedtask.sandbox.runner import local_image

    return str(local_image(client, reference).id)


def save_archive(client: Any, reference: str, folder: Path) -> Path:
    """``docker save`` the image once into ``folder/<id hex>.tar`` (written as .part, then renamed)."""
    ident = image_id(client, reference)
    target = folder / f"{ident.split(':')[-1]}.tar"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    with open(part, "wb") as fh:
        for chunk in client.images.get(reference).save(named=True):
            fh.write(chunk)
    os.replace(part, target)
    return target


def push(client: Any, reference: str, registry: str) -> str:
    """Push the image to ``registry`` (``host:port``) and return ``host:port/name@sha256:...``.

    The registry keeps each layer once, by digest: a second image on the same base sends only
    its own layers, and a worker pulls only the layers it lacks (images/registry.py)."""
    image = client.images.get(reference)
    name = reference.split("/", 1)[-1] if "/" in reference and "." in reference.split("/")[0] else reference
    repo, _, tag = name.rpartition(":") if ":" in name.split("/")[-1] else (name, "", "latest")
    target = f"{registry}/{repo}"
    image.tag(target, tag=tag)
    digest = None
    for event in client.api.push(target, tag=tag, stream=True, decode=True):
        if event.get("error"):
            raise SharedTaskError(f"push of {reference} to {registry} failed: {event['error']}")
        digest = (event.get("aux") or {}).get("Digest") or digest
    if digest is None:
        raise SharedTaskError(f"push of {reference} to {registry} reported no digest")
    image.reload()
    if len(image.tags) > 1 and f"{target}:{tag}" != reference:  # the registry's name was only needed for the push: the daemon keeps its own names
        client.api.remove_image(f"{target}:{tag}", noprune=True)
    return f"{target}@{digest}"


def source_for(client: Any, *, registry: str | None = None, images_dir: Path | None = None,
               images_url: str | None = None) -> Callable[[str], str] | None:
    """How workers get an image they lack (a job's ``image_source``): pushed to ``registry`` and
    pulled by digest, or saved once to ``images_dir`` (served at ``images_url``) and named with
    the sha256 of the archive's bytes (``archive:<where>#sha256=<hex>``); None: they have it."""
    if registry:
        pushed: dict[str, str] = {}  # image id -> its reference: a re-run is not pushed again

        def by_layer(image: str) -> str:
            ident = image_id(client, image)
            if ident not in pushed:
                pushed[ident] = push(client, image, registry)
            return "registry:" + pushed[ident]
        return by_layer
    if images_dir:
        folder = images_dir.resolve()

        def archive(image: str) -> str:
            path = save_archive(client, image, folder)
            digest = archive_digest(path, image_id(client, image))
            where = f"{images_url.rstrip('/')}/{path.name}" if images_url else str(path)
            return f"archive:{where}#sha256={digest}"
        return archive
    return None


_digests: dict[tuple[str, int, int, int], str] = {}  # (path, inode, size, mtime) -> sha256, checked


def archive_digest(path: Path, ident: str) -> str:
    """The sha256 of the archive the coordinator sends, after checking that it is the image ``ident``:
    its ``manifest.json`` names one configuration whose sha256 is the id (docker load then checks
    every layer against that configuration). Why: a file already at ``DIR/<id>.tar`` was sent as
    it was, whoever put it there (issue 39). Hashed once per file version in this process."""
    import hashlib
    import json
    import tarfile

    from sharedtask.data.checksum import sha256

    st = path.stat()
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _digests:
        return _digests[key]
    try:
        with tarfile.open(path, "r:") as tar:
            manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
            (entry,) = manifest
            config = tar.extractfile(entry["Config"])
            assert config is not None
            config_sha = hashlib.sha256(config.read()).hexdigest()
    except (KeyError, ValueError, TypeError, AssertionError, tarfile.TarError) as exc:
        raise SharedTaskError(f"{path} is not a docker save archive of one image ({exc.__class__.__name__})",
                              hint="remove it: it is written again from the image") from None
    if f"sha256:{config_sha}" != ident:
        raise SharedTaskError(f"{path} holds image sha256:{config_sha[:12]}…, not {ident[:19]}…",
                              hint="remove it: it is written again from the image")
    _digests[key] = digest = sha256(path)
    return digest


def _load(client: Any, location: str, digest: str, limit: int, origin: Any, scratch: Path) -> None:
    """Fetch the archive to ``scratch`` (bounded), check its sha256 against the job's, then load it."""
    from sharedtask.executor.fetch import fetch_to

    scratch.mkdir(parents=True, exist_ok=True)
    part = scratch / f"image-{digest[:16]}-{os.getpid()}-{id(location)}.tar"
    try:
        got = fetch_to(location, part, limit, origin, "image archive")
        if got != digest:
            raise SharedTaskError(f"image archive {location[:200]} has sha256 {got[:12]}…, not the job's {digest[:12]}…: "
                                  "not loaded", hint="the archive changed after the job was made: ship it again")
        with open(part, "rb") as fh:
            client.images.load(fh)
    finally:
        part.unlink(missing_ok=True)


def ensure(job: Job, client: Any, origin: Any = None, scratch: Path | None = None) -> str:
    """A local reference to the job's image, checked by id; loads (after checking the archive's
    sha256, executor/fetch.py) or pulls it when missing."""
    import docker

    from sharedtask.executor.fetch import Origin

    for reference in (job.image, job.image_id):
        try:
            if client.images.get(reference).id == job.image_id:
                return reference
        except (docker.errors.ImageNotFound, docker.errors.APIError):
            continue
    source = job.image_source or ""
    kind, _, location = source.partition(":")
    try:
        if kind == "archive":
            location, _, digest = location.rpartition("#sha256=")
            _load(client, location, digest, _image_bound(job), origin or Origin(),
                  scratch or Path(os.environ.get("TMPDIR", "/tmp")))
        elif kind == "registry":
            from sharedtask.images.registry import check_pull

            check_pull(location, (origin or Origin()).registry)  # before the daemon is asked anything
            client.images.pull(location)
        else:
            raise SharedTaskError(f"image {job.image} ({job.image_id[:19]}…) is not on this worker and the job "
                                  "names no source", hint="ship images with --images-registry HOST:PORT or --images-dir DIR")
    except (docker.errors.APIError, OSError) as exc:
        raise SharedTaskError(f"image {job.image} could not be fetched from {source}: {exc}") from None
    try:
        got = client.images.get(location if kind == "registry" else job.image_id).id
    except docker.errors.ImageNotFound:
        got = "nothing with that id"
    if got != job.image_id:  # a registry's manifest, or a loaded archive's layers, not the organizer's
        raise SharedTaskError(f"image {job.image} from {source} is {got}, not the organizer's {job.image_id}",
                              hint="the archive or registry holds another build: ship the image again")
    return job.image_id


def _image_bound(job: Job) -> int:
    """Bytes of an image archive a worker reads at most: the task's ``max_image``."""
    from sharedtask.spec import load_task
    from sharedtask.units import parse_size

    return parse_size(load_task(job.task).sandbox.max_image)


__all__ = ["archive_digest", "ensure", "image_id", "push", "save_archive"]
