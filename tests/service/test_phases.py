"""Phases of a task: set by the organizer, chosen at submission, limits exact under a race,
scores kept from teams while a phase says so, and an old database upgraded in place.

Every test runs on SQLite and on a real PostgreSQL (started by the tests on loopback). The
server runs in a thread with a recording executor (nothing is run: what is checked here is
admission and visibility); the races call the service's own admission
(:func:`sharedtask.service.submissions.admit`, what the upload route calls) from threads released
together at a barrier, against the real database.
"""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi import HTTPException
from sqlalchemy import func, select, text

from service_helpers import TASK, call
from sharedtask.service import submissions
from sharedtask.service.state import ServiceState
from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
from sharedtask.service.models import Image, Submission, Team, utcnow

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tasks" / "samples" / "touche-2021"


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    """A tira.yml that declares a second dataset of the task, as an organizer's hidden test data."""
    path = tmp_path / "tira.yml"
    path.write_text(f"version: 1\ntasks:\n  {TASK}:\n    datasets:\n"
                    f"      hidden: {{input: {SAMPLE / 'input'}, truth: {SAMPLE / 'truth'}}}\n")
    return path


@pytest.fixture
def service(database: str, manifest: Path, in_thread):
    s = in_thread(database, "team-a", "team-b", max_upload=64 * 1024, manifest=manifest)
    return s.url, s.factory, s.state, {"org": s.tokens["org"], "a": s.tokens["team-a"], "b": s.tokens["team-b"]}


def iso(delta: dt.timedelta) -> str:
    return (dt.datetime.now(dt.timezone.utc) + delta).isoformat()


DAY = dt.timedelta(days=1)


def put_phase(url: str, token: str, name: str, **values: Any) -> tuple[int, Any]:
    return call(f"{url}/api/tasks/{TASK}/phases/{name}", "PUT", token, {"dataset": "sample", **values})


def preflight(url: str, token: str, phase: str | None = None) -> tuple[int, Any]:
    query = f"?phase={phase}" if phase else ""
    return call(f"{url}/api/tasks/{TASK}/submissions/preflight{query}", token=token)


def team(factory, name: str) -> Team:
    with factory() as session:
        found = session.scalar(select(Team).where(Team.name == name))
        assert found is not None
        return found


def an_image(factory) -> int:
    with factory.begin() as session:
        image = Image(archive_sha256="a" * 64, docker_id="sha256:" + "b" * 64, size=1)
        session.add(image)
        session.flush()
        return image.id


def admit(state: ServiceState, who: Team, image_id: int, phase: str | None = None) -> int:
    """The service's admission (the upload route's last step): 201 or the refusal's status."""
    try:
        submissions.admit(state, who, TASK, image_id, "sha256:" + "b" * 64, None, None, phase)
        return 201
    except HTTPException as exc:
        return exc.status_code


def race(n: int, action: Any) -> list[Any]:
    barrier = threading.Barrier(n)

    def go(_: int) -> Any:
        barrier.wait()
        return action()

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(go, range(n)))


# ----------------------------------------------------------------------------- the organizer's calendar


def test_the_organizer_sets_phases_and_everyone_reads_the_calendar_in_order(service):
    url, _, _, tokens = service
    assert put_phase(url, tokens["org"], "test", dataset="hidden", opens=iso(DAY), closes=iso(3 * DAY),
                     scores_visible=False, total_limit=5, max_selected=2)[0] == 200
    status, dev = put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(DAY), daily_limit=3,
                            leaderboard_public=True)
    assert status == 200 and dev["state"] == "open" and dev["daily_limit"] == 3
    status, calendar = call(f"{url}/api/tasks/{TASK}/phases")  # anyone, no token
    assert status == 200 and [p["name"] for p in calendar] == ["dev", "test"]
    assert [p["state"] for p in calendar] == ["open", "upcoming"]
    assert calendar[1]["dataset"] == "hidden" and calendar[1]["scores_visible"] is False
    assert calendar[1]["max_selected"] == 2 and calendar[1]["total_limit"] == 5
    # changing a phase keeps one row
    assert put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(2 * DAY))[0] == 200
    assert len(call(f"{url}/api/tasks/{TASK}/phases")[1]) == 2


