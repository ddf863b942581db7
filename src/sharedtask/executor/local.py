"""The embedded default: jobs run on this machine, in a pool of N parallel sandboxed runs.

With one slot a job runs in the caller's thread when its result is asked for, exactly
as ``sharedtask demo`` always ran (Ctrl-C reaches the run and stops its container).
With more, a thread per slot: a sandboxed run mostly waits on its container, so
threads suffice; on Ctrl-C every run gets the pool's stop request and ends as interrupted
at whichever step it is (sandbox/interrupts.py), and the containers this process started
are killed so that a step blocked in docker ends sooner.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.executor.base import INTERRUPTED, JobResult, execute_in, interrupted_result, landed
from sharedtask.executor.job import FAILED, QUEUED, RUNNING, Job
from sharedtask.sandbox.outputs import remove_tree


class LocalHandle:
    """A job of the local pool: a future in the pool, or (a pool of one) a call made when asked."""

    def __init__(self, job: Job, run_dir: Path, run: Callable[[], JobResult], worker: str) -> None:
        self.job, self.run_dir, self._run, self.worker = job, run_dir, run, worker
        self._future: Future[JobResult] | None = None
        self._result: JobResult | None = None
        self._running = threading.Event()

    @property
    def lazy(self) -> bool:
        """Runs only when its result is asked for (a pool of one: in the caller's thread)."""
        return self._future is None and self._result is None

    def state(self) -> tuple[str, str | None]:
        if self.done():
            return self.result().state, self.worker
        return (RUNNING if self._running.is_set() else QUEUED), self.worker

    def done(self) -> bool:
        return self._result is not None or (self._future is not None and self._future.done())

    def result(self, timeout: float | None = None) -> JobResult:
        if self._result is None:
            if self._future is not None and self._future.cancelled():  # dropped by an interrupt, never ran
                self._result = interrupted_result(self.job, self.worker)
            elif self._future is not None:
                self._result = self._future.result(timeout)
            else:
                self._result = self._run()
                if self._result.status == INTERRUPTED:  # Ctrl-C reached the run in this thread: stop all
                    raise KeyboardInterrupt
        return self._result


class LocalExecutor:
    """``parallel`` sandboxed runs at a time on this machine's Docker daemon."""

    name = "local"

    def __init__(self, parallel: int = 1) -> None:
        if parallel < 1:
            raise SharedTaskError(f"--parallel must be at least 1, not {parallel}")
        self.parallel = parallel
        self.worker = f"{socket.gethostname()} (local)"
        self._pool = ThreadPoolExecutor(parallel, thread_name_prefix="sharedtask-job") if parallel > 1 else None
        self._futures: list[Future[JobResult]] = []
        #: set on an interrupt: every run of the pool ends as interrupted, at whichever step it is
        self.stop = threading.Event()

    def submit(self, job: Job, run_dir: Path, *, input_dir: Path | None = None,
               observer: Any | None = None, resume: bool = False, input_run: Path | None = None) -> LocalHandle:
        if input_dir is None:
            raise SharedTaskError(f"job {job.id}: the local executor needs the dataset's folder")
        previous = landed(run_dir, job) if resume else None

        def run() -> JobResult:
            if previous is not None:
                return previous
            if self.stop.is_set():
                return interrupted_result(job, self.worker)
            handle._running.set()
            remove_tree(run_dir)  # a previous run's output: any depth, links not followed
            try:
                return execute_in(job, input_dir, run_dir, job.image, worker=self.worker, observer=observer,
                                  input_run=input_run, stop=self.stop)
            except SharedTaskError as exc:
                if self.stop.is_set():  # the interrupt made the step fail: not the run's fault
                    remove_tree(run_dir)
                    return interrupted_result(job, self.worker)
                return JobResult(job.id, FAILED, "error", str(exc), self.worker, run_dir=run_dir)

        handle = LocalHandle(job, run_dir, run, self.worker)
        if previous is not None:
            handle._result = previous
        elif self._pool is not None:
            handle._future = self._pool.submit(run)
            self._futures.append(handle._future)
        return handle

    def interrupt(self) -> None:
        """Ask every run of the pool to stop (each ends as interrupted at the step it is in, and
        removes what it made), drop the queued ones, and kill the containers that run now."""
        self.stop.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            kill_own_containers()

    def close(self, interrupted: bool = False) -> None:
        """Stop the pool; on an interrupt, :meth:`interrupt` and wait until every run has ended
        (each run notices the stop within a sampling interval; the kills only make it sooner)."""
        if interrupted:
            self.interrupt()
        if self._pool is None:
            return
        if interrupted:
            while any(not f.done() for f in self._futures):
                kill_own_containers()
                time.sleep(0.2)
        self._pool.shutdown(wait=True)


def kill_own_containers() -> list[str]:
    """Kill the sandbox containers this process owns, or remove them when they have not started yet
    (their runs then end as failed, and the runner removes what is left)."""
    import docker

    from sharedtask.images.client import docker_client
    from sharedtask.sandbox.orphans import OWNER_LABEL, owner

    client = docker_client()
    stopped = []
    for item in client.api.containers(all=True, filters={"label": [f"{OWNER_LABEL}={owner()}"]}):
        try:
            if item.get("State") == "running":
                client.api.kill(item["Id"])
            else:
                client.api.remove_container(item["Id"], force=True, v=True)
            stopped.append(item["Id"])
        except docker.errors.APIError:
            continue  # ended or removed in the meantime
    return stopped
