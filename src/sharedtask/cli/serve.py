"""``sharedtask serve``: the submission service (HTTP API + pages) over a database.

Also the organizer's own command line on the server: ``--new-organizer-token`` and
``--new-team NAME`` / ``--new-assessor NAME`` print a token and exit without starting the server.
Exit code 2 for a bad database URL, a port in use, an unknown task or a broker that does not answer.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any, Callable

from sharedtask.cli import LazyConsole, options

from sharedtask.errors import SharedTaskError

#: soft wrap: one event per line in a log file or journald, never cut at 80 columns
console = LazyConsole(highlight=False, soft_wrap=True)
DEFAULT_DIR = Path("sharedtask-service")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve",
        help="run the submission service: teams submit images, organizers publish leaderboards",
        description=(
            "Serve the submission service on HOST:PORT: teams submit images (sharedtask submit), the server "
            "runs each one sandboxed on the task's hidden dataset, validates and scores it, and shows it on the "
            "team's page; the organizer publishes leaderboards. The API is described at /openapi.json."
        ),
    )
    parser.add_argument("--db", metavar="URL",
                        help="database URL: sqlite:///FILE (default: DATA_DIR/service.db) or "
                             "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR, metavar="DIR",
                        help=f"where uploads and runs are kept (default: {DEFAULT_DIR})")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    options.add_broker(parser, "run submissions on compute workers (`sharedtask worker --broker URL` on any machine; "
                               "docs/distributed.md)")
    options.add_image_shipping(parser)
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="sandboxed runs at the same time in the local pool (default: 1); with --broker: "
                             "finished runs landed and scored at the same time")
    parser.add_argument("--processes", type=int, default=1, metavar="N",
                        help="server processes answering requests on one port and database (default: 1; "
                             "docs/operators.md: one per core)")
    parser.add_argument("--task", action="append", metavar="ID", dest="tasks",
                        help="accept submissions for this task (repeatable; default: every task)")
    parser.add_argument("--dataset", default="sample", metavar="NAME",
                        help="the dataset of tira.yml to run submissions on (default: sample)")
    parser.add_argument("--manifest", type=Path, metavar="FILE", help="tira.yml that declares the datasets")
    parser.add_argument("--max-upload", default="10g", metavar="SIZE",
                        help="largest image archive accepted, e.g. 2g (default: 10g; a task's max_image may be lower)")
    parser.add_argument("--daily-limit", type=int, metavar="N",
                        help="submissions per team and task per UTC day (default: no limit; per task: the API)")
    parser.add_argument("--allow-local-images", action="store_true",
                        help="let a submission name an image that is already on this server (demo, baselines)")
    parser.add_argument("--registry", action="append", metavar="HOST[:PORT]", dest="registries",
                        help="a registry teams may name images in (`submit --registry`; repeatable; docker.io for "
                             "Docker Hub); default none: images are uploaded")
    parser.add_argument("--blind", action="store_true",
                        help="teams see status, validity and scores but no logs and no finding details, which "
                             "could quote hidden test data (the organizer sees everything)")
    once = parser.add_mutually_exclusive_group()
    once.add_argument("--new-organizer-token", action="store_true", help="print a new organizer token and exit")
    once.add_argument("--new-team", metavar="NAME", help="create a team, print its token and exit")
    once.add_argument("--new-assessor", metavar="NAME",
                      help="create an assessor (judges pools, docs/assessment-service.md), print the token and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
    from sharedtask.service.teams.tokens import check_team_name, create_team, organizer_token
    from sharedtask.spec import load_task
    from sharedtask.units import parse_size

    if args.workers < 1:
        raise SharedTaskError(f"--workers {args.workers}: must be at least 1")
    if args.processes < 1:
        raise SharedTaskError(f"--processes {args.processes}: must be at least 1")
    options.check_broker(args)
    if not 0 < args.port < 65536:
        raise SharedTaskError(f"--port {args.port}: must be between 1 and 65535")
    for task_id in args.tasks or ():
        load_task(task_id)  # an unknown id is one line, before anything is written
    if args.new_team is not None:
        check_team_name(args.new_team)  # before a data folder or database is made
    max_upload = parse_size(args.max_upload, "--max-upload")
    if args.daily_limit is not None and args.daily_limit < 1:  # 0 would read as "no limit" further on
        raise SharedTaskError(f"--daily-limit {args.daily_limit}: must be at least 1",
                              hint="leave it out for no limit; to stop submissions, close the task or its phase")
    # a database named by --db is opened before anything is made: a wrong URL leaves no data folder
    engine = make_engine(args.db) if args.db else None
    data_dir: Path = args.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    engine = engine or make_engine(sqlite_url(data_dir / "service.db"))
    migrate(engine)
    factory = sessions(engine)
    if args.new_assessor is not None:
        from sharedtask.service.assessment.people import create_assessor

        with factory.begin() as session:
            token = create_assessor(session, args.new_assessor)[1]
        print(token)
        return 0
    if args.new_organizer_token or args.new_team is not None:  # "" is a (refused) name, not "serve"
        with factory.begin() as session:
            token = organizer_token(session) if args.new_organizer_token else create_team(session, args.new_team)[1]
        print(token)
        return 0
    from sharedtask.manifest import load_manifest
    from sharedtask.spec import task_ids

    manifest = load_manifest(args.manifest)
    if args.dataset != "sample":  # the hidden dataset must be declared for every task served
        for task_id in args.tasks or task_ids():
            manifest.dataset(load_task(task_id), args.dataset)
    from sharedtask.service.app import ServiceConfig, create_app
    from sharedtask.service.runs import RunSettings, make_runs

    if args.broker and args.images_registry:  # the organizer's registry answers, or one line, before the broker
        from sharedtask.images.registry import check_answers

        check_answers(args.images_registry)
    if args.broker:  # asked here, once: the run pool is made later, in the process that holds its lease
        from sharedtask.executor.remote import answering_redis

        client = answering_redis(args.broker)
        if client is not None:
            client.close()
    settings = RunSettings(data_dir=data_dir.resolve(), dataset=args.dataset, manifest=args.manifest)
    # decided once, before any fork: a registry started here lives as long as this (the supervising) process
    shipping = _image_shipping(args, data_dir) if args.broker else None
    stage_source = shipping[2] if shipping is not None else None
    config = ServiceConfig(data_dir=data_dir.resolve(), max_upload=max_upload,
                           daily_limit=args.daily_limit, allow_local_images=args.allow_local_images,
                           blind=args.blind, registries=tuple(args.registries or ()),
                           task_ids=list(args.tasks or ()), manifest=args.manifest,
                           dataset=args.dataset,
                           workers_lack_stages=bool(args.broker) and stage_source is None)
    def build_app() -> object:
        """The app of one server process, made in that process (after the fork of ``--processes``)."""
        from sharedtask.service.runs.lease import LeasedRuns

        def make_pool() -> Any:  # in the process that takes the run lease, with its own Docker client
            image_source = None
            if shipping is not None:
                from sharedtask.images.client import docker_client
                from sharedtask.images.shipping import source_for

                address, images_dir, _ = shipping
                image_source = source_for(docker_client(), registry=address, images_dir=images_dir,
                                          images_url=args.images_url)
            return make_runs(args.broker, factory, settings, args.workers, image_source, queue=args.queue,
                             stage_source=stage_source)

        return create_app(factory, LeasedRuns(factory, make_pool), config)

    engine.dispose()  # no connection crosses a fork: each process opens its own
    return _serve(build_app, args.host, args.port, args.processes)


def _image_shipping(args: argparse.Namespace, data_dir: Path) -> tuple[str | None, Path | None, object]:
    """How images and published stages reach the workers (images/registry.py, images/shipping.py):
    by layer from ``--images-registry`` or, by default, from a registry started here on loopback;
    as whole archives with ``--images-dir`` alone, or when no registry can be started (one line says so).
    (registry address, archive folder, stage source); each server process makes its image source from them."""
    from sharedtask.executor.stages import stage_source_for
    from sharedtask.images import registry
    from sharedtask.images.client import docker_client

    docker_client()  # Docker answers, or one line now (each process makes its own client after the fork)
    address, images_dir = args.images_registry, args.images_dir  # a given registry was asked in run()
    if not address and images_dir is None and registry.available():
        address = registry.start_local(data_dir / "registry").address
        console.print(f"images reach the workers by layer from the registry started at [bold]{address}[/] "
                      "(loopback: workers on this machine; others need --images-registry HOST:PORT they reach)")
    elif not address and images_dir is None:
        images_dir = data_dir / "images"
        console.print(f"images reach the workers as whole archives in {images_dir}: {registry.BINARY} is not "
                      "installed (apt-get install docker-registry, or --images-registry HOST:PORT, sends layers)")
    # published stages travel as archives of --images-dir, whatever carries the images
    return address, images_dir, stage_source_for(images_dir, args.images_url)


def _serve(build_app: Callable[[], object], host: str, port: int, processes: int = 1) -> int:
    import socket

    import uvicorn

    # Bind first: a port in use is the user's mistake (one line), not uvicorn's traceback.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: a response's headers and body are two writes, and
    # without it Nagle's algorithm holds the body until the client's delayed ACK (40 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SharedTaskError(f"cannot listen on {host}:{port}: {exc.strerror}",
                              hint="choose another --port or stop what uses it") from None
    service_log = logging.getLogger("sharedtask.service")
    service_log.setLevel(logging.INFO)
    if not service_log.handlers:  # its events (a stage made, a broker away) on stderr, with the time
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        service_log.addHandler(handler)
    many = f", {processes} processes" if processes > 1 else ""
    console.print(f"sharedtask service on [bold]http://{host}:{sock.getsockname()[1]}/[/] "
                  f"(pages: /, /team, /organizer; API: /openapi.json{many}); Ctrl-C stops it")

    def one() -> int:
        server = uvicorn.Server(uvicorn.Config(build_app(), log_level="warning", access_log=False))
        server.run(sockets=[sock])
        return 0

    if processes == 1:
        return one()
    from sharedtask.service.processes import supervise

    return supervise(processes, one)