@pytest.mark.parametrize("name, values, status, words", [
    ("dev", {"opens": iso(DAY), "closes": iso(-DAY)}, 422, "before it opens"),
    ("dev", {"dataset": "no-such-data"}, 422, "no dataset 'no-such-data'"),
    ("a%20b", {}, 422, "invalid phase name"),
    ("dev", {"daily_limit": 0}, 422, "greater than or equal to 1"),
])
def test_a_bad_phase_is_refused_saying_why(service, name, values, status, words):
    url, _, _, tokens = service
    got, body = put_phase(url, tokens["org"], name, **values)
    assert got == status and words in str(body), body


def test_a_team_cannot_change_phases(service):
    url, _, _, tokens = service
    assert put_phase(url, tokens["a"], "dev")[0] == 403
    assert call(f"{url}/api/tasks/{TASK}/phases")[1] == []


# ----------------------------------------------------------------------------- which phase a submission goes to


def test_a_submission_goes_to_the_open_phase_or_is_refused_saying_which_opens_next(service):
    url, _, _, tokens = service
    assert preflight(url, tokens["a"])[1]["phase"] is None  # no phases: as before
    put_phase(url, tokens["org"], "test", opens=iso(DAY), closes=iso(2 * DAY))
    status, body = preflight(url, tokens["a"])
    assert status == 403 and "no phase" in body["detail"] and "test opens at" in body["detail"]
    put_phase(url, tokens["org"], "dev", opens=iso(-2 * DAY), closes=iso(-DAY))
    status, body = preflight(url, tokens["a"], "dev")
    assert status == 403 and "closed for submissions" in body["detail"]
    put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(DAY))
    status, body = preflight(url, tokens["a"])
    assert status == 200 and body["phase"]["name"] == "dev"
    put_phase(url, tokens["org"], "extra", opens=iso(-DAY))
    status, body = preflight(url, tokens["a"])
    assert status == 422 and "name one" in body["detail"]
    assert preflight(url, tokens["a"], "extra")[0] == 200
    assert preflight(url, tokens["a"], "nope")[0] == 404


@pytest.mark.parametrize("limit", ["total_limit", "daily_limit"])
def test_a_phase_limit_raced_by_twelve_parallel_submissions_admits_exactly_the_limit(service, limit):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "dev", opens=iso(-DAY), **{limit: 3})
    who, image_id = team(factory, "team-a"), an_image(factory)
    statuses = race(12, lambda: admit(state, who, image_id))
    assert sorted(statuses) == [201] * 3 + [429] * 9
    with factory() as session:
        stored = list(session.scalars(select(Submission).where(Submission.team_id == who.id)))
    assert len(stored) == 3 and {s.phase_name for s in stored} == {"dev"}
    assert admit(state, team(factory, "team-b"), image_id) == 201  # another team's quota is its own
    status, body = preflight(url, tokens["a"])
    assert status == 429 and ("total limit" if limit == "total_limit" else "resets at") in body["detail"]


def test_limits_count_per_phase(service):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "dev", opens=iso(-DAY), total_limit=1)
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), total_limit=1)
    who, image_id = team(factory, "team-a"), an_image(factory)
    assert [admit(state, who, image_id, p) for p in ("dev", "dev", "test", "test")] == [201, 429, 201, 429]


# ----------------------------------------------------------------------------- scores kept until the phase ends


