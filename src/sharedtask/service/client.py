"""The participant's side of the service: HTTP calls and the image upload (stdlib ``http.client``).

Every failure is one :class:`SharedTaskError` line: the server's own ``detail`` for a
refusal (401, 404, 413, ...), or why the server could not be reached.
"""

from __future__ import annotations

import hashlib
import http.client
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable
from urllib.parse import quote, urlencode, urlsplit

from sharedtask.errors import SharedTaskError

CHUNK = 1 << 20
Progress = Callable[[int], None]
#: seconds an upload may wait for the socket (one send, or the answer after the last byte:
#: the server checks and loads the image before it answers)
UPLOAD_TIMEOUT = 1800.0


class ServiceError(SharedTaskError):
    """The server refused a request; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Unreachable(SharedTaskError):
    """No answer from the server (stopped, restarting, the network): a waiting client tries again."""


@dataclass(frozen=True)
class Server:
    url: str
    token: str | None = None

    def _connection(self, timeout: float | None = 60) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SharedTaskError(f"invalid server URL {self.url!r}", hint="e.g. http://127.0.0.1:8000")
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname, parts.port, timeout=timeout)
        conn.connect()
        # headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm
        # holds the second until the server's delayed ACK (40 ms on Linux) comes back
        import socket

        if conn.sock is not None:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json", **(extra or {})}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _answer(self, conn: http.client.HTTPConnection) -> Any:
        response = conn.getresponse()
        raw = response.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")[:300]
        if response.status >= 400:
            detail = body.get("detail") if isinstance(body, dict) else body
            if not isinstance(detail, str):
                detail = json.dumps(detail)[:300]
            raise ServiceError(response.status, f"the server answered {response.status}: {detail}")
        return body

    def request(self, method: str, path: str, body: Any = None, *, timeout: float | None = 60) -> Any:
        """One JSON request; the decoded answer."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        try:
            conn = self._connection(timeout)
        except OSError as exc:
            raise Unreachable(f"cannot reach the server at {self.url} ({exc.__class__.__name__}: {exc})",
                              hint="is `sharedtask serve` running there?") from None
        try:
            conn.request(method, path, body=data,
                         headers=self._headers({"Content-Type": "application/json"} if data is not None else None))
            return self._answer(conn)
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(f"cannot reach the server at {self.url} ({exc.__class__.__name__}: {exc})",
                              hint="is `sharedtask serve` running there?") from None
        finally:
            conn.close()

    def preflight(self, task: str, tag: str | None, size: int | None, phase: str | None = None,
                  input_run: str | None = None) -> Any:
        """Would the server accept a submission now (token, dates, quota, tag, size, phase, first stage)?
        Raises why not."""
        query = {k: str(v) for k, v in (("tag", tag), ("size", size), ("phase", phase), ("input_run", input_run))
                 if v}
        return self.request("GET", f"/api/tasks/{quote(task, safe='')}/submissions/preflight"
                                   + (f"?{urlencode(query)}" if query else ""))

    def upload(self, path: str, source: BinaryIO, size: int, sha256: str, progress: Progress | None = None) -> Any:
        """POST a file of ``size`` bytes announced with its sha256; the server checks both."""
        try:
            conn = self._connection(timeout=UPLOAD_TIMEOUT)
        except OSError as exc:
            raise SharedTaskError(f"cannot reach the server at {self.url} ({exc.__class__.__name__}: {exc})",
                                  hint="is `sharedtask serve` running there?") from None
        try:
            conn.putrequest("POST", path)
            for key, value in self._headers({"Content-Type": "application/x-tar", "Content-Length": str(size),
                                             "X-Image-Sha256": sha256}).items():
                conn.putheader(key, value)
            conn.endheaders()
            try:
                while chunk := source.read(CHUNK):
                    conn.send(chunk)
                    if progress:
                        progress(len(chunk))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server refused early (e.g. 413): its answer says why
            return self._answer(conn)
        except OSError as exc:
            raise SharedTaskError(f"the upload to {self.url} failed ({exc.__class__.__name__}: {exc})") from None
        finally:
            conn.close()


def save_image(image: str, target: Path, progress: Progress | None = None) -> tuple[int, str]:
    """``docker save IMAGE`` into ``target``; its size and sha256."""
    import docker

    from sharedtask.images.client import docker_client

    client = docker_client()
    sha, size = hashlib.sha256(), 0
    try:
        stream = client.api.get_image(image)
        with open(target, "wb") as fh:
            for chunk in stream:
                fh.write(chunk)
                sha.update(chunk)
                size += len(chunk)
                if progress:
                    progress(len(chunk))
    except docker.errors.ImageNotFound:
        raise SharedTaskError(f"no local image {image!r}", hint="build it first (docker build -t NAME .)") from None
    except docker.errors.APIError as exc:
        raise SharedTaskError(f"docker could not save {image!r}: {exc.explanation or exc}") from None
    return size, sha.hexdigest()


def submission_path(task: str, command: str | None, tag: str | None, phase: str | None = None,
                    input_run: str | None = None) -> str:
    query = {k: v for k, v in (("command", command), ("tag", tag), ("phase", phase), ("input_run", input_run)) if v}
    return f"/api/tasks/{quote(task, safe='')}/submissions" + (f"?{urlencode(query)}" if query else "")
