"""``serve --processes N``: N server processes forked by one supervisor, sharing its listening socket.

Why our own fork and not uvicorn's ``--workers``: uvicorn's supervisor starts its workers by
*spawning* and imports the app by name, so everything ``sharedtask serve`` decided (the
database, the tasks, the run pool) would have to travel through the environment. Forked after
the socket is bound and the database migrated (and before any thread or connection exists),
each child builds its own engine, app and locks from the same arguments. The kernel spreads
the accepted connections over the processes that wait on the one socket.

The supervisor does nothing but wait: a child that dies (a SIGKILL, an out-of-memory kill) is
replaced; a child that fails at its start is not (that would loop), and then the server stops.
SIGINT and SIGTERM are passed on to the children, which finish their requests and end.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import traceback
from typing import Callable

log = logging.getLogger("sharedtask.service")

#: a child that ends on its own with an error this soon after its start failed to start
START_SECONDS = 5.0


def supervise(count: int, child: Callable[[], int]) -> int:
    """Fork ``count`` children that each return ``child()`` as their exit code; replace the ones that die."""
    children: dict[int, float] = {}
    stopping = False

    def spawn() -> None:
        pid = os.fork()
        if pid == 0:  # the child: the default signal handlers (uvicorn installs its own)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = 1
            try:
                code = child()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - the child's last word, then its end
                traceback.print_exc()
            finally:
                os._exit(code)
        children[pid] = time.monotonic()

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for _ in range(count):
        spawn()
    failed = 0
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        started = children.pop(pid, None)
        if started is None or stopping:
            continue
        code = os.waitstatus_to_exitcode(status)
        if code > 0 and time.monotonic() - started < START_SECONDS:
            log.error("a server process ended with code %d at its start; stopping the others", code)
            failed = code
            stop(signal.SIGTERM, None)
            continue
        log.warning("server process %d ended (%s); starting another", pid,
                    f"signal {-code}" if code < 0 else f"code {code}")
        spawn()
    return failed
