"""SymPy proofs of ``a - b = 0`` in a worker process that is killed when it takes too long.

``sympy.simplify`` has no time bound of its own and may run for minutes on a small input;
a thread cannot be stopped, and a signal-based alarm works only in the main thread. So the
proof runs in one long-lived child process (started on first use, with SymPy imported
there, never in the caller): the caller waits at most ``timeout`` seconds for the answer,
and on time-out kills the child; the next call starts a new one. The trees it receives
were bounded by :mod:`sharedtask.answers.expressions` before they are sent.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from sharedtask.answers.expressions import ARITHMETIC, Tree, fold

START_TIMEOUT = 60.0  # spawning Python and importing SymPy: about a second, more on a loaded machine


def to_sympy(tree: Tree) -> Any:
    """The SymPy expression of a tree (in the worker: SymPy is imported here only)."""
    import sympy

    functions = {"sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "ln": sympy.log, "log": sympy.log,
                 "exp": sympy.exp}
    return fold(tree, {**ARITHMETIC,
                       "num": sympy.Rational,  # the decimal as written, exactly: 0.1 is 1/10
                       "var": sympy.Symbol, "pi": lambda: sympy.pi, "root": sympy.root, "fact": sympy.factorial,
                       "fn": lambda name, x: functions[name](x)})


def _is_zero(a: Tree, b: Tree) -> bool | None:
    import sympy

    difference = sympy.simplify(to_sympy(a) - to_sympy(b))
    return True if difference == 0 else None


def serve() -> None:
    """The worker's loop: one JSON line ``[a, b]`` in, ``true`` or ``null`` out, until stdin closes."""
    import sympy  # noqa: F401  (imported before "ready", so no comparison pays for it)

    print('"ready"', flush=True)
    for line in sys.stdin:
        try:
            a, b = json.loads(line)
            answer = _is_zero(a, b)
        except Exception:  # noqa: BLE001 - SymPy raises many kinds; a failed proof is no proof
            answer = None
        print(json.dumps(answer), flush=True)


class _Worker:
    """One child process (``python -c ...serve()``: no multiprocessing, whose spawn re-runs the
    caller's main script); lines go through pipes; a reply later than the timeout kills it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._owner = os.getpid()  # a forked caller (Celery's prefork pool) must not share the pipes
        self.unavailable = False  # the worker could not start (no SymPy): not tried again

    def _readline(self, timeout: float) -> str | None:
        assert self._process is not None and self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        return self._process.stdout.readline() if ready else None

    def _start(self) -> subprocess.Popen[str]:
        root = str(Path(__file__).resolve().parents[2])  # the folder holding the sharedtask package
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        self._process = subprocess.Popen(
            [sys.executable, "-c", "from sharedtask.answers.symbolic import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        if self._readline(START_TIMEOUT) != '"ready"\n':
            self.stop()
            self.unavailable = True
            raise TimeoutError("the SymPy worker did not start")
        return self._process

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            for pipe in (self._process.stdin, self._process.stdout):
                if pipe is not None:
                    pipe.close()
        self._process = None

    def is_zero(self, a: Tree, b: Tree, timeout: float) -> bool | None:
        """True when SymPy proves a = b within ``timeout`` seconds; None when it did not."""
        with self._lock:
            if self._owner != os.getpid():  # forked: the parent's worker is the parent's
                self._process, self._owner = None, os.getpid()
            if self.unavailable:
                return None
            try:
                process = self._process if self._process and self._process.poll() is None else self._start()
                assert process.stdin is not None
                process.stdin.write(json.dumps([a, b]) + "\n")
                process.stdin.flush()
                reply = self._readline(timeout)
                if reply:
                    return json.loads(reply) is True
            except (OSError, ValueError, TimeoutError):
                pass
            self.stop()  # too slow, or broken: killed, the next call starts afresh
            return None


_WORKER = _Worker()
atexit.register(_WORKER.stop)


def proves_equal(a: Tree, b: Tree, timeout: float) -> bool | None:
    """SymPy's ``simplify(a - b) == 0`` within ``timeout`` seconds (None: not proved in time)."""
    return _WORKER.is_zero(a, b, timeout)
