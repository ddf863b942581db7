"""``sharedtask worker``: a compute worker that takes run jobs from a Celery broker."""

from __future__ import annotations

import argparse
from pathlib import Path

from sharedtask.cli import LazyConsole, options
from sharedtask.errors import SharedTaskError

#: soft wrap: one event per line in a log file or journald, never cut at 80 columns
console = LazyConsole(highlight=False, stderr=True, soft_wrap=True)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "worker",
        help="a compute worker: take run jobs from a broker, run them sandboxed, send the outputs back",
        description=(
            "Runs on each machine that has Docker. Takes the jobs that `sharedtask demo --broker URL` "
            "enqueues, checks the image id and the dataset's checksums, runs each job with the same "
            "sandbox as `sharedtask run` and sends the run folder back through the result backend. "
            "Containers left by a worker that died on this machine are removed at start."
        ),
    )
    options.add_broker(parser, "take jobs from this Celery broker", required=True)
    parser.add_argument("--concurrency", type=int, default=1, metavar="N", help="parallel runs on this machine (default: 1)")
    parser.add_argument("--data-root", type=Path, metavar="DIR",
                        help="where datasets live: DIR/<dataset id>/input (besides the data store and the bundled samples)")
    parser.add_argument("--work-dir", type=Path, metavar="DIR",
                        help="scratch folder for runs before they are sent back (default: ~/.cache/sharedtask/worker)")
    parser.add_argument("--name", metavar="NAME", help="this worker's name in progress and run records (default: HOST-PID)")
    options.add_worker_images_origin(parser)
    parser.add_argument("--visibility-timeout", type=float, metavar="S",
                        help="Redis: a dead worker's job is delivered again after S seconds (default: 60)")
    limits = parser.add_argument_group("this worker's maxima (a job may ask for less than its task's limits, "
                                       "never for more than these)")
    limits.add_argument("--max-memory", metavar="SIZE", help="most memory a run may get here, e.g. 8g")
    limits.add_argument("--max-cpus", type=float, metavar="N", help="most CPUs a run may get here")
    limits.add_argument("--max-timeout", metavar="DURATION", help="longest wall-clock time of a run here, e.g. 2h")
    limits.add_argument("--max-pids", type=int, metavar="N", help="most processes of a run here")
    limits.add_argument("--max-output", metavar="SIZE", help="most bytes a run may write to $outputDir here")
    limits.add_argument("--max-disk", metavar="SIZE", help="most bytes a run may write to its container's disk here")
    parser.add_argument("--loglevel", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="Celery's log level (default: WARNING)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from sharedtask.images.client import docker_client
    from sharedtask.executor import events
    from sharedtask.executor.celery_app import (DEFAULT_QUEUE, DEFAULT_VISIBILITY, WorkerConfig, default_name,
                                                start_worker)
    from sharedtask.executor.fetch import Origin
    from sharedtask.executor.scratch import remove_stale
    from sharedtask.executor.remote import CeleryExecutor, redacted_url
    from sharedtask.resources import cache_root
    from sharedtask.sandbox.orphans import reap_orphans

    # Defaults resolved here, not in the parser: --help must not import Celery and the sandbox.
    args.queue = args.queue or DEFAULT_QUEUE
    if args.visibility_timeout is None:
        args.visibility_timeout = DEFAULT_VISIBILITY
    if args.concurrency < 1:
        raise SharedTaskError(f"--concurrency must be at least 1, not {args.concurrency}")
    if args.visibility_timeout <= 0:
        raise SharedTaskError(f"--visibility-timeout must be positive, not {args.visibility_timeout:g}")
    if args.images_registry:
        from sharedtask.images.registry import check_address

        check_address(args.images_registry)
    if args.data_root is not None and not args.data_root.is_dir():
        raise SharedTaskError(f"--data-root {args.data_root} is not a folder")
    options.check_broker_url(args.broker)
    policy = _policy(args)  # the user's mistakes before the machine's
    client = docker_client()  # one clear line when Docker is not there
    CeleryExecutor(args.broker, queue=args.queue)  # one clear line when the broker does not answer
    events.configure()
    reaped = reap_orphans(client)
    name = args.name or default_name()
    work = (args.work_dir or cache_root() / "worker").resolve()
    stale = remove_stale(work)
    console.print(f"[bold]sharedtask worker[/] {name}: queue {args.queue} on {redacted_url(args.broker)}, "
                  f"{args.concurrency} parallel run(s), scratch {work}")
    events.emit("worker-started", worker=name, queue=args.queue, broker=redacted_url(args.broker),
                concurrency=args.concurrency, scratch=str(work))
    if reaped:
        events.emit("orphans-removed", worker=name, count=len(reaped), containers=",".join(c[:12] for c in reaped))
    if stale:
        events.emit("scratch-removed", worker=name, count=len(stale), folders=",".join(f.name for f in stale))
    config = WorkerConfig(broker=args.broker, name=name,
                          data_root=args.data_root.resolve() if args.data_root else None,
                          work_dir=work, visibility_timeout=args.visibility_timeout, policy=policy,
                          origin=Origin.from_env(args.images_url, args.images_registry))
    start_worker(config, queue=args.queue, concurrency=args.concurrency, loglevel=args.loglevel)
    return 0


def _policy(args: argparse.Namespace):
    """The worker's own maxima from ``--max-*`` (each checked as ``sharedtask run`` checks it)."""
    from sharedtask.executor.admission import WorkerPolicy
    from sharedtask.sandbox.policy import parse_duration
    from sharedtask.units import parse_size

    for flag in ("max_cpus", "max_pids"):
        value = getattr(args, flag)
        if value is not None and not value > 0:
            raise SharedTaskError(f"--{flag.replace('_', '-')} must be positive, not {value:g}")
    size = lambda v, what: None if v is None else parse_size(v, what)  # noqa: E731
    return WorkerPolicy(memory=size(args.max_memory, "--max-memory"), cpus=args.max_cpus,
                        timeout=None if args.max_timeout is None else parse_duration(args.max_timeout),
                        pids=args.max_pids, max_output=size(args.max_output, "--max-output"),
                        disk=size(args.max_disk, "--max-disk"))
