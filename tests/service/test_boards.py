"""The task's leaderboard one row per team (its selected runs, else its best run) with the submission
time, every run of a team one click away; times with seconds and the reader's zone on every page;
a phase board that keeps its scores back says when it opens and shows none of them.

The pages are rendered in a real headless Chromium (the DOM it builds is what is checked) on SQLite
and PostgreSQL; the JSON board over HTTP. The server runs in a thread with a recording executor
(nothing runs in Docker): the runs' outcomes and submission times are written as the executor and
the clock would. Every expected row, hour and date below is worked out by hand from those values.
"""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse
import urllib.request
from http.cookies import SimpleCookie

import pytest
from sqlalchemy import select

from service_helpers import TASK, call
from service_helpers import database, postgres_server  # noqa: F401 - fixtures
from service.test_phases import DAY, an_image, iso, manifest, put_phase, team  # noqa: F401
from service.test_site_browser import render, signed
from sharedtask.service import submissions
from sharedtask.service.models import Submission

PRIMARY = "ndcg5_official"
#: when each run was submitted (UTC): team-a's at 03:04:0x, team-b's at 05:06:0x on 2 January 2030
A_TIMES = [dt.datetime(2030, 1, 2, 3, 4, s) for s in (1, 2, 3)]
B_TIMES = [dt.datetime(2030, 1, 2, 5, 6, s) for s in (1, 2, 3)]


@pytest.fixture
def service(database, manifest, in_thread):
    s = in_thread(database, "team-a", "team-b", max_upload=64 * 1024, manifest=manifest)
    return s.url, s.factory, s.state, {"org": s.tokens["org"], "a": s.tokens["team-a"], "b": s.tokens["team-b"]}


def runs_of(factory, state, name: str, outcomes: list[float | None], times: list[dt.datetime],
            phase: str | None = None, extra: dict[str, float] | None = None) -> list[int]:
    """The team's submissions, finished as the executor would (a score, or failed for None), at ``times``."""
    who, image_id = team(factory, name), an_image_once(factory)
    ids = []
    for value, when in zip(outcomes, times):
        sub = submissions.admit(state, who, TASK, image_id, "sha256:" + "b" * 64, None, None, phase)
        with factory.begin() as session:
            row = session.get(Submission, sub.id)
            row.created = when
            if value is None:
                row.status, row.run_status, row.valid = "failed", "failed", None
            else:
                row.status, row.run_status, row.valid = "done", "success", True
                row.scores = {PRIMARY: value, **(extra or {})}
        ids.append(sub.id)
    return ids


def an_image_once(factory) -> int:
    from sharedtask.service.models import Image

    with factory() as session:
        found = session.scalar(select(Image.id).limit(1))
    return found if found is not None else an_image(factory)


