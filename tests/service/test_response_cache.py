"""Kept answers of the hot GETs (service/response_cache.py) are never older than the last commit.

A real server (uvicorn in a thread) over SQLite and a real PostgreSQL: each test first makes
the server keep an answer (and checks that it did), then commits a change — from this
process and from another process, as the command line or a compute worker would — and
asks again: the answer must show the change at once. Only the executor is replaced
(nothing runs here).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from service_helpers import TASK, call
from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
from sharedtask.service.response_cache import Answers, answers_for
from sharedtask.service.teams.tokens import create_team

#: runs one statement in a transaction of a process of its own
_ELSEWHERE = ("import sys, sqlalchemy as sa\n"
              "with sa.create_engine(sys.argv[1]).begin() as c:\n"
              "    c.exec_driver_sql(sys.argv[2])\n")


def _commit_elsewhere(url: str, sql: str) -> None:
    subprocess.run([sys.executable, "-c", _ELSEWHERE, url, sql], check=True, timeout=120)


@pytest.fixture
def served(in_thread, database: str):
    s = in_thread(database, "team-a")
    return s.url, database, s.state.answers, {"org": s.tokens["org"], "a": s.tokens["team-a"]}, s.factory


def _insert_done_run(url: str, tag: str, score: float) -> None:
    _commit_elsewhere(url, "INSERT INTO images (archive_sha256, docker_id, size, created) "
                           f"VALUES ('{tag:0<64}', 'sha256:x', 1, CURRENT_TIMESTAMP)")
    _commit_elsewhere(url, "INSERT INTO submissions (team_id, task_id, image_id, image_name, tag, status, attempts, "
                           "created, run_status, valid, scores, notes) "
                           f"SELECT t.id, '{TASK}', i.id, 'sha256:x', '{tag}', 'done', 1, CURRENT_TIMESTAMP, "
                           f"'success', TRUE, '{{\"ndcg5_official\": {score}}}', '[]' "
                           f"FROM teams t, images i WHERE t.name = 'team-a' AND i.archive_sha256 = '{tag:0<64}'")


def _board(url: str) -> tuple[int, object]:
    return call(f"{url}/api/tasks/{TASK}/leaderboard")


def test_the_leaderboard_is_kept_and_follows_every_commit(served):
    url, db, answers, tokens, _ = served
    assert answers.enabled
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    assert _board(url) == (200, {"task": TASK, "primary": "ndcg5_official", "runs": []})
    assert _board(url)[1]["runs"] == []
    assert any(key[0] == "leaderboard" for key in answers._kept)  # the answer was kept
    _insert_done_run(db, "first", 0.5)  # another process commits a scored run
    status, board = _board(url)
    assert status == 200
    assert [(r["run"], r["scores"]["ndcg5_official"]) for r in board["runs"]] == [("team-a/first", 0.5)]
    _commit_elsewhere(db, "UPDATE submissions SET scores = '{\"ndcg5_official\": 0.25}' WHERE tag = 'first'")
    assert [r["scores"]["ndcg5_official"] for r in _board(url)[1]["runs"]] == [0.25]
    _commit_elsewhere(db, "UPDATE submissions SET hidden_reason = 'faulty' WHERE tag = 'first'")
    assert _board(url)[1]["runs"] == []
    # a commit through this server's own API, then one by another process: the board is unpublished
    assert call(f"{url}/api/tasks/{TASK}/unpublish", "POST", tokens["org"])[0] == 200
    assert _board(url)[0] == 404
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    assert _board(url)[0] == 200
    _commit_elsewhere(db, f"UPDATE task_settings SET published = FALSE WHERE task_id = '{TASK}'")
    assert _board(url)[0] == 404


def test_a_teams_list_follows_its_submissions_and_its_token(served):
    url, db, answers, tokens, _ = served
    assert call(f"{url}/api/submissions", token=tokens["a"]) == (200, [])
    assert call(f"{url}/api/submissions", token=tokens["a"]) == (200, [])
    assert any(key[0] == "submissions" for key in answers._kept)
    _insert_done_run(db, "mine", 0.5)
    status, listed = call(f"{url}/api/submissions", token=tokens["a"])
    assert status == 200 and [s["tag"] for s in listed] == ["mine"]
    _commit_elsewhere(db, "UPDATE submissions SET status = 'failed' WHERE tag = 'mine'")
    assert [s["status"] for s in call(f"{url}/api/submissions", token=tokens["a"])[1]] == ["failed"]
    # a revoked token is refused at once, though its answer was kept a moment ago
    _commit_elsewhere(db, "UPDATE tokens SET revoked = TRUE "
                          "WHERE team_id = (SELECT id FROM teams WHERE name = 'team-a')")
    assert call(f"{url}/api/submissions", token=tokens["a"])[0] == 401


def test_the_task_list_follows_the_settings(served):
    url, db, _, tokens, _ = served
    assert call(f"{url}/api/tasks")[1][0]["daily_limit"] is None
    assert call(f"{url}/api/tasks")[1][0]["daily_limit"] is None
    _commit_elsewhere(db, f"UPDATE task_settings SET daily_limit = 3 WHERE task_id = '{TASK}'")
    assert call(f"{url}/api/tasks")[1][0]["daily_limit"] == 3
    assert call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"], {"daily_limit": 4})[0] == 200
    assert call(f"{url}/api/tasks")[1][0]["daily_limit"] == 4


def test_the_stamp_moves_with_a_commit_of_any_connection_and_holds_without_one(served, database):
    _, db, _, _, factory = served
    answers = answers_for(factory.kw["bind"])
    # nothing commits between two reads (PostgreSQL's autovacuum may, rarely: one pair of five suffices)
    assert any(answers.stamp() == answers.stamp() for _ in range(5))
    before = answers.stamp()
    _commit_elsewhere(db, "UPDATE teams SET name = name")
    after = answers.stamp()
    assert after != before
    with factory.begin() as session:  # a connection of this process's own pool
        session.connection().exec_driver_sql("UPDATE teams SET name = name")
    assert answers.stamp() != after


def test_an_answer_built_under_an_old_stamp_is_not_kept():
    stamps = iter([1, 1, 2, 2, 2])
    answers = Answers(lambda: next(stamps))
    first = answers.stamp()
    assert answers.get("k", first) is None
    answers.put("k", first, b"old")
    assert answers.get("k", answers.stamp()) == b"old"  # same stamp: kept
    late = answers.stamp()  # 2: a commit happened
    assert answers.get("k", late) is None  # a new stamp drops what was kept
    answers.put("k", first, b"built before the commit")  # its stamp is stale: not kept
    assert answers.get("k", answers.stamp()) is None


def test_no_stamp_no_kept_answers(tmp_path: Path):
    assert not answers_for(make_engine("sqlite://")).enabled
    answers = Answers(None)
    answers.put("k", answers.stamp(), b"x")
    assert answers.get("k", answers.stamp()) is None


def test_a_kept_answer_expires_when_a_date_passes() -> None:
    """What is open, and whose scores a phase keeps back, changes when a date passes, without a
    commit: an answer is kept no later than the next opening or closing (times given, not waited)."""
    import datetime as dt

    answers = Answers(lambda: 1)
    noon = dt.datetime(2027, 3, 1, 12, 0)
    assert answers.get(("k",), 1, noon) is None  # first read of the stamp: nothing kept yet
    answers.put(("k",), 1, b"before", until=noon + dt.timedelta(hours=1))
    answers.put(("forever",), 1, b"kept")
    assert answers.get(("k",), 1, noon + dt.timedelta(minutes=59)) == b"before"
    assert answers.get(("k",), 1, noon + dt.timedelta(hours=1)) is None
    assert answers.get(("forever",), 1, noon + dt.timedelta(days=400)) == b"kept"


def test_the_next_boundary_is_the_earliest_future_date_of_a_task_or_a_phase(tmp_path: Path) -> None:
    import datetime as dt

    from sharedtask.service.models import Phase, TaskSettings
    from sharedtask.service.phases import next_boundary

    engine = make_engine(sqlite_url(tmp_path / "s.db"))
    migrate(engine)
    now = dt.datetime(2027, 3, 1, 12, 0)
    with sessions(engine).begin() as session:
        assert next_boundary(session, now) is None
        session.add(TaskSettings(task_id=TASK, opens=now - dt.timedelta(days=1), closes=now + dt.timedelta(days=9)))
        session.flush()
        assert next_boundary(session, now) == now + dt.timedelta(days=9)
        session.add(Phase(task_id=TASK, name="dev", dataset="sample", opens=now - dt.timedelta(days=2),
                          closes=now + dt.timedelta(days=3)))
        session.flush()
        assert next_boundary(session, now) == now + dt.timedelta(days=3)
        assert next_boundary(session, now + dt.timedelta(days=3)) == now + dt.timedelta(days=9)  # strictly after
    engine.dispose()


def test_answers_are_kept_per_sign_in_cookie(served):
    """The JSON API also takes the pages' sign-in cookie: two teams signed in that way must each
    get their own list, never the other's kept answer (the key holds who asks: the cookie's team)."""
    from sharedtask.service.teams.signin import COOKIE, sign_in

    url, db, answers, tokens, factory = served
    with factory.begin() as session:
        _, token_b = create_team(session, "team-b")
    _insert_done_run(db, "a-run", 0.5)
    cookies = {}
    with factory.begin() as session:
        for name, token in (("a", tokens["a"]), ("b", token_b)):
            cookies[name] = sign_in(session, token)[1]
    lists = {}
    for name in ("a", "b", "a", "b"):
        status, body = call(f"{url}/api/submissions", headers={"Cookie": f"{COOKIE}={cookies[name]}"})
        assert status == 200
        lists.setdefault(name, []).append([s["tag"] for s in body])
    assert lists["a"] == [["a-run"], ["a-run"]] and lists["b"] == [[], []]


def test_the_boundary_is_computed_once_per_stamp_and_again_when_it_passes() -> None:
    """Its queries ran for every answer built; kept, it must still move on with a commit or a passing date."""
    import datetime as dt

    stamp = [1]
    answers = Answers(lambda: stamp[0])
    noon = dt.datetime(2027, 3, 1, 12, 0)
    computed: list[dt.datetime] = []

    def compute(at: dt.datetime, boundary: dt.datetime | None) -> dt.datetime | None:
        computed.append(at)
        return boundary

    one = noon + dt.timedelta(hours=1)
    assert answers.boundary(1, noon, lambda: compute(noon, one)) == one
    later = noon + dt.timedelta(minutes=30)
    assert answers.boundary(1, later, lambda: compute(later, None)) == one  # same stamp, not passed: kept
    assert answers.boundary(1, noon - dt.timedelta(minutes=1), lambda: compute(noon, noon)) == noon  # an earlier now
    assert answers.boundary(2, later, lambda: compute(later, None)) is None  # a commit: computed again
    assert answers.boundary(2, one, lambda: compute(one, None)) is None  # None is kept too
    assert len(computed) == 3
    assert answers.boundary(3, one, lambda: compute(one, one + dt.timedelta(days=1))) == one + dt.timedelta(days=1)
    passed = one + dt.timedelta(days=1)
    assert answers.boundary(3, passed, lambda: compute(passed, None)) is None  # the date passed: computed again
    assert len(computed) == 5
    assert Answers(None).boundary(None, noon, lambda: one) == one  # nothing kept without a stamp


def test_random_tokens_and_time_zones_do_not_grow_the_kept_answers(served):
    """Issue 39: each random token kept one more copy of the public board, each random ``?tz=`` one
    more copy of the phase board page. Counted by entries and bytes, not by the server's RSS."""
    import datetime as dt
    import secrets

    url, db, answers, tokens, _ = served
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    for i in range(20):
        _insert_done_run(db, f"r{i:02d}", i / 20)
    now = dt.datetime.now(dt.timezone.utc)
    assert call(f"{url}/api/tasks/{TASK}/phases/open", "PUT", tokens["org"],
                {"dataset": "sample", "opens": (now - dt.timedelta(days=1)).isoformat(),
                 "closes": (now + dt.timedelta(days=1)).isoformat(), "leaderboard_public": True})[0] == 200
    # Any commit anywhere (on PostgreSQL even one the server did not make) empties the kept
    # answers; the counts below are exact only while the stamp held, so a moved stamp repeats the round.
    for _round in range(5):
        first = _board(url)
        page = call(f"{url}/tasks/{TASK}/phases/open/leaderboard")
        assert first[0] == 200 and len(first[1]["runs"]) == 20 and page[0] == 200
        stamp = answers.stamp()
        base_entries, base_bytes = answers.held()
        assert base_entries == 2 and base_bytes >= len(page[1])
        for _ in range(1000):
            assert call(f"{url}/api/tasks/{TASK}/leaderboard", token="st_" + secrets.token_urlsafe(32)) == first
        zones = [secrets.token_hex(8) for _ in range(1000)]
        for zone in zones:
            status, text = call(f"{url}/tasks/{TASK}/phases/open/leaderboard?tz={zone}")
            assert status == 200 and zone not in text
        held = answers.held()
        if answers.stamp() == stamp:
            break
    assert held == (base_entries, base_bytes)
    # a real zone is a value of its own: one more entry, and the page says the zone
    status, text = call(f"{url}/tasks/{TASK}/phases/open/leaderboard?tz=Europe/Berlin")
    assert status == 200 and "Europe/Berlin" in text
    assert answers.held()[0] == base_entries + 1
    # unknown tasks in ?task= are answered but never kept
    for _ in range(50):
        assert call(f"{url}/api/submissions?task={secrets.token_hex(6)}", token=tokens["a"]) == (200, [])
    assert answers.held()[0] == base_entries + 1


