"""The fixtures every test of the service shares, in one place.

``in_thread`` serves the real app (:func:`service_helpers.service_app`: a migrated SQLite or
PostgreSQL database, uvicorn on loopback) in a thread of the test process; only the run queue is
replaced, so nothing runs in Docker. The tests that need Docker start a real server process
instead (:func:`service_helpers.start_server`).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from service_helpers import RecordingExecutor, ThreadServer, service_app
from service_helpers import database, images, postgres_server  # noqa: F401 - fixtures for every service test


@dataclass
class InThread:
    """A served app: its URL, its sessions, the queue it fills, its state and the tokens made for it
    (``"org"``, then one per team name)."""

    url: str
    factory: Any
    runs: RecordingExecutor
    state: Any
    tokens: dict[str, str]


@pytest.fixture
def in_thread(tmp_path: Path) -> Iterator[Callable[..., InThread]]:
    """``start(database_url, *team_names, data_dir=..., **ServiceConfig fields)``: the app served
    until the test ends (``data_dir`` defaults to the test's folder)."""
    with ExitStack() as stack:
        def start(database_url: str, *teams: str, data_dir: Path | None = None, **config: Any) -> InThread:
            made = service_app(database_url, *teams, data_dir=data_dir or tmp_path, **config)
            stack.callback(made.engine.dispose)
            server = stack.enter_context(ThreadServer(made.app))
            return InThread(server.url, made.factory, made.runs, made.app.state.service, made.tokens)

        yield start
