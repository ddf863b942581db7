"""A cleaned archive loaded into Docker once, by id, and tagged in our own namespace only; an image
named in a registry pulled under the same checks."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharedtask.service.uploads.archive import measure, scan
from sharedtask.service.uploads.bounds import UploadError, refused

log = logging.getLogger("sharedtask.service")

#: Loaded submissions are tagged ``sharedtask-submissions:<sha256 of the archive>``: a name of
#: ours, so ``docker image prune`` (which removes untagged images) keeps them.
SUBMISSIONS_REPOSITORY = "sharedtask-submissions"


@dataclass(frozen=True)
class LoadedImage:
    docker_id: str
    size: int




def load_archive(path: Path, max_size: int, archive_sha256: str) -> LoadedImage:
    """Load an archive :func:`clean_archive` wrote, once its layers are known to fit ``max_size``.

    The image is addressed by its id only: the archive names nothing, docker's answer must
    name nothing but that id, and the one tag added is ours (``sharedtask-submissions``).
    """
    from sharedtask.images.client import docker_client

    path = Path(path)
    plan = scan(path)
    if not plan.written_by_us:
        raise ValueError(f"{path} was not written by clean_archive; only such an archive is given to docker")
    measure(path, plan, max_size)
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
        raise refused(f"docker could not load the image archive: {reason}") from None
    if names:  # cannot happen: the archive names nothing; if docker ever did, say so loudly
        log.error("docker load named %s for an archive without names (%s)", names, path)
        raise UploadError(500, f"docker gave the uploaded image the name(s) {', '.join(names)}; the upload "
                               "was refused and the organizer must check the server's images")
    if len(ids) != 1:
        raise refused(f"docker loaded {len(ids)} images from the archive; submit exactly one")
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
