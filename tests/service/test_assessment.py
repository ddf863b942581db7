"""Assessment in the service (issue 37): run kinds, pools, campaigns, judging, qrels, boards.

Every test runs on SQLite and on a real PostgreSQL. The server runs in a thread with a recording
executor: the runs' outcomes are written as the executor writes them (a run file in the run's
folder, status done and valid), so nothing here needs Docker. Expected numbers are computed in the
test: pools by a plain top-k union, Cohen's kappa by its textbook formula, scores by pytrec_eval.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest
from sqlalchemy import func, select

from service_helpers import (SAMPLE, TASK, RecordingExecutor, ThreadServer, call, database,  # noqa: F401
                             postgres_server)
from service.test_crowd import in_parallel as race
from sharedtask.service.app import ServiceConfig, create_app
from sharedtask.service.assessment import people
from sharedtask.service.assessment.people import create_assessor
from sharedtask.service.db import make_engine, migrate, sessions
from sharedtask.service.models import Assessor, Image, Judgment, PrimaryRun, Submission, Team
from sharedtask.service.teams.tokens import create_team, organizer_token


def qrels_of(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        topic, _, doc, grade = line.split()
        out.setdefault(topic, {})[doc] = max(0, int(grade))  # -2 (spam) is no grade of the 0-3 scale
    return out


TRUTH = qrels_of(SAMPLE / "truth" / "qrels.txt")
QUALITY = qrels_of(SAMPLE / "truth" / "qrels-quality.txt")


def run_text(tag: str, order: str) -> str:
    """A run over the sample's judged documents: ``best`` ranks by the sample's grades, ``worst``
    in reverse; distinct scores, so no evaluator breaks ties its own way."""
    lines = []
    for topic in sorted(TRUTH):
        docs = sorted(TRUTH[topic], key=lambda d: (-TRUTH[topic][d], d))
        if order == "worst":
            docs.reverse()
        lines += [f"{topic} Q0 {doc} {i} {100 - i} {tag}" for i, doc in enumerate(docs, 1)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def service(tmp_path: Path, database: str, monkeypatch):
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))  # registered qrels stay in the test
    with served_assessment(tmp_path, database, [TASK]) as served:
        yield served


@contextmanager
def served_assessment(tmp_path: Path, database: str, task_ids: list[str]) -> Iterator[tuple[str, Any, Path, dict]]:
    """A server of ``task_ids`` in a thread: (its URL, the session factory, its data folder, tokens of
    the organizer, team-a, team-b and the assessors alice and bob)."""
    engine = make_engine(database)
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        tokens = {"org": organizer_token(session), "a": create_team(session, "team-a")[1],
                  "b": create_team(session, "team-b")[1], "alice": create_assessor(session, "alice")[1],
                  "bob": create_assessor(session, "bob")[1]}
    config = ServiceConfig(data_dir=tmp_path / "data", max_upload=64 * 1024, task_ids=task_ids)
    app = create_app(factory, RecordingExecutor(), config)
    with ThreadServer(app) as server:
        yield server.url, factory, tmp_path / "data", tokens


def finished_run(factory, data_dir: Path, team: str, tag: str, text: str, task: str = TASK) -> int:
    """A submission finished as the executor leaves one: its run file, done and valid."""
    with factory.begin() as session:
        image = session.scalar(select(Image)) or Image(archive_sha256="a" * 64, docker_id="sha256:" + "b" * 64, size=1)
        session.add(image)
        session.flush()
        who = session.scalar(select(Team).where(Team.name == team))
        sub = Submission(team_id=who.id, task_id=task, image_id=image.id, image_name="x", tag=tag, status="done",
                         run_status="success", valid=True)
        session.add(sub)
        session.flush()
        run_dir = data_dir / "runs" / str(sub.id) / "attempt-1" / task / tag
        run_dir.mkdir(parents=True)
        (run_dir / "run.txt").write_text(text)
        sub.run_dir = str(run_dir)
        return sub.id


def kappa(a: list[int], b: list[int]) -> float:
    """Cohen's kappa, the textbook formula: (p_o - p_e) / (1 - p_e)."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    return (p_o - p_e) / (1 - p_e)


# ----------------------------------------------------------------------------- roles


