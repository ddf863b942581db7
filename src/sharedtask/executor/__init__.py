"""Where sandboxed runs happen: one seam, several backends (docs/distributed.md).

    from sharedtask.executor import Job, executor_for
    executor = executor_for(broker="redis://127.0.0.1:6379/0")   # or executor_for(parallel=4)
    handle = executor.submit(job, run_dir, input_dir=dataset_input)
    result = handle.result()          # JobResult: state, status, message, worker, validation, record

Backends: :class:`LocalExecutor` (a pool on this machine, the default),
:class:`~sharedtask.executor.remote.CeleryExecutor` (``sharedtask worker`` processes
on any machines), and :mod:`sharedtask.executor.kubernetes` (manifests only).
"""

from __future__ import annotations

from typing import Any

from sharedtask.executor.base import Executor, Handle, JobResult
from sharedtask.executor.job import DatasetRef, Job
from sharedtask.executor.local import LocalExecutor

__all__ = ["DatasetRef", "Executor", "Handle", "Job", "JobResult", "LocalExecutor", "executor_for"]


def executor_for(broker: str | None = None, *, parallel: int = 1, queue: str | None = None,
                 **options: Any) -> Any:
    """The Celery backend when a broker URL is given, else the local pool of ``parallel`` runs."""
    if broker:
        from sharedtask.executor.celery_app import DEFAULT_QUEUE
        from sharedtask.executor.remote import CeleryExecutor

        return CeleryExecutor(broker, queue=queue or DEFAULT_QUEUE, **options)
    return LocalExecutor(parallel)
