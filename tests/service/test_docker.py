"""The submission service end to end: a real server process, real ``docker save`` uploads, real sandboxed runs.

Each test starts ``sharedtask serve`` on a free loopback port (SQLite file), makes tokens
with the server's command line, submits tiny real images (``FROM scratch`` + static
busybox, see service_helpers) with ``sharedtask submit`` and reads the API and the pages,
the pages in headless Chromium.
"""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from browser_helpers import chromium
from service_helpers import (TASK, Served, build_tiny_image, call, containers_of, free_port, images, perfect_run,  # noqa: F401
                             start_server, stop, wait_until_up)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PRIMARY = "ndcg5_official"  # the task's primary measure (tasks/_base)


@pytest.fixture
def served(tmp_path: Path, docker_client):
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    db = f"sqlite:///{data_dir / 'service.db'}"
    server = start_server(data_dir, db, free_port())
    try:
        yield server
    finally:
        stop(server)


def wait_for(server: Served, token: str, sid: int, states: tuple[str, ...] = ("done", "failed")) -> dict[str, Any]:
    """Poll until the submission reaches one of ``states`` (a deadline against hanging, not a speed test)."""
    end = time.monotonic() + 300
    while time.monotonic() < end:
        status, sub = call(f"{server.url}/api/submissions/{sid}", token=token)
        assert status == 200, sub
        if sub["status"] in states:
            return sub
        time.sleep(0.3)
    raise AssertionError(f"submission {sid} stayed {sub['status']}")