def test_each_role_reaches_only_its_own_routes(service):
    url, _, _, tokens = service
    for who in ("alice", "bob"):  # an assessor is no team and no organizer
        assert call(f"{url}/api/submissions", token=tokens[who])[0] == 401
        assert call(f"{url}/api/teams", token=tokens[who])[0] == 401
        assert call(f"{url}/api/tasks/{TASK}/pools", token=tokens[who])[0] == 401
        assert call(f"{url}/api/assess/topics", token=tokens[who]) == (200, [])
    for who in ("a", "org"):  # a team and the organizer are no assessor
        assert call(f"{url}/api/assess/topics", token=tokens[who])[0] == 401
        assert call(f"{url}/api/assess/campaigns/1/judgments", "POST", tokens[who],
                    {"topic": "51", "item": "x", "grade": 1, "quality": 1})[0] == 401
    assert call(f"{url}/api/tasks/{TASK}/pools", token=tokens["a"])[0] == 403  # pools are the organizer's
    assert call(f"{url}/login?token={tokens['alice']}")[0] == 401  # nor does a team's sign-in take it
    assert call(f"{url}/assess/login?token={tokens['a']}")[0] == 401


def test_the_organizer_adds_an_assessor_gives_a_second_token_and_revokes_one(service):
    url, factory, _, tokens = service
    assert call(f"{url}/api/assessors", "POST", tokens["a"], {"name": "carol"})[0] == 403  # a team may not
    assert call(f"{url}/api/assessors", "POST", tokens["alice"], {"name": "carol"})[0] == 401  # nor an assessor
    status, made = call(f"{url}/api/assessors", "POST", tokens["org"], {"name": "carol"})
    assert status == 201 and made["assessor"] == "carol" and made["token"].startswith("as_") and not made["revoked"]
    first = made["token"]
    assert call(f"{url}/api/assess/topics", token=first) == (200, [])
    status, second = call(f"{url}/api/assessors/carol/tokens", "POST", tokens["org"])
    assert status == 201 and second["token"] != first
    with factory.begin() as session:  # a browser signed in with the first token
        cookie = people.sign_in(session, first)[1]
    by_cookie = {"Cookie": f"{people.COOKIE}={cookie}"}
    assert call(f"{url}/api/assess/topics", headers=by_cookie) == (200, [])

    listed = call(f"{url}/api/assessors/carol/tokens", token=tokens["org"])[1]
    assert [t["revoked"] for t in listed] == [False, False] and "token" not in listed[0]
    assert call(f"{url}/api/assessors/carol/tokens/{made['id']}/revoke", "POST", tokens["org"])[1]["revoked"] is True
    assert call(f"{url}/api/assess/topics", token=first)[0] == 401  # refused at once
    assert call(f"{url}/api/assess/topics", headers=by_cookie)[0] == 401  # and its sign-in ended with it
    assert call(f"{url}/api/assess/topics", token=second["token"]) == (200, [])  # the other token goes on
    assert {a["assessor"]: a["live_tokens"] for a in call(f"{url}/api/assessors", token=tokens["org"])[1]} == \
        {"alice": 1, "bob": 1, "carol": 1}
    # another assessor's token id, an unknown assessor: 404, nothing revoked
    alice_ids = [t["id"] for t in call(f"{url}/api/assessors/alice/tokens", token=tokens["org"])[1]]
    assert call(f"{url}/api/assessors/carol/tokens/{alice_ids[0]}/revoke", "POST", tokens["org"])[0] == 404
    assert call(f"{url}/api/assessors/nobody/tokens", token=tokens["org"])[0] == 404
    assert call(f"{url}/api/assess/topics", token=tokens["alice"]) == (200, [])


def test_ten_organizer_requests_adding_one_assessor_name_make_one(service):
    url, factory, _, tokens = service
    answers = race(10, lambda _: call(f"{url}/api/assessors", "POST", tokens["org"], {"name": "dora"}))
    assert sorted(status for status, _ in answers) == [201] + [400] * 9, answers
    assert all("exists already" in body["detail"] for status, body in answers if status == 400)
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Assessor).where(Assessor.name == "dora")) == 1


