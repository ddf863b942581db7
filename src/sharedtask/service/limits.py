"""Bounded request bodies: nothing is read past a few kilobytes unless the route streams an upload.

Why: a 1.5 GB ``POST /login`` (no token needed) once took the server to 4.6 GB of memory,
because starlette reads a form or JSON body whole before anyone looks at it. Every request
but an image upload is refused with 413 as soon as its ``Content-Length`` says it is too
large (before a byte of it is read), or as soon as a chunked body passes the limit. The
image upload route streams its body to a spool with its own limit (the task's ``max_image``).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Awaitable, Callable, Protocol

from fastapi import HTTPException, Request
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

#: the largest body of a form or JSON request (a token, settings, a team name, an image name)
BODY_LIMIT = 64 * 1024

#: routes that stream large bodies themselves: (method, path pattern)
STREAMING = (("POST", re.compile(r"/api/tasks/[^/]+/submissions")),
             # a first stage's run file, bounded by the task's run size (web/stages.py)
             ("PUT", re.compile(r"/api/tasks/[^/]+/stages/[^/]+")))

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
        if scope["type"] != "http" or any(scope["method"] == m and p.fullmatch(scope["path"]) for m, p in STREAMING):
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


#: a chunk of a streamed body must arrive within this many seconds, or the upload is dropped
UPLOAD_IDLE_SECONDS = 120.0
#: the body arrives in pieces of about 64 KB; they go to the spool a MiB at a time, because each
#: write is a trip to the thread pool, and under a crowd each trip waits behind the other
#: requests' (a 2 MB upload waited 32 times: 2-3 s; benchmarks/service.py)
SPOOL_BATCH = 1024 * 1024


class Spooler(Protocol):
    """Where a streamed body goes (:class:`sharedtask.service.uploads.Spool`)."""

    def write(self, chunk: bytes) -> None: ...

    def discard(self) -> None: ...


async def stream_to(request: Request, spool: Spooler) -> None:
    """The body of a streaming route into ``spool``; on any failure the spool is discarded.

    No session and no transaction is open meanwhile, and each chunk must come within
    ``UPLOAD_IDLE_SECONDS``: a stalled client cannot hold a spool or a slot for ever.
    """
    stream = request.stream().__aiter__()
    pending: list[bytes] = []
    pending_size = 0
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(stream.__anext__(), UPLOAD_IDLE_SECONDS)
            except StopAsyncIteration:
                break
            except asyncio.TimeoutError:
                raise HTTPException(408, f"no data for {UPLOAD_IDLE_SECONDS:.0f} s: the upload was dropped; "
                                         "nothing was stored") from None
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size >= SPOOL_BATCH:
                await run_in_threadpool(spool.write, b"".join(pending))
                pending, pending_size = [], 0
        if pending_size:
            await run_in_threadpool(spool.write, b"".join(pending))
    except ClientDisconnect:
        spool.discard()
        raise HTTPException(400, "the upload was interrupted; nothing was stored") from None
    except BaseException:
        spool.discard()
        raise


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
