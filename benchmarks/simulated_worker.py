"""A compute worker with a SIMULATED SANDBOX (NO CONTAINER), for benchmarks/service_scale.py only.

    python benchmarks/simulated_worker.py --broker URL --name NAME --work-dir DIR --run-file FILE

Everything is the real ``sharedtask worker`` (the Celery app and its settings, the closed job
schema, the image check by id, the dataset's checksums, :func:`sharedtask.sandbox.run` with
its validation of the output and its run record, the packing of the run folder into the
result backend) except one call: :func:`sharedtask.sandbox.runner.run_container`, which would
create, start and watch a container, is replaced in this process by
:func:`simulated_sandbox_run_container`. That writes the precomputed run file ``--run-file``
to ``$outputDir/run.txt`` and says "success", so a benchmark can drive thousands of
submissions through the service, the broker and the workers on two cores.

Why here and not in the package: nothing a user runs (``sharedtask worker``, ``serve``,
``demo``) can reach this replacement; it exists only in a process started from this file.
Unlike ``sharedtask worker`` it reaps no orphan containers at start (there are none of its
own, and other sessions' containers on a shared daemon are not its business).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

SIMULATED = "simulated sandbox (no container)"


def simulated_sandbox_run_container(run_file: Path):  # type: ignore[no-untyped-def]
    """A stand-in for ``run_container`` that copies ``run_file`` into the output folder: no container."""
    from sharedtask.sandbox.runner import SUCCESS, RunRequest, RunResult, _container_spec, _now

    def run_container(request: RunRequest, observer: Any | None = None, stop: Any | None = None) -> RunResult:
        start, t0 = _now(), time.monotonic()
        request.output_dir.mkdir(parents=True, exist_ok=True)
        request.log_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run_file, request.output_dir / "run.txt")
        stdout, stderr = request.log_dir / "stdout.log", request.log_dir / "stderr.log"
        stdout.write_text(f"{SIMULATED}\n")
        stderr.write_text("")
        spec = _container_spec(request)  # what the real run records (its reproduce line reads it)
        options = {**{k: v for k, v in spec.items() if k not in ("environment", "volumes", "labels")},
                   "simulated": SIMULATED}
        size = (request.output_dir / "run.txt").stat().st_size
        return RunResult(status=SUCCESS, message=SIMULATED, exit_code=0, started_at=start, ended_at=_now(),
                         wall_seconds=time.monotonic() - t0, image=request.image, image_id=request.image,
                         container_id="simulated", repo_digests=[], container_command=None,
                         container_entrypoint=None, command=request.command,
                         environment=spec.get("environment", {}), mounts={},
                         oom_killed=False, peak_memory=None, peak_memory_source=SIMULATED, output_bytes=size,
                         output_entries=1, output_enforcement=SIMULATED, output_disk_bytes=None, disk_bytes=None,
                         disk_enforcement=SIMULATED, stdout_path=stdout, stderr_path=stderr,
                         log_tail=[SIMULATED], log_truncated=False, container_options=options)

    return run_container


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--run-file", type=Path, required=True, help="the precomputed run every job 'writes'")
    parser.add_argument("--visibility-timeout", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()

    import sharedtask.sandbox.api as sandbox_api
    from sharedtask.executor import events
    from sharedtask.executor.celery_app import DEFAULT_QUEUE, WorkerConfig, start_worker

    # The one replacement: sandbox.api.run calls run_container by this module-level name.
    sandbox_api.run_container = simulated_sandbox_run_container(args.run_file.resolve())
    events.configure()
    events.emit("worker-started", worker=args.name, queue=DEFAULT_QUEUE, sandbox=SIMULATED)
    config = WorkerConfig(broker=args.broker, name=args.name, data_root=None, work_dir=args.work_dir.resolve(),
                          visibility_timeout=args.visibility_timeout)
    start_worker(config, queue=DEFAULT_QUEUE, concurrency=args.concurrency, loglevel="INFO")


if __name__ == "__main__":
    main()