def test_one_primary_run_per_team_and_task_under_a_race(service):
    url, factory, data_dir, tokens = service
    ids = [finished_run(factory, data_dir, "team-a", f"run{i}", run_text(f"run{i}", "best")) for i in range(10)]
    other = finished_run(factory, data_dir, "team-b", "b0", run_text("b0", "worst"))
    got = race(10, lambda i: call(f"{url}/api/submissions/{ids[i]}/kind", "POST", tokens["a"], {"kind": "primary"}))
    assert sorted(status for status, _ in got) == [200] + [409] * 9, got
    assert "mark that one alternate first" in next(body["detail"] for status, body in got if status == 409)
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(PrimaryRun)) == 1
    winner = next(ids[i] for i, (status, _) in enumerate(got) if status == 200)
    # another team's primary is its own; a team cannot mark another team's run
    assert call(f"{url}/api/submissions/{other}/kind", "POST", tokens["b"], {"kind": "primary"})[0] == 200
    assert call(f"{url}/api/submissions/{other}/kind", "POST", tokens["a"], {"kind": "alternate"})[0] == 404
    # demoted, another may be primary
    assert call(f"{url}/api/submissions/{winner}/kind", "POST", tokens["a"], {"kind": "alternate"})[0] == 200
    again = next(i for i in ids if i != winner)
    assert call(f"{url}/api/submissions/{again}/kind", "POST", tokens["a"], {"kind": "primary"})[0] == 200
    kinds = {r["id"]: r["kind"] for r in call(f"{url}/api/tasks/{TASK}/pool-runs", token=tokens["org"])[1]}
    assert kinds[again] == "primary" and kinds[other] == "primary" and kinds[winner] == "alternate"
    assert call(f"{url}/api/submissions/{ids[1]}/kind", "POST", tokens["a"], {"kind": "best"})[0] == 422


# ----------------------------------------------------------------------------- the whole edition


def judge_all(url: str, token: str, grade_of: Any) -> list[tuple[str, str]]:
    """Judge every item of every topic assigned; (topic, item) of every save acknowledged."""
    saved = []
    for entry in call(f"{url}/api/assess/topics", token=token)[1]:
        cid, topic = entry["campaign"], entry["topic"]
        for item in call(f"{url}/api/assess/campaigns/{cid}/topics/{topic}", token=token)[1]["items"]:
            status, body = call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", token,
                                {"topic": topic, "item": item["item"], "grade": grade_of(topic, item["item"]),
                                 "quality": QUALITY.get(topic, {}).get(item["item"], 0) % 4})
            assert status == 200, body
            saved.append((topic, item["item"]))
    return saved


