"""``serve --broker``: the service's submissions run on real compute workers, through real faults.

Real parts: a redis-server on a loopback port, ``sharedtask worker`` processes, a
``sharedtask serve --broker`` process, images uploaded with ``sharedtask submit`` (the tiny
busybox images of service_helpers) and their containers. Faults are real: a worker killed
with SIGKILL mid-run, the broker restarted, the server killed with SIGKILL. The workers'
visibility timeout is short (4 s) so that a dead worker's job comes back quickly.

Exactly once is read from the workers' own event lines (``job-finished`` per job) and the
broker's delivery counters, never from the service's word alone. The expected score is
nDCG@5 = 1 by construction (service_helpers.perfect_run), not copied from our output.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from distributed_helpers import (RedisServer, Worker, broker, redis_binary, wait_for,  # noqa: F401 - fixtures
                                 workers)
from service_helpers import TASK, Served, call, containers_of, free_port, images, perfect_run, start_server, stop  # noqa: F401
from sharedtask.service.runs.claims import BROKER_RESUMED_NOTE
from sharedtask.service.runs.server_id import server_id

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PRIMARY = "ndcg5_official"


@pytest.fixture
def service(tmp_path: Path, broker: RedisServer):  # noqa: F811 - the fixture
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    server = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port(), "--broker", broker.url)
    try:
        yield server
    finally:
        stop(server)


def submit(server: Served, token: str, image: str) -> dict[str, Any]:
    done = server.cli("submit", "--server", server.url, "--token", token, "--task", TASK, "--image", image,
                      "--json", check=False)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def submission(server: Served, token: str, sid: int) -> dict[str, Any]:
    status, sub = call(f"{server.url}/api/submissions/{sid}", token=token)
    assert status == 200, sub
    return sub


def finished(server: Served, token: str, sid: int) -> dict[str, Any]:
    return wait_for(lambda: (s := submission(server, token, sid))["status"] in ("done", "failed") and s, 300, 0.3)


def finishes(*ws: Worker) -> dict[str, list[str]]:
    """job id -> the workers that reported it finished (their event lines)."""
    out: dict[str, list[str]] = {}
    for w in ws:
        for event in w.events("job-finished"):
            out.setdefault(event["job"], []).append(event["worker"])
    return out


def stored_jobs(server: Served) -> dict[int, str]:
    """submission id -> the id of the job the server sent (its database row)."""
    with sqlite3.connect(server.data_dir / "service.db") as db:
        return {sid: json.loads(job)["id"] for sid, job in db.execute("select id, job from submissions")}


def deliveries(broker: RedisServer, job_id: str, server: Served | None = None) -> int:  # noqa: F811
    """How many times the job was delivered; keyed by the server's namespaced task id (server_id.py)."""
    import redis

    key = f"{server_id(server.data_dir)}.{job_id}" if server is not None else job_id
    return int(redis.Redis(port=broker.port).get(f"sharedtask:deliveries:{key}") or 0)


def test_two_teams_a_worker_killed_and_the_broker_restarted_each_submission_scored_once(
        service, broker, workers, images, docker_client):  # noqa: F811 - fixtures
    first, second = workers(broker, "wa"), workers(broker, "wb")
    alpha, beta = service.token("alpha"), service.token("beta")
    slow = images("slow", perfect_run("slow"), script="sleep 8")
    quick = images("quick", perfect_run("quick"))
    a = submit(service, alpha, slow)
    b = submit(service, beta, quick)
    assert a["status"] == b["status"] == "queued"

    # the slow run is on a worker: the API names it, and its container exists
    running = wait_for(lambda: (s := submission(service, alpha, a["id"]))["status"] == "running"
                       and s["worker"] in ("wa", "wb") and s, 120)
    victim, survivor = (first, second) if running["worker"] == "wa" else (second, first)
    wait_for(lambda: containers_of(docker_client, slow), 60)
    victim.kill()
    broker.restart()  # while the killed worker's job waits to be handed out again

    done_a, done_b = finished(service, alpha, a["id"]), finished(service, beta, b["id"])
    assert done_a["status"] == done_b["status"] == "done"
    assert done_a["scores"][PRIMARY] == pytest.approx(1.0) and done_b["scores"][PRIMARY] == pytest.approx(1.0)
    assert done_a["worker"] == survivor.name  # the run the killed worker left ended on the other one
    assert done_a["attempts"] == 1  # the server claimed it once; the workers' redelivery is theirs

    # exactly once: the workers' own events, one finish per submission's job; the slow job was delivered twice
    jobs = stored_jobs(service)
    ended = finishes(first, second)
    assert ended == {jobs[a["id"]]: [survivor.name], jobs[b["id"]]: [done_b["worker"]]}
    assert deliveries(broker, jobs[a["id"]], service) == 2 and deliveries(broker, jobs[b["id"]], service) == 1
    # the team's page shows the worker too
    status, page = call(f"{service.url}/team", token=beta)
    assert status == 200 and f'<td class="worker">{done_b["worker"]}</td>' in page


