"""Names end where they end (issue 39): a tag, a team or a stage name with a final newline is refused.

Python's ``$`` also matches before a final newline, so ``^name$`` took ``teamA\\n`` as a name
beside ``teamA`` (docs.python.org/3/library/re.html). A real server (uvicorn in a thread) on
SQLite and PostgreSQL; only the executor is replaced (nothing runs here)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from service_helpers import (RecordingExecutor, TASK, ThreadServer, call, database,  # noqa: F401 - fixtures
                             perfect_run, postgres_server)
from sharedtask.service.app import ServiceConfig, create_app
from sharedtask.service.db import make_engine, migrate, sessions
from sharedtask.service.teams.tokens import create_team, organizer_token


@pytest.fixture
def served(tmp_path: Path, database: str):
    engine = make_engine(database)
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        org = organizer_token(session)
        _, team = create_team(session, "teamA")
    app = create_app(factory, RecordingExecutor(), ServiceConfig(data_dir=tmp_path / "data", task_ids=[TASK]))
    with ThreadServer(app) as server:
        yield server.url, org, team
    engine.dispose()


@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\t"])
def test_a_name_with_a_trailing_newline_or_space_is_refused_everywhere(served, tail):
    url, org, team = served
    quoted = urllib.parse.quote("run1" + tail)
    status, body = call(f"{url}/api/tasks/{TASK}/submissions/preflight?tag={quoted}", token=team)
    assert status == 422 and "invalid tag" in body["detail"], (status, body)
    assert call(f"{url}/api/tasks/{TASK}/submissions/preflight?tag=run1", token=team)[0] == 200

    status, body = call(f"{url}/api/teams", "POST", org, {"name": "teamA" + tail})
    assert status in (400, 422) and "invalid team name" in str(body), (status, body)
    teams = [t["team"] for t in call(f"{url}/api/teams", token=org)[1]]
    assert teams == ["teamA"]

    status, body = call(f"{url}/api/tasks/{TASK}/stages/{urllib.parse.quote('bm25' + tail)}", "PUT", org,
                        data=perfect_run("bm25").encode(), headers={"Content-Type": "text/plain"})
    assert status == 422 and "invalid stage name" in body["detail"], (status, body)
    assert call(f"{url}/api/tasks/{TASK}/stages")[1] in ([], {"stages": []}) or \
        "bm25" not in str(call(f"{url}/api/tasks/{TASK}/stages")[1])


@pytest.mark.parametrize("name", ["ann\n", "ann\r\n", "ann ", "ann!x", "-ann"])
def test_an_assessor_name_is_matched_whole(tmp_path: Path, name: str):
    """``serve --new-assessor`` shares the teams' alphabet: a name is refused unless all of it fits
    (``TEAM_NAME`` has no anchors, so ``match`` would take any valid prefix)."""
    from sharedtask.errors import SharedTaskError
    from sharedtask.service.assessment.people import create_assessor
    from sharedtask.service.db import sqlite_url

    engine = make_engine(sqlite_url(tmp_path / "service.db"))
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        with pytest.raises(SharedTaskError, match="invalid assessor name"):
            create_assessor(session, name)
        assert create_assessor(session, "ann")[0].name == "ann"
    engine.dispose()