def test_the_whole_edition_through_the_api_with_two_assessors(service):
    import pytrec_eval

    url, factory, data_dir, tokens = service
    best = finished_run(factory, data_dir, "team-a", "best", run_text("best", "best"))
    worst = finished_run(factory, data_dir, "team-b", "worst", run_text("worst", "worst"))
    assert call(f"{url}/api/submissions/{best}/kind", "POST", tokens["a"], {"kind": "primary"})[0] == 200

    assert call(f"{url}/api/tasks/{TASK}/kinds", token=tokens["a"])[1] == [
        {"id": best, "run": "team-a/best", "kind": "primary"}]  # a team sees its own runs' kinds only
    assert call(f"{url}/api/tasks/{TASK}/kinds", token=tokens["alice"])[0] == 401
    status, pool = call(f"{url}/api/tasks/{TASK}/pools", "POST", tokens["org"], {"seed": 7})
    assert status == 201, pool
    # Touché 2021 pools every run's top 5: the union, computed here by hand
    expected = {t: set(sorted(TRUTH[t], key=lambda d: (-TRUTH[t][d], d))[:5])
                | set(sorted(TRUTH[t], key=lambda d: (-TRUTH[t][d], d))[::-1][:5]) for t in TRUTH}
    assert pool["items"] == sum(len(v) for v in expected.values()) and pool["topics"] == len(TRUTH)

    topics = sorted(TRUTH)
    assignments = {t: ("alice" if i % 2 == 0 else "bob") for i, t in enumerate(topics)}
    status, campaign = call(f"{url}/api/tasks/{TASK}/campaigns", "POST", tokens["org"],
                            {"pool": pool["id"], "assignments": assignments, "double_share": 0.5, "seed": 3})
    assert status == 201, campaign
    cid = campaign["id"]
    # each sees only their topics: the ones assigned, plus those where they judge the double share
    mine = {who: {e["topic"] for e in call(f"{url}/api/assess/topics", token=tokens[who])[1]} for who in ("alice", "bob")}
    assert {t for t, w in assignments.items() if w == "alice"} <= mine["alice"]
    other = next(t for t, w in assignments.items() if w == "bob" and t not in mine["alice"]) \
        if not {t for t, w in assignments.items() if w == "bob"} <= mine["alice"] else None
    if other is not None:
        assert call(f"{url}/api/assess/campaigns/{cid}/topics/{other}", token=tokens["alice"])[0] == 404
    # nothing of it is seen by teams or the public
    assert call(f"{url}/api/campaigns/{cid}", token=tokens["a"])[0] == 403
    assert call(f"{url}/api/campaigns/{cid}")[0] == 401
    assert call(f"{url}/api/campaigns/{cid}/qrels", token=tokens["a"])[0] == 404

    # two assessors at once: alice judges as the sample's truth, bob errs on every third document
    flip = lambda t, d: (TRUTH[t].get(d, 0) + 1) % 4 if hash((t, d)) % 3 == 0 else TRUTH[t].get(d, 0)  # noqa: E731
    with ThreadPoolExecutor(2) as both:
        a = both.submit(judge_all, url, tokens["alice"], lambda t, d: TRUTH[t].get(d, 0))
        b = both.submit(judge_all, url, tokens["bob"], flip)
        saved = {"alice": a.result(), "bob": b.result()}

    status, live = call(f"{url}/api/campaigns/{cid}", token=tokens["org"])
    assert all(p["judged"] == p["items"] for p in live["progress"]), live["progress"]
    with factory() as session:
        rows = session.execute(select(Judgment.topic, Judgment.item, Judgment.assessor_id, Judgment.grade,
                                      Judgment.double)).all()
    assert len(rows) == len(saved["alice"]) + len(saved["bob"])  # no row lost or duplicated
    doubles = {(r.topic, r.item) for r in rows if r.double}
    pairs = sorted(doubles)
    a_grades = [TRUTH[t].get(d, 0) for t, d in pairs]
    b_grades = [flip(t, d) for t, d in pairs]
    agreement = live["agreement"]
    assert agreement["judged_by_both"] == len(pairs) > 0
    assert agreement["cohen_kappa"] == pytest.approx(kappa(a_grades, b_grades), abs=1e-6)
    assert agreement["cohen_kappa_binary"] == pytest.approx(
        kappa([int(g >= 1) for g in a_grades], [int(g >= 1) for g in b_grades]), abs=1e-6)

    # the organizer's page shows the same progress and agreement, live
    page = call(f"{url}/organizer/tasks/{TASK}/assessment", token=tokens["org"])[1]
    assert f"campaign {cid} · open" in page and f"{len(pairs)} items judged by two" in page
    assert f"{kappa(a_grades, b_grades):.3f} graded" in page
    both_zero = sum(1 for x, y in zip(a_grades, b_grades) if x == y == 0)  # the matrix's first cell, by hand
    first = agreement["assessors"][0]  # (a diagonal cell: the same whichever assessor is the rows)
    assert f'<th scope="row">{first} 0</th><td>{both_zero}</td>' in page
    assert all(f"<td>{p['judged']} of {p['items']}</td>" in page for p in live["progress"])
    assert call(f"{url}/organizer/tasks/{TASK}/assessment", token=tokens["a"])[0] == 403
    assert call(f"{url}/organizer/tasks/{TASK}/assessment", token=tokens["alice"])[0] == 401

    status, closed = call(f"{url}/api/campaigns/{cid}/close", "POST", tokens["org"])
    assert status == 200, closed
    assert closed["status"] == "closed" and closed["scored_runs"] == 2
    assert call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens["alice"],
                {"topic": topics[0], "item": saved["alice"][0][1], "grade": 0, "quality": 0})[0] == 409
    # the qrels: every pooled item once; an item judged twice gets the higher grade (Touché's rule: max)
    qrels_text = call(f"{url}/api/campaigns/{cid}/qrels", token=tokens["org"])[1]
    got = {}
    for line in qrels_text.splitlines():
        t, _, d, g = line.split()
        got.setdefault(t, {})[d] = int(g)
    want = {t: {d: max(TRUTH[t].get(d, 0), flip(t, d)) if (t, d) in doubles else
                (TRUTH[t].get(d, 0) if assignments[t] == "alice" else flip(t, d)) for d in expected[t]} for t in expected}
    assert got == want
    assert call(f"{url}/api/campaigns/{cid}/qrels", token=tokens["a"])[0] == 404  # until published
    assert call(f"{url}/api/campaigns/{cid}/publish", "POST", tokens["org"])[0] == 200
    assert call(f"{url}/api/campaigns/{cid}/qrels", token=tokens["a"])[1] == qrels_text

    # a run that finishes after the close is scored by the organizer's rescore
    late = finished_run(factory, data_dir, "team-b", "late", run_text("late", "best"))
    assert call(f"{url}/api/campaigns/{cid}/rescore", "POST", tokens["a"])[0] == 403
    assert call(f"{url}/api/campaigns/{cid}/rescore", "POST", tokens["org"])[1]["scored_runs"] == 3
    # the board scores against the new qrels: pytrec_eval on the same run and qrels
    board = {r["run"]: r["scores"] for r in call(f"{url}/api/tasks/{TASK}/leaderboard", token=tokens["org"])[1]["runs"]}
    assert late and board["team-b/late"]["ndcg_cut_5"] == board["team-a/best"]["ndcg_cut_5"]
    for name, order in (("team-a/best", "best"), ("team-b/worst", "worst")):
        run: dict[str, dict[str, float]] = {}
        for line in run_text("x", order).splitlines():
            t, _, d, _, score, _ = line.split()
            run.setdefault(t, {})[d] = float(score)
        per_topic = pytrec_eval.RelevanceEvaluator(want, {"ndcg_cut_5"}).evaluate(run)
        mean = sum(v["ndcg_cut_5"] for v in per_topic.values()) / len(per_topic)
        assert board[name]["ndcg_cut_5"] == pytest.approx(mean, abs=1e-4), (name, board[name])


