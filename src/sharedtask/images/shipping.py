"""Images travel by reference and id: the organizer ships them, a worker checks the id before a run.

The id is the sha256 of the image's configuration (``docker inspect``'s Id), which
names its content: a worker runs a job only on an image whose id is the organizer's,
whatever tag it found, loaded (``docker save`` archive, a path or an http(s) URL) or
pulled (a registry reference ``name@sha256:<manifest digest>``).
"""

from __future__ import annotations

import os
import urllib.request
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
    """Push the image to ``registry`` (``host:port``) and return ``host:port/name@sha256:...``."""
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
    return f"{target}@{digest}"


def source_for(client: Any, *, registry: str | None = None, images_dir: Path | None = None,
               images_url: str | None = None) -> Callable[[str], str] | None:
    """How workers get an image they lack (a job's ``image_source``): pushed to ``registry`` and
    pulled by digest, or saved once to ``images_dir`` (served at ``images_url``); None: they have it."""
    if registry:
        return lambda image: "registry:" + push(client, image, registry)
    if images_dir:
        folder = images_dir.resolve()

        def archive(image: str) -> str:
            path = save_archive(client, image, folder)
            return "archive:" + (f"{images_url.rstrip('/')}/{path.name}" if images_url else str(path))
        return archive
    return None


def _load(client: Any, location: str) -> None:
    if location.startswith(("http://", "https://")):
        with urllib.request.urlopen(location, timeout=60) as response:  # noqa: S310 - organizer's URL
            client.images.load(response.read())
        return
    path = Path(location)
    if not path.is_file():
        raise SharedTaskError(f"image archive {path} is not on this worker")
    with open(path, "rb") as fh:
        client.images.load(fh)


def ensure(job: Job, client: Any) -> str:
    """A local reference to the job's image, checked by id; loads or pulls it when missing."""
    import docker

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
            _load(client, location)
        elif kind == "registry":
            client.images.pull(location)
        else:
            raise SharedTaskError(f"image {job.image} ({job.image_id[:19]}…) is not on this worker and the job "
                                  "names no source", hint="ship images with --images-dir or --registry")
    except (docker.errors.APIError, OSError) as exc:
        raise SharedTaskError(f"image {job.image} could not be fetched from {source}: {exc}") from None
    try:
        got = client.images.get(location if kind == "registry" else job.image_id).id
    except docker.errors.ImageNotFound:
        got = "nothing with that id"
    if got != job.image_id:
        raise SharedTaskError(f"image {job.image} from {source} is {got}, not the organizer's {job.image_id}",
                              hint="the archive or registry holds another build: ship the image again")
    return job.image_id


__all__ = ["ensure", "image_id", "push", "save_archive"]