def board_rows(dom: str) -> list[tuple[str, str | None]]:
    """(run, rank) of each row of the rendered leaderboard, top to bottom."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r'<tr class="run" data-run="([^"]+)" data-ranked="\w+"(?: data-rank="(\d+)")?', dom)]


def row_of(dom: str, run: str) -> str:
    found = re.search(rf'<tr class="run" data-run="{re.escape(run)}".*?</tr>', dom, re.S)
    assert found is not None, f"no row of {run}"
    return found.group(0)


def two_teams_three_runs_each(service) -> tuple[list[int], list[int]]:
    url, factory, state, tokens = service
    a = runs_of(factory, state, "team-a", [0.2, 0.7, 0.5], A_TIMES)  # best: run2 (0.7)
    b = runs_of(factory, state, "team-b", [0.6, 0.3, None], B_TIMES)  # best: run1 (0.6); run3 failed
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    return a, b


def test_the_task_board_shows_one_row_per_team_its_best_run_with_its_date_and_every_run_a_click_away(
        service, tmp_path):
    url, factory, state, tokens = service
    two_teams_three_runs_each(service)

    dom, _ = render(f"{url}/tasks/{TASK}/leaderboard", tmp_path, "board")
    # two teams × three runs → two rows, each team's best by nDCG@5, ranked 0.7 over 0.6
    assert board_rows(dom) == [("team-a/run2", "1"), ("team-b/run1", "2")]
    assert "2030-01-02 03:04:02 UTC" in row_of(dom, "team-a/run2")  # run2's own time, to the second
    assert "2030-01-02 05:06:01 UTC" in row_of(dom, "team-b/run1")
    assert "One row per team (2)" in dom and "Every run (6)" in dom
    # every run of a team one click away: the row's link
    link = re.search(r'<a class="more" href="([^"]+)">all 3 runs of team-a</a>', row_of(dom, "team-a/run2"))
    assert link is not None
    team_dom, _ = render(url + link.group(1).replace("&amp;", "&"), tmp_path, "team-runs")
    assert sorted(run for run, _ in board_rows(team_dom)) == ["team-a/run1", "team-a/run2", "team-a/run3"]
    assert "2030-01-02 03:04:01 UTC" in row_of(team_dom, "team-a/run1")
    assert "team-b/" not in team_dom
    # every run of every team: six rows, the failed one unranked at the bottom
    all_dom, _ = render(f"{url}/tasks/{TASK}/leaderboard?all=1", tmp_path, "every-run")
    rows = board_rows(all_dom)
    assert len(rows) == 6 and rows[-1] == ("team-b/run3", None)
    assert [run for run, rank in rows if rank] == ["team-a/run2", "team-b/run1", "team-a/run3", "team-b/run2",
                                                   "team-a/run1"]  # 0.7, 0.6, 0.5, 0.3, 0.2


def test_the_readers_zone_changes_the_shown_hour_on_the_board_team_and_organizer_pages(service, tmp_path):
    url, factory, state, tokens = service
    two_teams_three_runs_each(service)
    # ?tz= on the board: 03:04:02 UTC is 12:04:02 in Tokyo (+9 h, no daylight saving)
    dom, _ = render(f"{url}/tasks/{TASK}/leaderboard?tz=Asia/Tokyo", tmp_path, "board-tokyo")
    assert "2030-01-02 03:04:02 UTC (2030-01-02 12:04:02 Asia/Tokyo)" in row_of(dom, "team-a/run2")
    # the zone cookie, as a choice on one page leaves it, read by /team and /organizer
    request = urllib.request.Request(f"{url}/team?tz=America/New_York", headers={"Authorization": f"Bearer {tokens['a']}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        cookie = response.headers["set-cookie"]
    assert SimpleCookie(cookie)["sharedtask_tz"].value == "America/New_York"
    jar = {"Cookie": cookie.split(";")[0]}  # as the browser sends it back
    for path, token, shown in (("/team", tokens["a"], "03:04:02"), ("/organizer", tokens["org"], "05:06:01")):
        status, page = call(url + path, token=token, headers=jar)
        assert status == 200, path
        # New York is UTC-5 in January: 03:04:02 UTC is 22:04:02 the day before
        hour = {"03:04:02": "2030-01-01 22:04:02", "05:06:01": "2030-01-02 00:06:01"}[shown]
        assert f"2030-01-02 {shown} UTC ({hour} America/New_York)" in page, path
        status, plain = call(url + path, token=token)  # no cookie: UTC alone, still to the second
        assert f"2030-01-02 {shown} UTC<" in plain and "America/New_York" not in plain.split("<select")[0], path
    # the team page in Chromium, signed in, with the zone chosen on the page itself
    team_dom, _ = render(signed(url, tokens["a"], "/team?tz=Europe/Berlin"), tmp_path, "team-berlin")
    assert "2030-01-02 03:04:03 UTC (2030-01-02 04:04:03 Europe/Berlin)" in team_dom  # UTC+1 in winter


def test_a_selected_run_is_the_teams_row_even_when_another_run_scores_higher(service, tmp_path):
    """Selections belong to phases: the organizer's task board holds the phase's runs."""
    url, factory, state, tokens = service
    assert put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(DAY), max_selected=2)[0] == 200
    a1, a2, a3 = runs_of(factory, state, "team-a", [0.2, 0.7, 0.5], A_TIMES, phase="dev")
    runs_of(factory, state, "team-b", [0.6, 0.3, None], B_TIMES, phase="dev")
    assert call(f"{url}/api/submissions/{a1}/select", "POST", tokens["a"])[0] == 200  # 0.2, not its best 0.7

    dom, _ = render(signed(url, tokens["org"], f"/tasks/{TASK}/leaderboard"), tmp_path, "organizer-board")
    assert board_rows(dom) == [("team-b/run1", "1"), ("team-a/run1", "2")]  # 0.6 over team-a's selected 0.2
    assert "(organizer view)" in dom
    # two selected runs: two rows of the team
    assert call(f"{url}/api/submissions/{a3}/select", "POST", tokens["a"])[0] == 200
    status, body = call(f"{url}/api/tasks/{TASK}/leaderboard?per_team=1", token=tokens["org"])
    assert status == 200 and [(r["run"], r["selected"]) for r in body["runs"]] == [
        ("team-b/run1", False), ("team-a/run3", True), ("team-a/run1", True)]
    # the public sees no phase run on the task board (the phase's board has its own rules)
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    assert call(f"{url}/api/tasks/{TASK}/leaderboard?per_team=1")[1]["runs"] == []


def test_the_json_board_keeps_its_rows_and_adds_one_row_per_team_on_request(service):
    url, factory, state, tokens = service
    two_teams_three_runs_each(service)
    status, every = call(f"{url}/api/tasks/{TASK}/leaderboard")
    assert status == 200 and len(every["runs"]) == 6 and "per_team" not in every
    assert all(set(r) == {"rank", "run", "status", "scores"} for r in every["runs"])  # as before
    status, teams = call(f"{url}/api/tasks/{TASK}/leaderboard?per_team=true")
    assert status == 200 and teams["per_team"] is True
    assert [(r["rank"], r["run"], r["team"], r["team_runs"], r["submitted"]) for r in teams["runs"]] == [
        (1, "team-a/run2", "team-a", 3, "2030-01-02T03:04:02+00:00"),
        (2, "team-b/run1", "team-b", 3, "2030-01-02T05:06:01+00:00")]
    assert teams["runs"][0]["scores"] == {PRIMARY: 0.7}
    assert call(f"{url}/api/tasks/{TASK}/leaderboard?per_team=maybe")[0] == 422
    # unpublished: 404 either way, for the page of a team too (no team is named)
    assert call(f"{url}/api/tasks/{TASK}/unpublish", "POST", tokens["org"])[0] == 200
    assert call(f"{url}/api/tasks/{TASK}/leaderboard?per_team=1")[0] == 404
    status, page = call(f"{url}/tasks/{TASK}/leaderboard?team=team-a")
    assert status == 404 and "team-a" not in page.split("</header>")[1]
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    status, page = call(f"{url}/tasks/{TASK}/leaderboard?team=nobody")
    assert status == 404 and "no team &#x27;nobody&#x27;" in page


@pytest.fixture
def blind_service(database, manifest, in_thread):
    s = in_thread(database, "team-a", "team-b", max_upload=64 * 1024, manifest=manifest, blind=True)
    return s.url, s.factory, s.state, {"org": s.tokens["org"], "a": s.tokens["team-a"], "b": s.tokens["team-b"]}


def test_blind_boards_pick_each_teams_row_by_the_scores_shown_and_show_no_other(blind_service, tmp_path):
    url, factory, state, tokens = blind_service
    runs_of(factory, state, "team-a", [0.2, 0.7, 0.5], A_TIMES, extra={"secret_measure": 0.987654})
    runs_of(factory, state, "team-b", [0.6, 0.3, None], B_TIMES, extra={"secret_measure": 0.876543})
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    dom, _ = render(f"{url}/tasks/{TASK}/leaderboard", tmp_path, "blind-board")
    assert board_rows(dom) == [("team-a/run2", "1"), ("team-b/run1", "2")]
    assert "2030-01-02 03:04:02 UTC" in row_of(dom, "team-a/run2")
    body = call(f"{url}/api/tasks/{TASK}/leaderboard?per_team=1", token=tokens["b"])[1]
    assert [r["run"] for r in body["runs"]] == ["team-a/run2", "team-b/run1"]
    for text in (dom, str(body)):
        assert "secret_measure" not in text and "0.9877" not in text and "0.987654" not in text


def test_a_phase_board_kept_back_says_when_it_opens_and_shows_no_score(service, tmp_path):
    url, factory, state, tokens = service
    closes = "2099-05-06T07:08:09+00:00"
    assert put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(DAY), leaderboard_public=True)[0] == 200
    assert put_phase(url, tokens["org"], "test", opens=iso(-DAY / 2), closes=closes, leaderboard_public=True,
                     scores_visible=False)[0] == 200
    runs_of(factory, state, "team-a", [0.654321], A_TIMES[:1], phase="test")

    status, page = call(f"{url}/tasks/{TASK}/phases/test/leaderboard?tz=Asia/Tokyo")
    assert status == 404
    assert "opens when the phase closes, at" in page and "2099-05-06 07:08:09 UTC (2099-05-06 16:08:09 Asia/Tokyo)" in page
    assert "team-a" not in page and "0.6543" not in page and "0.654321" not in page
    dom, _ = render(f"{url}/tasks/{TASK}/phases/test/leaderboard", tmp_path, "closed-board")
    assert "2099-05-06 07:08:09 UTC" in dom and "team-a" not in dom and "0.6543" not in dom
    # the task page links the open board, and says when the other opens instead of linking it
    task_dom, _ = render(f"{url}/tasks/{TASK}", tmp_path, "task-calendar")
    test_row = re.search(r'<tr class="phase" data-phase="test">.*?</tr>', task_dom, re.S).group(0)
    assert "phases/test/leaderboard" not in test_row and "opens" in test_row and "2099-05-06 07:08:09 UTC" in test_row
    dev_row = re.search(r'<tr class="phase" data-phase="dev">.*?</tr>', task_dom, re.S).group(0)
    assert f'href="/tasks/{TASK}/phases/dev/leaderboard"' in dev_row
    assert "not published yet" in task_dom  # the task's own board
    # the home page: the phase boards, not "not published"
    home, _ = render(f"{url}/", tmp_path, "home")
    row = re.search(rf'<tr class="task-row" data-task="{TASK}">.*?</tr>', home, re.S).group(0)
    assert f'href="/tasks/{TASK}/phases/dev/leaderboard"' in row and "not published" not in row
    assert "phase test opens" in row and "2099-05-06 07:08:09 UTC" in row
    # the JSON and CSV boards say it too, in UTC with the zone written out
    status, body = call(f"{url}/api/tasks/{TASK}/phases/test/leaderboard")
    assert status == 404 and body["detail"].endswith("it opens at 2099-05-06T07:08:09+00:00, when the phase closes")
    assert "team-a" not in str(body) and "0.6543" not in str(body)
        # the organizer still sees the kept-back board
    assert call(f"{url}/tasks/{TASK}/phases/test/leaderboard", token=tokens["org"])[0] == 200


def test_the_home_page_says_not_published_only_when_no_board_is_public(service):
    url, factory, state, tokens = service
    assert put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(DAY))[0] == 200  # not public
    row = re.search(rf'<tr class="task-row" data-task="{TASK}">.*?</tr>', call(f"{url}/")[1], re.S).group(0)
    assert "not published" in row and "/leaderboard" not in row
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    row = re.search(rf'<tr class="task-row" data-task="{TASK}">.*?</tr>', call(f"{url}/")[1], re.S).group(0)
    assert f'href="/tasks/{TASK}/leaderboard"' in row and "not published" not in row


def test_a_queued_submissions_banner_sits_under_the_header_inside_the_page(service, tmp_path):
    url, factory, state, tokens = service
    image_id = an_image(factory)
    sid = submissions.admit(state, team(factory, "team-a"), TASK, image_id, "sha256:" + "b" * 64, None, None).id
    dom, _ = render(signed(url, tokens["a"], f"/submissions/{sid}"), tmp_path, "queued")
    banner = dom.index('class="queue"')
    assert dom.index("</header>") < banner and dom.index("<main>") < banner
    assert "0 ahead of it" in dom and '<span class="n">0</span><span class="l">failed</span>' in dom