def submit(server: Served, token: str, image: str, *extra: str) -> tuple[int, dict[str, Any]]:
    done = server.cli("submit", "--server", server.url, "--token", token, "--task", TASK, "--image", image,
                      "--json", *extra, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_quick_starts_submit_run_score_publish_archive(served, images, docker_client):
    """docs/organizers.md's submission service, the organizer's and the teams' side, end to end."""
    org, team_a, team_b = served.token(), served.token("team-a"), served.token("team-b")
    run_text = perfect_run("teamA")
    image = images("perfect", run_text)

    code, sub = submit(served, team_a, image, "--wait", "--tag", "bm25")
    assert code == 0 and sub["status"] == "done" and sub["run_status"] == "success" and sub["valid"] is True
    # every topic of the sample ranked ideally: official nDCG@5 is 1 by definition
    assert sub["scores"][PRIMARY] == pytest.approx(1.0)
    assert sub["validation"]["status"] == "valid" and sub["record"]["exit_code"] == 0

    assert call(f"{served.url}/api/submissions/{sub['id']}", token=team_b)[0] == 404
    assert call(f"{served.url}/api/tasks/{TASK}/leaderboard")[0] == 404  # not published yet

    # the same image again: stored once (one image row), run again as its own submission
    code, again = submit(served, team_a, image, "--wait")
    assert code == 0 and again["id"] != sub["id"] and again["scores"][PRIMARY] == pytest.approx(1.0)
    with sqlite3.connect(served.data_dir / "service.db") as db:
        assert db.execute("select count(*) from images").fetchone()[0] == 1
    assert not list((served.data_dir / "uploads").glob("*"))  # archives are not kept after loading

    # organizer: hide the duplicate with a reason, re-run the first, publish
    assert call(f"{served.url}/api/submissions/{again['id']}/hide", "POST", org, {"reason": "duplicate"})[0] == 200
    assert call(f"{served.url}/api/submissions/{sub['id']}/rerun", "POST", org)[0] == 200
    rerun = wait_for(served, team_a, sub["id"])
    assert rerun["attempts"] == 2 and rerun["scores"][PRIMARY] == pytest.approx(1.0)
    assert call(f"{served.url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200
    status, board = call(f"{served.url}/api/tasks/{TASK}/leaderboard")
    assert status == 200 and [(r["rank"], r["run"]) for r in board["runs"]] == [(1, "team-a/bm25")]
    status, page = call(f"{served.url}/tasks/{TASK}/leaderboard")
    assert status == 200 and "team-a/bm25" in page and 'class="chart' in page

    status, raw = _download(f"{served.url}/api/tasks/{TASK}/archive", org)
    assert status == 200
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        names = set(tar.getnames())
        folder = f"{TASK}/team-a/{sub['id']}-bm25"
        assert {f"{folder}/run.txt", f"{folder}/run-record.json", f"{folder}/ir-metadata.yml",
                f"{TASK}/submissions.json"} <= names
        assert tar.extractfile(f"{folder}/run.txt").read().decode() == run_text
        index = json.load(tar.extractfile(f"{TASK}/submissions.json"))
    assert {s["id"] for s in index} == {sub["id"], again["id"]}
    assert next(s for s in index if s["id"] == again["id"])["hidden"] == "duplicate"


def _download(url: str, token: str) -> tuple[int, bytes]:
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, response.read()


def test_an_image_over_the_tasks_limit_is_refused_and_not_queued(tmp_path, docker_client, images):
    data_dir = tmp_path / "small"
    data_dir.mkdir()
    server = start_server(data_dir, f"sqlite:///{data_dir / 's.db'}", free_port(), "--max-upload", "1m")
    try:
        token = server.token("team-a")
        image = images("big", perfect_run())
        done = server.cli("submit", "--server", server.url, "--token", token, "--task", TASK, "--image", image,
                          check=False)
        assert done.returncode == 2 and "413" in done.stderr and "limit of 1048576 bytes" in done.stderr
        assert call(f"{server.url}/api/submissions", token=token)[1] == []
    finally:
        stop(server)


HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def _dom(url: str, tmp_path: Path, name: str) -> str:
    import subprocess

    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
           "--disable-background-networking", f"--user-data-dir={tmp_path / ('chrome-' + name)}",
           "--virtual-time-budget=2000", "--dump-dom", url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True).stdout


def test_pages_in_chromium_status_to_done_and_hostile_text_escaped(served, images, tmp_path):
    """Submit from the CLI, watch the team page turn to done, publish, read the public leaderboard."""
    org, team = served.token(), served.token("team-a")
    hostile_run = perfect_run("tag\x1b[31m").replace(" Q0 ", " Q0 ", 1)
    lines = hostile_run.splitlines()
    lines[0] = lines[0].split()[0] + f" Q0 {HOSTILE.replace(' ', '')} 0 9 x"  # a doc id that is markup
    image = images("hostile", "\n".join(lines) + "\n",
                   script=f"echo '{HOSTILE}' >&2; printf '\\033[2J\\033]0;title\\007ansi\\n'; sleep 3")
    code, sub = submit(served, team, image, "--command", f"sh /app/run.sh $inputDataset $outputDir # {HOSTILE}")
    assert code == 0 and sub["status"] in ("queued", "running")

    login = f"{served.url}/login?token={team}&next="
    first = _dom(login + "/team", tmp_path, "a")
    assert 'data-status="queued"' in first or 'data-status="running"' in first
    assert 'http-equiv="refresh"' in first  # the page reloads itself while the run is pending
    wait_for(served, team, sub["id"])
    team_dom = _dom(login + "/team", tmp_path, "b")
    assert f'data-id="{sub["id"]}" data-status="done"' in team_dom and 'http-equiv="refresh"' not in team_dom

    detail = _dom(login + f"/submissions/{sub['id']}", tmp_path, "c")
    assert call(f"{served.url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200
    board = _dom(f"{served.url}/tasks/{TASK}/leaderboard", tmp_path, "d")
    organizer = _dom(f"{served.url}/login?token={org}&next=/organizer", tmp_path, "e")
    for name, dom in (("team", team_dom), ("detail", detail), ("board", board), ("organizer", organizer)):
        assert "<title>pwned" not in dom, name  # no script ran, no handler fired (they would set the title)
        assert "<script" not in dom.replace("&lt;script", ""), name
        assert "<img" not in dom.replace("&lt;img", ""), name
        assert "\x1b" not in dom, name
    assert "&lt;script&gt;" in detail  # the markup is shown as text: in the log tail, findings or command
    assert "team-a/run1" in board


def test_server_killed_during_a_run_resumes_without_losing_or_double_scoring(served, images, docker_client):
    token = served.token("team-a")
    slow = images("slow", perfect_run(), script="sleep 6")
    quick = images("quick", perfect_run("quick"))
    _, first = submit(served, token, slow)
    _, second = submit(served, token, quick)
    wait_for(served, token, first["id"], ("running",))
    end = time.monotonic() + 120  # the container is there (a hang bound, not a delay)
    while not containers_of(docker_client, slow) and time.monotonic() < end:
        time.sleep(0.1)
    served.process.send_signal(signal.SIGKILL)
    served.process.wait()
    with sqlite3.connect(served.data_dir / "service.db") as db:
        states = dict(db.execute("select id, status from submissions").fetchall())
    assert states == {first["id"]: "running", second["id"]: "queued"}

    port = int(served.url.rsplit(":", 1)[1])
    again = start_server(served.data_dir, served.db, port)
    served.process = again.process
    wait_until_up(served.url)
    done_first = wait_for(served, token, first["id"])
    done_second = wait_for(served, token, second["id"])
    assert done_first["status"] == done_second["status"] == "done"
    assert done_first["attempts"] == 2 and done_second["attempts"] == 1  # none run or scored twice after
    assert any("run again after the restart" in n for n in done_first["notes"])
    assert done_first["scores"][PRIMARY] == pytest.approx(1.0)
    # the killed server's container was reaped by the next run
    assert containers_of(docker_client, slow) == []


def test_demo_serve_submits_every_software_as_a_team_and_publishes(tmp_path, images):
    """``sharedtask demo --serve``: the newcomer's loop through the service, left running until stopped."""
    import subprocess
    import sys

    image = images("demo", perfect_run("demo"))
    subs = tmp_path / "submissions.yml"
    subs.write_text(f"version: 1\nsubmissions:\n  team-demo: {{image: '{image}', tasks: [{TASK}]}}\n")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "sharedtask", "demo", "--task", TASK, "--submissions",
                                str(subs), "--no-baselines", "--serve", "--port", str(port), "--output",
                                str(tmp_path / "demo")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}"
        end = time.monotonic() + 300
        status, board = 0, None
        while time.monotonic() < end and process.poll() is None:
            try:
                status, board = call(f"{url}/api/tasks/{TASK}/leaderboard")
            except OSError:
                status = 0
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, process.stdout.read().decode() if process.poll() is not None else status
        assert board["runs"][0]["rank"] == 1 and board["runs"][0]["run"] == "team-demo/run1"
        assert board["runs"][0]["scores"][PRIMARY] == pytest.approx(1.0)
        assert process.poll() is None  # still serving: the organizer's page stays open
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 0, output
    assert "/login?token=" in output and "next=/organizer" in output


def test_stopping_the_server_does_not_wait_for_a_run_and_the_run_resumes(served, images, docker_client):
    """Ctrl-C/SIGTERM of ``sharedtask serve`` ends it with a run still going; the next start runs it again."""
    token = served.token("team-a")
    slow = images("slower", perfect_run(), script="sleep 120")
    _, sub = submit(served, token, slow)
    wait_for(served, token, sub["id"], ("running",))
    end = time.monotonic() + 120  # the first attempt's container is there (a hang bound, not a delay)
    while not (first := containers_of(docker_client, slow)) and time.monotonic() < end:
        time.sleep(0.1)
    assert len(first) == 1
    served.process.send_signal(signal.SIGTERM)
    # far less than the container's 120 s: the server did not wait for the run
    assert served.process.wait(timeout=60) is not None
    with sqlite3.connect(served.data_dir / "service.db") as db:
        assert db.execute("select status from submissions where id = ?", (sub["id"],)).fetchone() == ("running",)
    again = start_server(served.data_dir, served.db, int(served.url.rsplit(":", 1)[1]))
    served.process = again.process
    resumed = wait_for(served, token, sub["id"], ("running",))
    assert resumed["attempts"] == 2 and any("run again after the restart" in n for n in resumed["notes"])
    # the second attempt reaps the first one's container (it may still be going on: wait for it)
    end = time.monotonic() + 120  # a hang bound, not a delay
    while first[0] in (now := containers_of(docker_client, slow)) and time.monotonic() < end:
        time.sleep(0.1)
    assert first[0] not in now and len(now) <= 1
    stop(served)  # before the image fixture cleans up: no worker may start the run again meanwhile


def test_layers_over_the_limit_are_413_before_docker_and_a_docker_refusal_is_400(images, docker_client, tmp_path):
    """The size check (the layers unpacked, counted before docker sees them) and docker's own refusal."""
    from sharedtask.service.uploads import UploadError, clean_archive, load_archive

    image = images("loaded", perfect_run())
    raw, clean = tmp_path / "raw.tar", tmp_path / "clean.tar"
    raw.write_bytes(b"".join(docker_client.api.get_image(image)))
    clean_archive(raw, clean)
    with tarfile.open(clean) as tar:  # docker save writes its layers as plain tar: their size is what unpacks
        unpacked = sum(m.size for m in tar.getmembers() if m.name.startswith("layer-"))
    with pytest.raises(UploadError) as refused:
        load_archive(clean, unpacked - 1, "0" * 64)
    assert refused.value.status == 413 and f"unpack to more than the task's limit of {unpacked - 1}" in str(
        refused.value)
    assert f"sharedtask-submissions:{'0' * 64}" not in docker_client.images.get(image).tags
    loaded = load_archive(clean, unpacked, "1" * 64)
    assert loaded.docker_id == docker_client.images.get(image).id
    assert loaded.size == docker_client.images.get(image).attrs["Size"] <= unpacked
    assert f"sharedtask-submissions:{'1' * 64}" in docker_client.images.get(image).tags
    # an image for another operating system: our checks pass, docker refuses, the service says so in one line
    foreign = tmp_path / "foreign.tar"
    with tarfile.open(raw) as tin, tarfile.open(foreign, "w") as tout:
        config_name = json.load(tin.extractfile("manifest.json"))[0]["Config"]
        for member in tin.getmembers():
            data = tin.extractfile(member).read() if member.isfile() else None
            if member.name == config_name:
                data = json.dumps({**json.loads(data), "os": "windows"}).encode()
                member.size = len(data)
            tout.addfile(member, io.BytesIO(data) if data is not None else None)
    clean_archive(foreign, clean)
    with pytest.raises(UploadError) as bad:
        load_archive(clean, unpacked, "2" * 64)
    assert bad.value.status == 400 and "docker could not load the image archive" in str(bad.value)


def test_blind_mode_keeps_logs_and_finding_details_from_teams(tmp_path, images):
    """``serve --blind``: what a container printed or what the findings quote never reaches a team or the public."""
    data_dir = tmp_path / "blind"
    data_dir.mkdir()
    server = start_server(data_dir, f"sqlite:///{data_dir / 's.db'}", free_port(), "--blind")
    try:
        org, team = server.token(), server.token("team-a")
        lines = perfect_run().splitlines()
        lines[0] = lines[0].split()[0] + " Q0 SECRET-DOC-ID 0 9 x"  # a finding would quote it
        image = images("blind", "\n".join(lines) + "\n", script="echo SECRET-IN-THE-LOG >&2")
        code, sub = submit(server, team, image, "--wait")
        assert sub["status"] == "done" and sub["valid"] is False and code == 1
        assert "record" not in sub and "validation" not in sub and "SECRET" not in json.dumps(sub)
        findings = sub["findings"]  # codes only (tests/service/test_blind.py: the whole allow-list)
        assert findings and all(set(f) == {"code", "severity"} for f in findings)
        assert "RUN-DOC-ID" in {f["code"] for f in findings}  # the codes stay: the team knows what to fix
        status, page = call(f"{server.url}/submissions/{sub['id']}", token=team)
        assert status == 200 and "SECRET" not in page
        status, full = call(f"{server.url}/api/submissions/{sub['id']}", token=org)
        assert "logs" in full["record"] and "SECRET-DOC-ID" in json.dumps(full["validation"])
        status, page = call(f"{server.url}/submissions/{sub['id']}", token=org)
        assert "SECRET-IN-THE-LOG" in page and "SECRET-DOC-ID" in page
        call(f"{server.url}/api/tasks/{TASK}/publish", "POST", org)
        status, board = call(f"{server.url}/tasks/{TASK}/leaderboard")
        assert status == 200 and "team-a/run1" in board and "SECRET" not in board
    finally:
        stop(server)
