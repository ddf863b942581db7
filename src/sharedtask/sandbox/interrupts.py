"""One answer to an interrupt, wherever in its life a run is.

A run is stopped either in the thread that runs it (Ctrl-C; the CLI turns SIGTERM and
SIGHUP into the same KeyboardInterrupt) or from elsewhere, through a stop request (a
``threading.Event``): a local pool closing on Ctrl-C, a compute worker shutting down.
Both end the run the same way: status ``interrupted``, one line saying so, everything the
run made removed, and never an internal error, even when the stop request made the step
under way fail (a container removed while its writable layer was being bounded).

:func:`step` names the places of a run's life where a stop request is looked at, and where
a test holds a run (:data:`BARRIER_ENV`) to interrupt it there, at a known step, without
waiting for time.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

#: The steps of a run, in order (docs/threat-model.md, "Interrupts").
STEPS = ("image", "output-fs", "create", "layer", "start", "logs", "watch", "validation", "landing")
#: ``STEP:FOLDER``: at STEP a run writes ``FOLDER/STEP.reached`` and waits for ``FOLDER/STEP.go``
#: (tests only: they interrupt while the run is held there).
BARRIER_ENV = "SHAREDTASK_TEST_BARRIER"
BARRIER_BOUND = 600.0  # s a barrier waits at most (a test that died must not hang a worker)
MESSAGE = "stopped by the user (Ctrl-C or a signal)"


class Interrupted(KeyboardInterrupt):
    """A run stopped before it had a container (nothing of it is kept), or a stop request seen
    at a step. A KeyboardInterrupt, so every caller that answers Ctrl-C answers this too."""


def stopping(stop: threading.Event | None) -> bool:
    """Whether a stop request has been made for the run."""
    return stop is not None and stop.is_set()


def step(name: str, stop: threading.Event | None = None) -> None:
    """Enter step ``name``: stop if a stop request was made, then hold at a test's barrier (so
    a test's interrupt lands while the step's own work is still to come)."""
    if stopping(stop):
        raise Interrupted(MESSAGE)
    barrier(name)


def barrier(name: str) -> None:
    """Wait at ``name`` while a test asks for it (:data:`BARRIER_ENV`); otherwise nothing."""
    wanted, _, folder = os.environ.get(BARRIER_ENV, "").partition(":")
    if wanted != name or not folder:
        return
    base = Path(folder)
    (base / f"{name}.reached").write_text(f"{os.getpid()} {threading.current_thread().name}\n", encoding="utf-8")
    deadline = time.monotonic() + BARRIER_BOUND
    while not (base / f"{name}.go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)  # the poll of a file the test writes, not a wait for time