def test_the_kept_answers_are_bounded_in_entries_and_bytes_least_recently_used_first():
    answers = Answers(lambda: 1, max_entries=3, max_bytes=10_000)
    stamp = answers.stamp()
    assert answers.get("warm", stamp) is None  # takes the stamp
    for name in ("a", "b", "c"):
        answers.put((name,), stamp, b"x" * 100)
    assert answers.get(("a",), stamp) == b"x" * 100  # "a" is now the most recent
    answers.put(("d",), stamp, b"y" * 100)
    assert answers.held()[0] == 3
    assert answers.get(("b",), stamp) is None and answers.get(("a",), stamp) is not None
    # bytes: two answers of 3,000 bytes, then one of 6,000: the least recent go until the sum fits
    answers.put(("m1",), stamp, b"m" * 3000)
    answers.put(("m2",), stamp, b"m" * 3000)
    answers.put(("big",), stamp, b"z" * 6000)
    entries, held = answers.held()
    assert held <= 10_000 and entries == 2
    assert answers.get(("big",), stamp) is not None and answers.get(("m2",), stamp) is not None
    assert answers.get(("m1",), stamp) is None
    # an answer larger than the whole bound is not kept at all
    answers.put(("huge",), stamp, b"h" * 20_000)
    assert answers.get(("huge",), stamp) is None and answers.held()[1] <= 10_000
