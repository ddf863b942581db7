"""Options that several commands share, declared once: a service's address and a team's
token (``submit``, ``status``), the broker's (``serve``, ``demo``, ``worker``), the place a
command writes to (``--output``), and the older names kept as hidden aliases.

Light on purpose: every command's parser is built for ``--help`` (tests/test_startup.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sharedtask.errors import SharedTaskError

if TYPE_CHECKING:
    from sharedtask.service.client import Server

#: The broker URLs Celery takes (docs/distributed.md).
BROKER_URLS = "redis://[:PASSWORD@]HOST:PORT/DB, rediss:// for TLS, or amqp://USER:PASSWORD@HOST//"


def add_server(parser: argparse.ArgumentParser) -> None:
    """``--server URL`` and ``--token T`` (default: $SHAREDTASK_TOKEN)."""
    parser.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000")
    parser.add_argument("--token", metavar="T", default=os.environ.get("SHAREDTASK_TOKEN"),
                        help="your team's token (default: $SHAREDTASK_TOKEN)")


def server(args: argparse.Namespace) -> Server:
    """The service named by ``--server``, spoken to with ``--token`` (one line when there is none)."""
    from sharedtask.service.client import Server

    if not args.token:
        raise SharedTaskError("no token given", hint="pass --token T or set SHAREDTASK_TOKEN")
    token = args.token.strip()
    # The service's tokens are secrets.token_urlsafe text (service/teams/tokens.py): a pasted
    # "Bearer st_...", quotes or a space inside are refused here, before a request is sent.
    # The token itself is not echoed: only where it goes wrong.
    bad = next((i for i, c in enumerate(token) if not (c.isascii() and (c.isalnum() or c in "_-"))), None)
    if bad is not None:
        raise SharedTaskError(f"invalid token: character {bad + 1} is {token[bad]!r}; a token is one word of "
                              "letters, digits, '_' and '-'", hint="pass it as the service printed it, e.g. --token st_...")
    return Server(server_address(args.server), token)


def server_address(url: str) -> str:
    """The server's base address; a URL with a path (a page, /openapi.json) is refused.

    Why: the client sends its requests to the host alone, so a path would be ignored while
    the printed page addresses carried it (the field test's ``--server http://host/openapi.json``).
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SharedTaskError(f"invalid server URL {url!r}: expected http(s)://HOST[:PORT]",
                              hint="e.g. --server http://127.0.0.1:8000")
    if parts.path.strip("/") or parts.query or parts.fragment:
        base = f"{parts.scheme}://{parts.netloc}"
        raise SharedTaskError(f"--server {url!r} names a page, not the server: expected http(s)://HOST[:PORT]",
                              hint=f"--server {base}")
    return f"{parts.scheme}://{parts.netloc}"


def add_broker(parser: argparse.ArgumentParser | argparse._ArgumentGroup, what: str, *,
               required: bool = False) -> None:
    """``--broker URL`` (``what`` says what the command does with it) and ``--queue NAME``."""
    parser.add_argument("--broker", required=required, metavar="URL", help=f"{what}: {BROKER_URLS}")
    parser.add_argument("--queue", metavar="NAME", help="the workers' queue (default: sharedtask)")


def add_image_shipping(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--images-registry HOST[:PORT]``, ``--images-dir DIR`` and ``--images-url URL``: how workers
    that lack an image get it (by layer from a registry, or as whole archives; images/registry.py)."""
    parser.add_argument("--images-registry", metavar="HOST[:PORT]",
                        help="with --broker: push each image to this registry; workers pull it by digest and fetch "
                             "only the layers they lack (serve: default a docker-registry it starts on loopback)")
    parser.add_argument("--images-dir", type=Path, metavar="DIR",
                        help="with --broker: `docker save` each image to DIR/<id>.tar for workers that lack it, "
                             "whole (readable by them at the same path, or served at --images-url); with "
                             "--images-registry only published stages go there")
    parser.add_argument("--images-url", metavar="URL",
                        help="with --broker: where workers fetch the archives of --images-dir (http(s)://.../)")


def add_worker_images_origin(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """A worker's ``--images-url URL`` and ``--images-registry HOST[:PORT]``: the same server and
    registry ``serve``/``demo`` name, seen from the worker's side, where they are the only places
    images are fetched from (whatever a job in the broker names)."""
    parser.add_argument("--images-url", metavar="URL",
                        help="the organizer's images server (sharedtask images-server): the only place this worker "
                             "fetches archives from over the network, with the token in $SHAREDTASK_IMAGES_TOKEN")
    parser.add_argument("--images-registry", metavar="HOST[:PORT]",
                        help="the organizer's registry: the only one this worker pulls images from (default: "
                             "registries on this machine's loopback only)")


def check_broker_url(url: str) -> None:
    """A broker URL Celery can use (BROKER_URLS); anything else is refused before Docker or
    Celery is asked: ``--broker notaurl`` was read by kombu as amqp://guest@notaurl, so a worker
    retried for ever and ``demo`` ended in a traceback."""
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme not in ("redis", "rediss", "amqp", "amqps") or not parts.hostname:
        raise SharedTaskError(f"invalid --broker {url!r}", hint=f"expected {BROKER_URLS}")


def check_broker(args: argparse.Namespace) -> None:
    """The broker options make sense together: the queue and the image shipping need a broker
    (a registry also serves ``demo --kubernetes``), the archives' URL needs their folder."""
    if args.broker:
        check_broker_url(args.broker)
    registry = args.images_registry and not getattr(args, "kubernetes", None)
    if not args.broker and (args.images_dir or args.images_url or args.queue or registry):
        raise SharedTaskError("--images-registry, --images-dir, --images-url and --queue need --broker URL")
    if args.images_url and not args.images_dir:
        raise SharedTaskError("--images-url needs --images-dir DIR (where the archives are written)")
    if args.images_registry:
        from sharedtask.images.registry import check_address

        check_address(args.images_registry)


def add_output(parser: argparse.ArgumentParser | argparse._ArgumentGroup, what: str, *, metavar: str = "DIR",
               required: bool = False, default: Path | None = None) -> None:
    """``--output PATH``: the one name of where a command writes (a folder, or a file for ``qrels``),
    with the older ``--out`` kept as a hidden alias that says the new name."""
    parser.add_argument("--output", type=Path, metavar=metavar, required=required, default=default, help=what)
    renamed_option(parser, "--out", "--output")


def renamed_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, new: str) -> None:
    """Keep ``old`` as a hidden spelling of the option ``new`` (declared before): it still works,
    prints a one-line notice of the new name on stderr, and ``--help`` shows only ``new``.

    Why: one name per idea across commands (``--output`` is where a command writes, ``--input`` a
    folder it reads, ``--dataset`` a registry id) without breaking scripts that use the old one.
    The old string is mapped to the very action of ``new`` (not a second action), so a required
    ``new`` given by its old name satisfies argparse, and both names set the same value.
    """
    # argparse has no public way to add an option string that help does not show; its map of option
    # strings to actions (shared by a parser and its argument groups) is what parsing reads.
    strings: dict[str, argparse.Action] = parser._option_string_actions
    if old in strings:
        raise ValueError(f"{old} is already an option")
    action = strings[new]
    if not hasattr(action, "renamed_from"):
        base = type(action)

        def call(self: argparse.Action, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
            if option_string in self.renamed_from:  # type: ignore[attr-defined]
                sys.stderr.write(f"sharedtask: {option_string} is now {new}; {option_string} still works for now\n")
            base.__call__(self, parser, namespace, values, new)

        action.__class__ = type(f"Renamed{base.__name__}", (base,), {"__call__": call})
        action.renamed_from = ()  # type: ignore[attr-defined]
    action.renamed_from = (*action.renamed_from, old)  # type: ignore[attr-defined]  # the help test: kept hidden
    strings[old] = action
