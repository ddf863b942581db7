"""One docker SDK client per process, or one clear line on what to do."""

from __future__ import annotations

import os
from typing import Any

from sharedtask.errors import SharedTaskError

_CLIENT: Any = None


def _forget() -> None:
    """A forked child (``serve --processes``) makes its own client: the parent's keep-alive
    connection to dockerd is one socket, and two processes writing on it would mix their requests."""
    global _CLIENT
    _CLIENT = None


os.register_at_fork(after_in_child=_forget)


def docker_client() -> Any:
    """The shared client, without a read timeout.

    Log streams, ``wait`` and image builds block for as long as they run; the
    SDK's default 60 s read timeout would cut them off for quiet containers.
    """
    global _CLIENT
    if _CLIENT is None:
        import docker

        try:
            client = docker.from_env(timeout=None)
            client.ping()
        except Exception as exc:  # noqa: BLE001 - any failure means "no daemon"
            raise SharedTaskError(
                f"Docker is not running or not reachable ({exc.__class__.__name__})",
                hint="run `sharedtask docker-doctor --fix` (or `sudo bash docker/setup.sh`)",
            ) from None
        _CLIENT = client
    return _CLIENT
