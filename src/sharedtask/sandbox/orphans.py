"""No container outlives the process that watches it.

Every sandbox container carries the label :data:`OWNER_LABEL` naming the
process that started it (host, pid and the pid's start time, so a reused pid
is not mistaken for the owner). The CLI turns SIGTERM/SIGHUP into the same
path as Ctrl-C, which kills and removes the container; a SIGKILL cannot be
caught, so every later run first removes the containers whose owner on this
host is gone (:func:`reap_orphans`). Creating and removing a container are held
against those signals (:func:`signals_held`), so no signal lands between the
daemon's answer and the moment we hold the container's id. See
docs/threat-model.md, "Orphans".
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

#: The signals the CLI turns into KeyboardInterrupt (Ctrl-C, kill, a closed terminal).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

OWNER_LABEL = "sharedtask.owner"
SANDBOX_LABEL = "sharedtask.sandbox"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = open(f"/proc/{pid}/stat", "rb").read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = stat[stat.rfind(b")") + 2:].split()
    return fields[19].decode() if len(fields) > 19 else None


@cache
def owner() -> str:
    """This process as the owner label's value: ``host/pid/start-time``."""
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{_start_time(pid) or '?'}"


def owner_alive(value: str) -> bool | None:
    """Whether the owner named by a label still runs; None when it cannot be told (other host)."""
    host, _, rest = value.partition("/")
    pid_text, _, started = rest.partition("/")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    return _start_time(int(pid_text)) == started


def reap_orphans(client: Any) -> list[str]:
    """Remove sandbox containers whose owning process on this host is gone; returns their ids."""
    import docker

    removed = []
    try:
        # The low-level list does not inspect each container (no race with auto-removal).
        containers = client.api.containers(all=True, filters={"label": [SANDBOX_LABEL, OWNER_LABEL]})
    except docker.errors.APIError:
        return removed
    for item in containers:
        value = (item.get("Labels") or {}).get(OWNER_LABEL, "")
        if owner_alive(value) is False:
            try:
                client.api.remove_container(item["Id"], force=True, v=True)
                removed.append(item["Id"])
            except docker.errors.APIError:
                continue  # removed by someone else in the meantime
    return removed


@contextmanager
def signals_held(signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Hold stop signals for the duration of the block, then deliver the first one that came.

    Why: docker's SDK creates a container in one request and inspects it in a second; a
    KeyboardInterrupt between the two leaves a container whose id nobody holds, and its owner
    is alive, so no reaper removes it either. Holding the signals makes "created" and "held by
    us" one step. A held signal goes to the handler that was there before (KeyboardInterrupt
    for the CLI, a warm shutdown for a Celery worker). Only the main thread receives signals in
    Python, so other threads run the block as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous: dict[int, Any] = {}
    for sig in signals:
        handler = signal.getsignal(sig)
        if handler is None:  # installed outside Python: it could not be put back
            continue
        previous[sig] = signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught:
            signum = caught[0]
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)
