"""``sharedtask images-server``: serve ``--images-dir`` to compute workers that hold the token."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sharedtask.cli import LazyConsole
from sharedtask.errors import SharedTaskError

console = LazyConsole(highlight=False, stderr=True, soft_wrap=True)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "images-server",
        help="serve the image and stage archives of --images-dir to workers (token required)",
        description=("Serves DIR's <id>.tar and stage-<sha256>.tar, and nothing else, to requests carrying "
                     "the token in $SHAREDTASK_IMAGES_TOKEN (Authorization: Bearer). Workers get the same "
                     "variable and --images-url http://HOST:PORT/. Keep it on the workers' private network "
                     "(TLS in front of it elsewhere): it serves hidden stages."),
    )
    parser.add_argument("--dir", type=Path, required=True, metavar="DIR", help="the coordinator's --images-dir")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from sharedtask.executor.fetch import TOKEN_ENV
    from sharedtask.executor.images_server import make_server

    token = os.environ.get(TOKEN_ENV, "")
    if len(token) < 16:
        raise SharedTaskError(f"${TOKEN_ENV} must hold the workers' token (at least 16 characters)",
                              hint=f"export {TOKEN_ENV}=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    if not args.dir.is_dir():
        raise SharedTaskError(f"--dir {args.dir} is not a folder")
    server = make_server(args.dir, token, args.host, args.port)
    console.print(f"[bold]sharedtask images-server[/]: {args.dir.resolve()} at "
                  f"http://{args.host}:{server.server_address[1]}/ (token required)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