def test_the_same_item_judged_in_parallel_stays_one_row_and_no_save_is_lost_to_a_close(service):
    url, factory, data_dir, tokens = service
    finished_run(factory, data_dir, "team-a", "best", run_text("best", "best"))
    pool = call(f"{url}/api/tasks/{TASK}/pools", "POST", tokens["org"], {"seed": 1})[1]
    topics = sorted(TRUTH)
    cid = call(f"{url}/api/tasks/{TASK}/campaigns", "POST", tokens["org"],
               {"pool": pool["id"], "assignments": {t: "alice" for t in topics}, "seed": 0})[1]["id"]
    items = call(f"{url}/api/assess/campaigns/{cid}/topics/{topics[0]}", token=tokens["alice"])[1]["items"]
    item = items[0]["item"]
    got = race(16, lambda i: call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens["alice"],
                                  {"topic": topics[0], "item": item, "grade": i % 4, "quality": 1}))
    assert all(status == 200 for status, _ in got), got
    with factory() as session:
        rows = session.scalars(select(Judgment).where(Judgment.campaign_id == cid, Judgment.item == item)).all()
    assert len(rows) == 1 and rows[0].saves == 16 and rows[0].grade in {0, 1, 2, 3}

    # saves racing the close: every save acknowledged (200) is in the qrels, every later one refused (409)
    rest = [(t, i["item"]) for t in topics[1:]
            for i in call(f"{url}/api/assess/campaigns/{cid}/topics/{t}", token=tokens["alice"])[1]["items"]]

    def act(i: int) -> Any:
        if i == 0:
            return call(f"{url}/api/campaigns/{cid}/close", "POST", tokens["org"])
        t, d = rest[i % len(rest)]
        return (t, d), call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens["alice"],
                            {"topic": t, "item": d, "grade": 3, "quality": 3})

    results = race(12, act)
    assert results[0][0] == 200, results[0]
    acknowledged = {key for key, (status, _) in results[1:] if status == 200}
    assert all(status in (200, 409) for _, (status, _) in results[1:])
    qrels_text = call(f"{url}/api/campaigns/{cid}/qrels", token=tokens["org"])[1]
    in_qrels = {(line.split()[0], line.split()[2]): int(line.split()[3]) for line in qrels_text.splitlines()}
    assert all(in_qrels.get(key) == 3 for key in acknowledged)