def test_a_blind_phase_keeps_scores_from_teams_until_it_closes(service):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", dataset="hidden", opens=iso(-DAY), closes=iso(DAY), scores_visible=False)
    who, image_id = team(factory, "team-a"), an_image(factory)
    assert admit(state, who, image_id) == 201
    with factory.begin() as session:
        sub = session.scalar(select(Submission).where(Submission.team_id == who.id))
        sub.status, sub.scores, sub.per_topic = "done", {"ndcg5_official": 0.5}, {"1": {"ndcg5_official": 0.5}}
        sid = sub.id
    mine = call(f"{url}/api/submissions/{sid}", token=tokens["a"])[1]
    assert mine["phase"] == "test" and mine["scores"] is None and mine["status"] == "done"
    assert call(f"{url}/api/submissions", token=tokens["a"])[1][0]["scores"] is None
    status, page = call(f"{url}/submissions/{sid}", token=tokens["a"])
    assert status == 200 and "0.5" not in page
    assert call(f"{url}/api/submissions/{sid}", token=tokens["org"])[1]["scores"] == {"ndcg5_official": 0.5}
    with factory() as session:  # the stored row kept its scores: only the team's view is masked
        assert session.get(Submission, sid).scores == {"ndcg5_official": 0.5}
    put_phase(url, tokens["org"], "test", dataset="hidden", opens=iso(-2 * DAY), closes=iso(-DAY),
              scores_visible=False)
    assert call(f"{url}/api/submissions/{sid}", token=tokens["a"])[1]["scores"] == {"ndcg5_official": 0.5}


def test_a_blind_phase_keeps_the_evaluators_notes_and_per_topic_scores_from_teams_too(service):
    """Issue 39: ``scores: null`` but the evaluator's notes told which documents are judged."""
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", dataset="hidden", opens=iso(-DAY), closes=iso(DAY), scores_visible=False)
    who, image_id = team(factory, "team-a"), an_image(factory)
    leak = "4 qrels topic(s) without a judged document in the run's top 5: 1, 2, 3, 4"
    rerun = "re-run by the organizer at 2026-01-02T03:04:05"
    ids = []
    for _ in range(2):
        assert admit(state, who, image_id) == 201
    with factory.begin() as session:
        scored, broken = session.scalars(select(Submission).where(Submission.team_id == who.id)
                                         .order_by(Submission.id)).all()
        scored.status, scored.run_status, scored.valid = "done", "success", True
        scored.scores, scored.per_topic = {"ndcg5_official": 0.5}, {"1": {"ndcg5_official": 0.25}}
        scored.notes = [rerun, leak]
        broken.status, broken.run_status, broken.valid = "failed", "failed", None
        broken.notes = ["sandbox: the command exited with code 1"]
        ids = [scored.id, broken.id]
    mine = {s["id"]: s for s in call(f"{url}/api/submissions", token=tokens["a"])[1]}
    assert mine[ids[0]]["scores"] is None and mine[ids[0]]["notes"] == [rerun]
    assert call(f"{url}/api/submissions/{ids[0]}", token=tokens["a"])[1]["notes"] == [rerun]
    assert mine[ids[1]]["notes"] == ["sandbox: the command exited with code 1"]  # why it failed: no judgment
    status, page = call(f"{url}/submissions/{ids[0]}", token=tokens["a"])
    assert status == 200 and "without a judged document" not in page and "0.25" not in page
    assert call(f"{url}/api/submissions/{ids[0]}", token=tokens["org"])[1]["notes"] == [rerun, leak]
    put_phase(url, tokens["org"], "test", dataset="hidden", opens=iso(-2 * DAY), closes=iso(-DAY),
              scores_visible=False)
    assert call(f"{url}/api/submissions/{ids[0]}", token=tokens["a"])[1]["notes"] == [rerun, leak]


# ----------------------------------------------------------------------------- an old database


