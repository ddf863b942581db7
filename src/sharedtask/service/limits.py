"""Bounded request bodies: nothing is read past a few kilobytes unless the route streams an upload.

Why: a 1.5 GB ``POST /login`` (no token needed) once took the server to 4.6 GB of memory,
because starlette reads a form or JSON body whole before anyone looks at it. Every request
but an image upload is refused with 413 as soon as its ``Content-Length`` says it is too
large (before a byte of it is read), or as soon as a chunked body passes the limit. The
image upload route streams its body to a spool with its own limit (the task's ``max_image``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Awaitable, Callable

from fastapi import HTTPException, Request

#: the largest body of a form or JSON request (a token, settings, a team name, an image name)
BODY_LIMIT = 64 * 1024

#: routes that stream large bodies themselves: (method, path pattern)
STREAMING = (("POST", re.compile(r"^/api/tasks/[^/]+/submissions$")),
             # a first stage's run file, bounded by the task's run size (stages_api.py)
             ("PUT", re.compile(r"^/api/tasks/[^/]+/stages/[^/]+$")))

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _TooLarge(Exception):
    pass


def _message(limit: int) -> bytes:
    return json.dumps({"detail": f"the request body is larger than {limit} bytes"}).encode()


async def _refuse(send: Send, limit: int) -> None:
    body = _message(limit)
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``limit`` bytes, except on :data:`STREAMING` routes."""

    def __init__(self, app: Any, limit: int = BODY_LIMIT) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or any(scope["method"] == m and p.match(scope["path"]) for m, p in STREAMING):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await _refuse(send, self.limit)
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except _TooLarge:
            if not started:
                await _refuse(send, self.limit)


async def bounded_body(request: Request, limit: int) -> bytes:
    """The whole body of a request on a streaming route that turned out to be small (JSON)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the request body is larger than {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"the request body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
