"""The HTTP application: the routers of :mod:`sharedtask.service.web` (the JSON API, documented at
``/openapi.json``, and the pages) over the service's state, and its run queue.

Who is asking is decided in ``web.common``; what the API and the pages both do is in the domain
modules (``submissions``, ``phases``, ``stages``, ...). At start-up, queued submissions and runs
cut off by a stop are resumed.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.errors import SharedTaskError
from sharedtask.service.db import writer_sessions
from sharedtask.service.limits import BodyLimit
from sharedtask.service.response_cache import answers_for
from sharedtask.service.runs import Runs, resume
from sharedtask.service.state import ServiceConfig, ServiceState, ensure_settings, task_of
from sharedtask.service.teams.signin import COOKIE
from sharedtask.service.uploads import UploadError, remove_stale_spools
from sharedtask.service.web import api, assessment, assessors, members, phases, site, stages, views

__all__ = ["COOKIE", "ServiceConfig", "create_app"]


async def _upload_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UploadError)
    return JSONResponse({"detail": str(exc)}, status_code=exc.status)


async def _user_error(_request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=400)


def _start(service: ServiceState) -> None:
    """Before the first request: a settings row for every task, and no spool of a killed upload.

    Spools are named ``uploads/<random>.tar`` and only live during a request; at start-up no
    request runs, so whatever is there was left by a server that was killed mid-upload.
    """
    with service.write_sessions()() as session:
        ensure_settings(session, list(service.known_tasks))
    for task_id in service.known_tasks:  # read here, in a thread: requests then find them in memory
        task_of(service, task_id)
    remove_stale_spools(service.config.data_dir / "uploads")


def create_app(sessions: sessionmaker[Session], runs: Runs, config: ServiceConfig) -> FastAPI:
    """The app over a migrated database."""
    from sharedtask.spec import task_ids

    service = ServiceState(sessions, runs, config, config.task_ids or task_ids(), writers=writer_sessions(sessions),
                           answers=answers_for(sessions.kw["bind"]))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[Any]:
        await run_in_threadpool(_start, service)
        start = getattr(runs, "start", None)  # runs.lease.LeasedRuns: resumes once it holds the lease
        await run_in_threadpool(start if start is not None else lambda: resume(sessions, runs))
        yield
        runs.shutdown()

    app = FastAPI(title="sharedtask submission service", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Teams submit images; the server runs them sandboxed on the hidden data, validates "
                              "and scores them; organizers publish leaderboards.")
    app.state.service = service
    app.add_middleware(BodyLimit)
    app.add_exception_handler(UploadError, _upload_error)
    app.add_exception_handler(SharedTaskError, _user_error)
    app.include_router(api.router)
    app.include_router(phases.router)
    app.include_router(stages.router)
    app.include_router(members.router)
    app.include_router(assessors.router)  # the organizer adds assessors and revokes their tokens
    app.include_router(assessment.router)  # assessors, run kinds, pools, campaigns (docs/assessment-service.md)
    app.include_router(site.router)  # before views: /organizer/tasks/{id}/phases is not an {action}
    app.include_router(views.router)
    return app