def test_a_database_of_the_first_schema_is_upgraded_in_place_keeping_its_submissions(database):
    """A service database made before phases (Alembic revision 0001) with a scored submission."""
    from alembic import command
    from alembic.config import Config
    from importlib.resources import files

    engine = make_engine(database)
    config = Config()
    config.set_main_option("script_location", str(files("sharedtask.service").joinpath("migrations")))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    now = utcnow()
    with engine.begin() as conn:
        conn.execute(text("insert into teams (id, name, organizer, created) values (1, 'old-team', false, :t)"),
                     {"t": now})
        conn.execute(text("insert into images (id, docker_id, size, created) values (1, 'sha256:x', 1, :t)"),
                     {"t": now})
        conn.execute(text("insert into submissions (id, team_id, task_id, image_id, image_name, tag, status, "
                          "attempts, created, scores) values (1, 1, :task, 1, 'sha256:x', 'old', 'done', 1, :t, "
                          "'{\"ndcg5_official\": 0.25}')"), {"task": TASK, "t": now})
    migrate(engine)
    factory = sessions(engine)
    with factory() as session:
        sub = session.get(Submission, 1)
        assert (sub.tag, sub.scores, sub.phase_id, sub.selected, sub.worker, sub.stage_id, sub.input_run) == (
            "old", {"ndcg5_official": 0.25}, None, False, None, None, None)


# ----------------------------------------------------------------------------- selected runs and the phase's board


def scored_runs(factory, state: ServiceState, who: Team, image_id: int, outcomes: list[float | None]) -> list[int]:
    """Admitted submissions, then finished as the executor would: a score, or failed (None)."""
    ids = []
    for value in outcomes:
        assert admit(state, who, image_id) == 201
        with factory.begin() as session:
            sub = session.scalars(select(Submission).where(Submission.team_id == who.id)
                                  .order_by(Submission.id.desc())).first()
            if value is None:
                sub.status, sub.run_status, sub.valid = "failed", "failed", None
            else:
                sub.status, sub.run_status, sub.valid, sub.scores = "done", "success", True, {"ndcg5_official": value}
            ids.append(sub.id)
    return ids


def mark(url: str, token: str, sid: int, value: bool = True) -> tuple[int, Any]:
    return call(f"{url}/api/submissions/{sid}/{'select' if value else 'unselect'}", "POST", token)


def board(url: str, token: str | None = None, fmt: str = "json") -> tuple[int, Any]:
    return call(f"{url}/api/tasks/{TASK}/phases/test/leaderboard?format={fmt}", token=token)


def test_a_team_selects_at_most_the_phases_number_of_runs_and_the_board_shows_those(service):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), closes=iso(DAY), max_selected=2)
    image_id = an_image(factory)
    a1, a2, a3, a4, a_failed = scored_runs(factory, state, team(factory, "team-a"), image_id,
                                           [0.9, 0.2, 0.4, 0.6, None])
    b1, b2, b_failed = scored_runs(factory, state, team(factory, "team-b"), image_id, [0.3, 0.5, None])
    assert mark(url, tokens["a"], a2)[0] == 200 and mark(url, tokens["a"], a3)[0] == 200
    status, body = mark(url, tokens["a"], a4)
    assert status == 409 and "unselect one first" in body["detail"]
    assert mark(url, tokens["a"], a_failed)[0] == 409  # a failed run cannot count
    assert mark(url, tokens["a"], b1)[0] == 404  # another team's run: as if missing
    assert call(f"{url}/api/submissions/{a2}", token=tokens["a"])[1]["selected"] is True

    assert board(url)[0] == 404  # not public yet
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), closes=iso(DAY), max_selected=2, leaderboard_public=True)
    status, shown = board(url)
    assert status == 200 and shown["rule"].startswith("selected runs")
    # team-a: its two selected runs (0.4, 0.2), not its best (0.9); team-b selected none: its latest valid (0.5);
    # no failed run. Ranked by hand: 0.5, 0.4, 0.2.
    assert [(r["rank"], r["run"], r["scores"]["ndcg5_official"]) for r in shown["runs"]] == [
        (1, "team-b/run2", 0.5), (2, "team-a/run3", 0.4), (3, "team-a/run2", 0.2)]
    assert all(r["submitted"].endswith("+00:00") for r in shown["runs"])
    assert [r["selected"] for r in shown["runs"]] == [False, True, True]
    everything = board(url, tokens["org"])[1]["runs"]
    assert len(everything) == 8  # the organizer's view: every finished run of the phase
    status, csv_text = board(url, fmt="csv")
    assert status == 200 and csv_text.splitlines()[0].startswith("rank,team,run,submitted,selected,baseline,status,")
    assert csv_text.splitlines()[1].startswith("1,team-b,team-b/run2,")
    # the phase's runs are not on the task's public board: only on their phase's, under its rules
    call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])
    assert call(f"{url}/api/tasks/{TASK}/leaderboard")[1]["runs"] == []

    assert mark(url, tokens["a"], a2, False)[0] == 200 and mark(url, tokens["a"], a4)[0] == 200
    assert [r["run"] for r in board(url)[1]["runs"]] == ["team-a/run4", "team-b/run2", "team-a/run3"]  # 0.6, 0.5, 0.4


