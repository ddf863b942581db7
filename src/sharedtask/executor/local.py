"""The embedded default: jobs run on this machine, in a pool of N parallel sandboxed runs.

With one slot a job runs in the caller's thread when its result is asked for, exactly
as ``sharedtask demo`` always ran (Ctrl-C reaches the run and stops its container).
With more, a thread per slot: a sandboxed run mostly waits on its container, so
threads suffice; on Ctrl-C the containers this process started are killed.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.executor.base import JobResult, execute_in, landed
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
            self._result = self._future.result(timeout) if self._future is not None else self._run()
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

    def submit(self, job: Job, run_dir: Path, *, input_dir: Path | None = None,
               observer: Any | None = None, resume: bool = False, input_run: Path | None = None) -> LocalHandle:
        if input_dir is None:
            raise SharedTaskError(f"job {job.id}: the local executor needs the dataset's folder")
        previous = landed(run_dir, job) if resume else None

        def run() -> JobResult:
            if previous is not None:
                return previous
            handle._running.set()
            remove_tree(run_dir)  # a previous run's output: any depth, links not followed
            try:
                return execute_in(job, input_dir, run_dir, job.image, worker=self.worker, observer=observer,
                                  input_run=input_run)
            except SharedTaskError as exc:
                return JobResult(job.id, FAILED, "error", str(exc), self.worker, run_dir=run_dir)

        handle = LocalHandle(job, run_dir, run, self.worker)
        if previous is not None:
            handle._result = previous
        elif self._pool is not None:
            handle._future = self._pool.submit(run)
            self._futures.append(handle._future)
        return handle

    def close(self, interrupted: bool = False) -> None:
        """Stop the pool; on an interrupt kill the containers this process started until every run
        has ended (a run that was still creating its container when Ctrl-C came is caught next round)."""
        if self._pool is None:
            return
        if interrupted:
            self._pool.shutdown(wait=False, cancel_futures=True)
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
