"""The organizer's images server: the archives of ``--images-dir`` for workers, and nobody else.

Why (issue 39): any web server serving ``DIR`` gave a hidden stage's candidates to anyone,
by a public name (``GET /api/tasks/{task}/stages`` shows its sha256, ``stage-<sha>.tar`` is
its archive). This server answers only a request carrying the workers' token
(``Authorization: Bearer``, compared in constant time), serves only the names the coordinator
writes (``<64 hex>.tar``, ``stage-<64 hex>.tar``) from ``DIR`` itself, and streams them.
It must still not be reachable from the internet: bind it to the workers' network, and put
TLS in front of it (a reverse proxy) where that network is not private.
"""

from __future__ import annotations

import hmac
import re
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: the only names served: what images.save_archive and stages.pack_stage write
NAME = re.compile(r"/(?:stage-)?[0-9a-f]{64}\.tar")


def make_server(folder: Path, token: str, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server of ``folder`` for holders of ``token`` (not started: ``serve_forever`` it)."""
    if len(token) < 16:
        raise ValueError("the images token must be at least 16 characters")
    root, expected = folder.resolve(), f"Bearer {token}".encode()

    class Handler(BaseHTTPRequestHandler):
        server_version = "sharedtask-images"

        def do_GET(self) -> None:  # noqa: N802 - the http.server protocol
            given = self.headers.get("Authorization", "").encode("latin-1", "replace")
            if not hmac.compare_digest(given, expected):
                self.send_error(401, "a worker's token is needed")
                return
            if not NAME.fullmatch(self.path):
                self.send_error(404)
                return
            path = root / self.path[1:]
            try:
                source = open(path, "rb")
            except OSError:
                self.send_error(404)
                return
            with source:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-tar")
                self.send_header("Content-Length", str(path.stat().st_size))
                self.end_headers()
                shutil.copyfileobj(source, self.wfile, 1 << 20)

        def log_message(self, *_: object) -> None:  # quiet: one line per archive is noise
            pass

    return ThreadingHTTPServer((host, port), Handler)


def serve_in_thread(folder: Path, token: str, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """The server running in a daemon thread (tests, ``demo``); ``shutdown()`` stops it."""
    server = make_server(folder, token, host, port)
    threading.Thread(target=server.serve_forever, name="sharedtask-images", daemon=True).start()
    return server