def test_parallel_selections_stop_at_exactly_the_phases_number(service):
    from sharedtask.service import selection

    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), max_selected=2)
    who = team(factory, "team-a")
    ids = iter(scored_runs(factory, state, who, an_image(factory), [0.1 * i for i in range(1, 9)]))

    lock = threading.Lock()

    def pick_locked() -> int:
        with lock:
            sid = next(ids)
        try:
            with state.write_sessions()() as session:
                selection.set_selected(session, who, sid, True)
            return 200
        except HTTPException as exc:
            return exc.status_code

    assert sorted(race(8, pick_locked)) == [200] * 2 + [409] * 6
    with factory() as session:
        assert session.scalar(select(func.count(Submission.id)).where(Submission.selected.is_(True))) == 2


def test_the_organizers_baseline_is_marked_on_the_board(service):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), leaderboard_public=True)
    image_id = an_image(factory)
    with factory() as session:
        organizer = session.scalar(select(Team).where(Team.organizer.is_(True)))
    scored_runs(factory, state, organizer, image_id, [0.5])
    scored_runs(factory, state, team(factory, "team-a"), image_id, [0.7])
    rows = board(url)[1]["runs"]
    assert [(r["team"], r["baseline"]) for r in rows] == [("team-a", False), ("organizer", True)]
    assert 'organizer <span class="badge">baseline</span>' in call(f"{url}/tasks/{TASK}/phases/test/leaderboard")[1]


def test_without_a_selection_rule_each_teams_best_run_counts_and_nothing_can_be_selected(service):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), leaderboard_public=True)
    image_id = an_image(factory)
    a1, _, _ = scored_runs(factory, state, team(factory, "team-a"), image_id, [0.3, 0.7, None])
    scored_runs(factory, state, team(factory, "team-b"), image_id, [0.8, 0.1])
    status, body = mark(url, tokens["a"], a1)
    assert status == 409 and "nothing to select" in body["detail"]
    assert [(r["rank"], r["run"]) for r in board(url)[1]["runs"]] == [(1, "team-b/run1"), (2, "team-a/run2")]


def test_a_blind_phases_board_is_not_public_until_it_closes(service):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", opens=iso(-DAY), closes=iso(DAY), scores_visible=False,
              leaderboard_public=True)
    scored_runs(factory, state, team(factory, "team-a"), an_image(factory), [0.3])
    assert board(url)[0] == 404 and board(url, tokens["a"])[0] == 404 and board(url, tokens["org"])[0] == 200
    put_phase(url, tokens["org"], "test", opens=iso(-2 * DAY), closes=iso(-DAY), scores_visible=False,
              leaderboard_public=True)
    assert [r["run"] for r in board(url)[1]["runs"]] == ["team-a/run1"]


# ----------------------------------------------------------------------------- the pages


