"""A worker fetches what it loads only from the organizer, to disk, bounded, and checks it first.

Why (issue 39): a job in the broker could make a worker ``docker load`` any http URL before
the image id was compared (a victim tag moved), an image URL was read whole into memory
(a 1,024 MiB URL: 1 GB of worker RSS), and anyone answering a plain-HTTP fetch could send
anything. Now:

- an http(s) location must lie under the worker's own ``--images-url`` (the organizer's images
  server, :mod:`sharedtask.executor.images_server`), and is fetched with the worker's token
  (``SHAREDTASK_IMAGES_TOKEN``) as ``Authorization: Bearer``; anything else is refused
  before a byte is read;
- the bytes go to a file a MiB at a time, never more than ``limit``;
- their sha256 is returned, and the caller compares it with the job's before it loads anything.

A path (a folder shared by the coordinator and the workers) is read the same way.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from sharedtask.errors import SharedTaskError

TOKEN_ENV = "SHAREDTASK_IMAGES_TOKEN"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Origin:
    """Where this worker may fetch archives over the network: the organizer's images server."""

    url: str | None = None  # ``https://images.example/`` (``--images-url``); None: shared paths only
    token: str | None = None
    registry: str | None = None  # ``HOST[:PORT]`` (``--images-registry``); None: loopback registries only

    @classmethod
    def from_env(cls, url: str | None, registry: str | None = None) -> "Origin":
        return cls(url.rstrip("/") + "/" if url else None, os.environ.get(TOKEN_ENV) or None, registry)


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def open_location(location: str, origin: Origin, what: str):  # noqa: ANN201 - a binary stream
    """A readable stream of ``location``: a path, or a URL of the organizer's images server."""
    if not is_url(location):
        return open(location, "rb")
    if origin.url is None or not location.startswith(origin.url) or "/../" in location[len(origin.url) - 1:]:
        raise SharedTaskError(f"{what} {location[:200]} is not on this worker's images server "
                              f"({origin.url or 'none: start the worker with --images-url URL'})",
                              hint="a worker fetches archives only from the organizer's images server "
                                   "(sharedtask images-server), with its token in $" + TOKEN_ENV)
    request = urllib.request.Request(location, headers={"Authorization": f"Bearer {origin.token}"}
                                     if origin.token else {})
    return urllib.request.urlopen(request, timeout=60)  # noqa: S310 - the organizer's server, checked above


def fetch_to(location: str, target: Path, limit: int, origin: Origin, what: str) -> str:
    """Copy ``location`` to ``target`` (created, never replaced), at most ``limit`` bytes; its sha256."""
    digest, size = hashlib.sha256(), 0
    try:
        with open_location(location, origin, what) as source, open(target, "xb") as out:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise SharedTaskError(f"{what} {location[:200]} is over {limit} bytes: not read further")
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        raise SharedTaskError(f"{what} {location[:200]} could not be read on this worker: {exc}",
                              hint="ship archives with --images-dir on a shared folder, or serve them with "
                                   "`sharedtask images-server` and give workers --images-url") from None
    return digest.hexdigest()