def test_a_server_killed_mid_run_waits_for_the_same_job_and_a_rerun_runs_again(
        service, broker, workers, images, docker_client):  # noqa: F811 - fixtures
    worker = workers(broker, "wsolo")
    team = service.token("gamma")
    slow = images("slow2", perfect_run("slow2"), script="sleep 6")
    sub = submit(service, team, slow)
    wait_for(lambda: submission(service, team, sub["id"])["worker"] == "wsolo", 120)
    # a team waits on it with `sharedtask status --wait` across the restart
    waiting = subprocess.Popen([sys.executable, "-m", "sharedtask", "status", "--server", service.url, "--token",
                                team, str(sub["id"]), "--wait", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    service.process.send_signal(signal.SIGKILL)
    service.process.wait()

    port = int(service.url.rsplit(":", 1)[1])
    service.process = start_server(service.data_dir, service.db, port, "--broker", broker.url).process
    out, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, err
    assert json.loads(out)["status"] == "done" and json.loads(out)["id"] == sub["id"]
    done = finished(service, team, sub["id"])
    assert done["status"] == "done" and done["scores"][PRIMARY] == pytest.approx(1.0)
    assert BROKER_RESUMED_NOTE in done["notes"] and done["attempts"] == 2
    job = stored_jobs(service)[sub["id"]]
    assert finishes(worker) == {job: ["wsolo"]} and deliveries(broker, job, service) == 1  # waited for, not sent again

    organizer = service.token()
    status, _ = call(f"{service.url}/api/submissions/{sub['id']}/rerun", "POST", token=organizer)
    assert status == 200
    again = wait_for(lambda: (s := submission(service, team, sub["id"]))["status"] == "done"
                     and s["attempts"] == 3 and s, 300, 0.3)
    assert again["scores"][PRIMARY] == pytest.approx(1.0)
    new_job = stored_jobs(service)[sub["id"]]
    assert new_job != job and finishes(worker) == {job: ["wsolo"], new_job: ["wsolo"]}  # a new job, run once


def test_a_re_ranker_runs_on_a_worker_with_the_published_stage_shipped(
        tmp_path, broker, workers, images, docker_client):  # noqa: F811 - fixtures
    """`serve --broker --images-dir`: a published stage travels to the worker as images do."""
    from sharedtask.data.checksum import sha256

    worker = workers(broker, "wr")
    data_dir = tmp_path / "shipping"
    data_dir.mkdir()
    shipped = tmp_path / "shipped"
    server = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port(), "--broker", broker.url,
                          "--images-dir", str(shipped))
    try:
        org, team = server.token(), server.token("team-r")
        status, stage = call(f"{server.url}/api/tasks/{TASK}/stages/bm25", "PUT", org,
                             data=perfect_run("bm25").encode(), headers={"Content-Type": "text/plain"})
        assert status == 200, stage
        # the first stage's run, re-tagged: every document is a candidate, nDCG@5 1 by construction
        reranker = images("shipped-rerank", perfect_run("bm25"),
                          script='sed "s/ bm25$/ rr/" "$inputRun/run.txt" > "$2/run.txt"\nexit 0')
        done = server.cli("submit", "--server", server.url, "--token", team, "--task", TASK, "--image", reranker,
                          "--input-run", "bm25", "--json", check=False)
        assert done.returncode in (0, 1), done.stderr
        sub = finished(server, team, json.loads(done.stdout)["id"])
        assert sub["status"] == "done" and sub["valid"] is True and sub["worker"] == "wr", sub
        assert sub["scores"][PRIMARY] == pytest.approx(1.0) and sub["input_run"] == "bm25"
        assert sub["record"]["rerank"]["sha256"] == stage["sha256"]
        assert (shipped / f"stage-{stage['sha256']}.tar").is_file()
        assert sha256(worker.work_dir / "stages" / stage["sha256"] / "rerank.jsonl.gz") == stage["sha256"]
    finally:
        stop(server)