def test_the_pages_task_calendar_phase_form_selection_board_and_failure_reason(service):
    import re
    import urllib.parse

    url, factory, state, tokens = service
    # the organizer makes a phase with the page's form (a form post, as the browser sends it)
    form = urllib.parse.urlencode({"name": "dev", "dataset": "sample", "opens": "2020-01-01T00:00",
                                   "closes": "2099-03-01T12:00", "max_selected": "1", "scores_visible": "1",
                                   "leaderboard_public": "1"}).encode()
    status, _ = call(f"{url}/organizer/tasks/{TASK}/phases", "POST", tokens["org"], data=form,
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200  # followed the redirect to /organizer
    status, organizer = call(f"{url}/organizer", token=tokens["org"])
    assert 'data-phase="dev"' in organizer and "save phase" in organizer
    assert re.search(r'<label for="[^"]+-name">phase</label>', organizer)  # every input has its label

    # the task page: spec, measures with procedure, data names, calendar in the reader's zone
    status, page = call(f"{url}/tasks/{TASK}?tz=Asia/Tokyo")
    assert status == 200 and "<title>touche-2021-task1: " in page and '<nav class="site"' in page
    assert "Measures" in page and "(primary)" in page and "<code>sample</code>" in page
    assert "2099-03-01 12:00:00 UTC (2099-03-01 21:00:00 Asia/Tokyo)" in page  # +9 h, no daylight saving in Japan
    status, page = call(f"{url}/tasks/{TASK}?tz=Not/AZone")
    assert status == 200 and "2099-03-01 12:00:00 UTC<" in page  # unknown zone: UTC only
    # the countdown of the open phase, and how to participate: commands for this very server
    assert re.search(r"<td>open, closes in \d+ d( \d+ h)?</td>", page)
    import html as html_module

    text = html_module.unescape(page)
    assert (f'sharedtask submit --server {url} --token "$SHAREDTASK_TOKEN" --task {TASK} '
            "--image my/system:1 --phase dev") in text
    assert f"sharedtask sample {TASK} ./sample" in text and tokens["org"] not in text

    # a team's page offers "select" on a finished run of a phase with a selection; the board shows it
    a1, a_failed = scored_runs(factory, state, team(factory, "team-a"), an_image(factory), [0.4, None])
    status, mine = call(f"{url}/team", token=tokens["a"])
    assert f'action="/submissions/{a1}/select"' in mine and f'action="/submissions/{a_failed}/select"' not in mine
    assert "phase dev" in mine
    assert call(f"{url}/submissions/{a1}/select", "POST", tokens["a"], data=b"")[0] == 200
    assert call(f"{url}/api/submissions/{a1}", token=tokens["a"])[1]["selected"] is True
    status, board_html = call(f"{url}/tasks/{TASK}/phases/dev/leaderboard")
    assert status == 200 and 'data-run="team-a/run1"' in board_html and "selected" in board_html
    assert "<title>touche-2021-task1, phase dev: leaderboard · sharedtask</title>" in board_html

    # a failed run says why at the top of its page, which is not titled "Leaderboard"
    with factory.begin() as session:
        session.get(Submission, a_failed).notes = ["sandbox: the container exited with code 3"]
    status, failed = call(f"{url}/submissions/{a_failed}", token=tokens["a"])
    assert status == 200 and '<p class="failure" role="alert">' in failed
    assert '<main><p class="failure" role="alert">' in failed  # first in the page's body, under its header
    assert failed.index("</header>") < failed.index("exited with code 3")
    assert "<h3>Leaderboard</h3>" not in failed and '<nav class="site"' in failed


def test_a_database_of_a_newer_sharedtask_is_refused_with_one_line(tmp_path):
    import subprocess
    import sys

    engine = make_engine(sqlite_url(tmp_path / "service.db"))
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(text("update alembic_version set version_num = '9999'"))
    done = subprocess.run([sys.executable, "-m", "sharedtask", "serve", "--data-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "schema this sharedtask does not know" in done.stderr and "upgrade sharedtask" in done.stderr


# ----------------------------------------------------------------------------- team members' tokens


def test_each_member_has_a_token_and_the_organizer_revokes_one_alone(service):
    url, _, _, tokens = service
    status, alice = call(f"{url}/api/teams/team-a/tokens", "POST", tokens["org"])
    assert status == 201 and alice["team"] == "team-a" and alice["token"].startswith("st_")
    assert call(f"{url}/api/submissions", token=alice["token"])[0] == 200  # a member acts as the team
    assert call(f"{url}/api/teams/team-a/tokens", "POST", tokens["a"])[0] == 403  # a team cannot make tokens
    status, listed = call(f"{url}/api/teams/team-a/tokens", token=tokens["org"])
    assert status == 200 and len(listed) == 2 and "token" not in listed[0]
    status, revoked = call(f"{url}/api/teams/team-a/tokens/{alice['id']}/revoke", "POST", tokens["org"])
    assert status == 200 and revoked["revoked"] is True
    assert call(f"{url}/api/submissions", token=alice["token"])[0] == 401  # refused from the next request on
    assert call(f"{url}/api/submissions", token=tokens["a"])[0] == 200  # the rest of the team goes on
    assert call(f"{url}/api/teams/team-b/tokens/{alice['id']}/revoke", "POST", tokens["org"])[0] == 404
    assert call(f"{url}/api/teams/organizer/tokens", "POST", tokens["org"])[0] == 404  # not for the organizer


def test_a_team_sees_its_places_in_the_line_and_only_counts_of_the_others(service):
    url, factory, state, tokens = service
    image_id = an_image(factory)
    a, b = team(factory, "team-a"), team(factory, "team-b")
    for who in (b, a, b, a):  # the line, oldest first: b, a, b, a
        assert admit(state, who, image_id) == 201
    with factory.begin() as session:  # the first one is running now
        first = session.scalars(select(Submission).order_by(Submission.id)).first()
        first.status = "running"
        ids = [s.id for s in session.scalars(select(Submission).order_by(Submission.id))]
    status, mine = call(f"{url}/api/queue", token=tokens["a"])
    assert status == 200 and (mine["queued"], mine["running"]) == (3, 1)
    assert mine["positions"] == [{"id": ids[1], "position": 1}, {"id": ids[3], "position": 3}]
    theirs = call(f"{url}/api/queue", token=tokens["b"])[1]["positions"]
    assert theirs == [{"id": ids[2], "position": 2}]
    assert len(call(f"{url}/api/queue", token=tokens["org"])[1]["positions"]) == 3
    assert call(f"{url}/api/queue")[0] == 401


def test_a_closed_phase_offers_no_select_buttons_on_the_team_page(service):
    """Field test (issue 40): after the close the page still showed select/unselect, which the API
    answers with 403. The selection stands and is said to be final."""
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "test", opens=iso(-2 * DAY), closes=iso(DAY), max_selected=1)
    chosen, other = scored_runs(factory, state, team(factory, "team-a"), an_image(factory), [0.4, 0.3])
    assert mark(url, tokens["a"], chosen)[0] == 200
    status, mine = call(f"{url}/team", token=tokens["a"])
    assert f'action="/submissions/{chosen}/unselect"' in mine and f'action="/submissions/{other}/select"' in mine
    assert put_phase(url, tokens["org"], "test", opens=iso(-2 * DAY), closes=iso(-DAY), max_selected=1)[0] == 200
    status, mine = call(f"{url}/team", token=tokens["a"])
    assert status == 200 and '/select"' not in mine and '/unselect"' not in mine  # no form action
    assert "selected (final)" in mine
    assert mark(url, tokens["a"], other)[0] == 403  # what a button would have got


def test_the_time_left_reads_in_its_two_largest_units():
    import datetime as dt

    from sharedtask.service.web.site_pages import time_left

    assert time_left(dt.timedelta(days=2, hours=4, minutes=59)) == "2 d 4 h"  # rounded down
    assert time_left(dt.timedelta(hours=3, minutes=5, seconds=9)) == "3 h 5 min"
    assert time_left(dt.timedelta(seconds=40)) == "40 s"
    assert time_left(dt.timedelta(days=1, seconds=30)) == "1 d"
    assert time_left(dt.timedelta(seconds=-5)) == "0 s"  # a phase that just changed