def test_bad_campaigns_are_refused_saying_why(service):
    url, factory, data_dir, tokens = service
    finished_run(factory, data_dir, "team-a", "best", run_text("best", "best"))
    pool = call(f"{url}/api/tasks/{TASK}/pools", "POST", tokens["org"], {"seed": 1})[1]
    cases = [({"pool": 999, "assignments": {"51": "alice"}}, 404, "no pool"),
             ({"pool": pool["id"], "assignments": {"51": "carol"}}, 422, "no assessor 'carol'"),
             ({"pool": pool["id"], "assignments": {"51": "alice"}, "double_share": 0.3}, 422, "two assessors"),
             ({"pool": pool["id"], "assignments": {"9999": "alice"}}, 422, "no item")]
    for body, status, words in cases:
        got = call(f"{url}/api/tasks/{TASK}/campaigns", "POST", tokens["org"], body)
        assert got[0] == status and words in got[1]["detail"], got
    cid = call(f"{url}/api/tasks/{TASK}/campaigns", "POST", tokens["org"],
               {"pool": pool["id"], "assignments": {"51": "alice"}})[1]["id"]
    item = call(f"{url}/api/assess/campaigns/{cid}/topics/51", token=tokens["alice"])[1]["items"][0]["item"]
    for body, words in (({"grade": 7, "quality": 1}, "not on the relevance scale"),
                        ({"grade": 1}, "quality too")):
        got = call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens["alice"],
                   {"topic": "51", "item": item, **body})
        assert got[0] == 422 and words in got[1]["detail"], got
    got = call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens["bob"],
               {"topic": "51", "item": item, "grade": 1, "quality": 1})
    assert got[0] == 404  # not bob's topic


# ----------------------------------------------------------------------------- a restart mid-session


def test_a_server_killed_mid_session_loses_no_acknowledged_judgment_and_duplicates_none(tmp_path, database):
    """Two assessors save at once; the server is killed (SIGKILL) after some saves and started
    again; they go on. Every save the server acknowledged is there with its grade, each judgment
    is one row, and resuming shows exactly what was saved."""
    import urllib.error

    from service_helpers import free_port, start_server, stop

    data = tmp_path / "data"
    data.mkdir()
    served = start_server(data, database, free_port())
    try:
        org = served.token()
        served.token("team-a")
        tokens = {who: served.cli("serve", "--db", database, "--data-dir", str(data), "--new-assessor", who)
                  .stdout.strip() for who in ("alice", "bob")}
        factory = sessions(make_engine(database))
        finished_run(factory, data, "team-a", "best", run_text("best", "best"))
        pool = call(f"{served.url}/api/tasks/{TASK}/pools", "POST", org, {"seed": 4})[1]
        topics = sorted(TRUTH)
        cid = call(f"{served.url}/api/tasks/{TASK}/campaigns", "POST", org,
                   {"pool": pool["id"], "assignments": {t: ("alice", "bob")[i % 2] for i, t in enumerate(topics)},
                    "double_share": 0.5, "seed": 9})[1]["id"]
        work = {who: [(e["topic"], i["item"]) for e in call(f"{served.url}/api/assess/topics", token=tokens[who])[1]
                      for i in call(f"{served.url}/api/assess/campaigns/{cid}/topics/{e['topic']}",
                                    token=tokens[who])[1]["items"]] for who in tokens}
        acknowledged: dict[tuple[str, str, str], int] = {}
        lock = threading.Lock()
        half = threading.Event()

        def judge(who: str, url: str, items: list[tuple[str, str]]) -> None:
            for n, (topic, item) in enumerate(items):
                grade = (n + len(who)) % 4
                try:
                    status, _ = call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens[who],
                                     {"topic": topic, "item": item, "grade": grade, "quality": 2})
                except (urllib.error.URLError, ConnectionError, OSError):
                    return  # the server is gone
                if status == 200:
                    with lock:
                        acknowledged[(who, topic, item)] = grade
                        if len(acknowledged) >= 20:
                            half.set()

        threads = [threading.Thread(target=judge, args=(who, served.url, work[who])) for who in tokens]
        for t in threads:
            t.start()
        assert half.wait(120), "no saves came through"
        served.process.kill()  # SIGKILL: no shutdown, no flush
        served.process.wait()
        for t in threads:
            t.join(60)
        before = dict(acknowledged)
        assert 20 <= len(before) < sum(len(v) for v in work.values())
        served = start_server(data, database, free_port())
        # resuming: each assessor sees what the server acknowledged
        for who in tokens:
            for topic in {t for t, _ in work[who]}:
                seen = {i["item"]: i["grade"] for i in call(f"{served.url}/api/assess/campaigns/{cid}/topics/{topic}",
                                                            token=tokens[who])[1]["items"]}
                for (w, t, item), grade in before.items():
                    if w == who and t == topic:
                        assert seen[item] == grade, (who, topic, item)
        threads = [threading.Thread(target=judge, args=(who, served.url, work[who])) for who in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        with factory() as session:
            rows = session.execute(select(Judgment.topic, Judgment.item, Judgment.assessor_id, Judgment.grade)
                                   .where(Judgment.campaign_id == cid)).all()
        keys = [(r.topic, r.item, r.assessor_id) for r in rows]
        assert len(keys) == len(set(keys)) == sum(len(v) for v in work.values())  # one row each, none extra
        assert all(r.grade is not None for r in rows)  # and every one judged in the end
    finally:
        stop(served)


@pytest.mark.parametrize("name, words", [("", "invalid assessor name ''"), ("a b", "invalid assessor name 'a b'"),
                                         ("alice", "an assessor named 'alice' exists already")])
def test_new_assessor_refuses_a_bad_or_taken_name_in_one_line(tmp_path, name, words):
    import subprocess
    import sys

    def new(who: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sharedtask", "serve", "--data-dir", str(tmp_path / "d"),
                               "--new-assessor", who], capture_output=True, text=True, timeout=120)

    first = new("alice")
    assert first.returncode == 0 and first.stdout.strip().startswith("as_")
    got = new(name)
    assert got.returncode == 2 and got.stdout == "", got
    assert words in got.stderr and len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr


def test_the_organizer_pools_opens_closes_and_publishes_from_the_page(service):
    """The organizer's page's forms (url-encoded posts, as a browser sends them) do what the API does."""
    import urllib.parse

    url, factory, data_dir, tokens = service
    finished_run(factory, data_dir, "team-a", "best", run_text("best", "best"))
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    def post(path: str, fields: dict[str, str], token: str = tokens["org"]) -> tuple[int, Any]:
        return call(f"{url}{path}", "POST", token, data=urllib.parse.urlencode(fields).encode(), headers=form)

    assert post(f"/organizer/tasks/{TASK}/pools", {"seed": "3"}, tokens["a"])[0] == 403
    status, page = post(f"/organizer/tasks/{TASK}/pools", {"seed": "3"})  # 303, followed to the page
    assert status == 200 and "pool 1:" in page, page[:300]
    status, page = post(f"/organizer/tasks/{TASK}/campaigns",
                        {"pool": "1", "assign": "51=alice\n52=bob\n", "double_share": "0.5", "seed": "1"})
    assert status == 200 and "campaign 1 · open" in page
    assert {e["topic"] for e in call(f"{url}/api/assess/topics", token=tokens["alice"])[1]} >= {"51"}
    status, body = post(f"/organizer/tasks/{TASK}/campaigns", {"pool": "1", "assign": "51 alice"})
    assert status == 422 and "topic=assessor" in body["detail"]
    judge_all(url, tokens["alice"], lambda t, d: TRUTH[t].get(d, 0))
    judge_all(url, tokens["bob"], lambda t, d: TRUTH[t].get(d, 0))
    status, page = post("/organizer/campaigns/1/close", {})
    assert status == 200 and "campaign 1 · closed" in page and "publish the qrels" in page
    assert call(f"{url}/api/campaigns/1/qrels", token=tokens["a"])[0] == 404
    assert post("/organizer/campaigns/1/publish", {})[0] == 200
    assert call(f"{url}/api/campaigns/1/qrels", token=tokens["a"])[0] == 200
