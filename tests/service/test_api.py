"""The submission service's HTTP API without Docker: roles, refusals, settings, migrations.

A real uvicorn server on 127.0.0.1 answers real HTTP requests over a real SQLite file
migrated by Alembic. Only the executor is replaced (:class:`RecordingExecutor`): these
tests check what is *queued*, and running containers is the Docker tests' part
(tests/service/test_docker.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from sqlalchemy import func, inspect, select

from service_helpers import RecordingExecutor, TASK, call
from sharedtask.service.db import make_engine, migrate, sessions
from sharedtask.service.runs import resume
from sharedtask.service.runs.claims import RESUMED_NOTE, claim
from sharedtask.service.models import Image, Submission
from sharedtask.service.teams.tokens import create_team
from sharedtask.service.uploads import UploadError, clean_archive

HEAD = "0006"  # the newest migration (src/sharedtask/service/migrations/versions)


@pytest.fixture
def service(tmp_path: Path, database: str, in_thread):
    s = in_thread(database, "team-a", "team-b", max_upload=64 * 1024)
    tokens = {"org": s.tokens["org"], "a": s.tokens["team-a"], "b": s.tokens["team-b"]}
    return s.url, s.factory, s.runs, tokens, tmp_path


def _add_submission(factory, team_name: str) -> int:
    from sharedtask.service.models import Team

    with factory.begin() as session:
        team = session.scalar(select(Team).where(Team.name == team_name))
        image = Image(archive_sha256=f"{team_name:0<64}"[:64], docker_id="sha256:x", size=1)
        session.add(image)
        session.flush()
        sub = Submission(team_id=team.id, task_id=TASK, image_id=image.id, image_name="sha256:x", tag="t",
                         status="done", attempts=1, notes=[])
        session.add(sub)
        session.flush()
        return sub.id


def test_missing_or_wrong_token_is_401(service):
    url, _, _, tokens, _ = service
    assert call(f"{url}/api/submissions")[0] == 401
    assert call(f"{url}/api/submissions", token="not-a-token")[0] == 401
    assert call(f"{url}/api/submissions", token=tokens["a"])[0] == 200


def test_another_teams_submission_is_404_like_a_missing_one(service):
    url, factory, _, tokens, _ = service
    sid = _add_submission(factory, "team-b")
    theirs = call(f"{url}/api/submissions/{sid}", token=tokens["a"])
    missing = call(f"{url}/api/submissions/{sid + 1000}", token=tokens["a"])
    assert theirs[0] == missing[0] == 404
    assert str(sid) in theirs[1]["detail"] and "team-b" not in json.dumps(theirs[1])
    assert call(f"{url}/api/submissions/{sid}", token=tokens["b"])[0] == 200
    assert call(f"{url}/api/submissions/{sid}", token=tokens["org"])[0] == 200
    assert call(f"{url}/api/submissions", token=tokens["a"])[1] == []


def test_organizer_actions_by_a_team_are_403(service):
    url, factory, _, tokens, _ = service
    sid = _add_submission(factory, "team-a")
    for method, path, body in (("POST", f"/api/tasks/{TASK}/publish", None), ("POST", "/api/teams", {"name": "x"}),
                               ("POST", f"/api/submissions/{sid}/rerun", None),
                               ("POST", f"/api/submissions/{sid}/hide", {"reason": "r"}),
                               ("PUT", f"/api/tasks/{TASK}/settings", {"daily_limit": 1}),
                               ("GET", f"/api/tasks/{TASK}/archive", None)):
        assert call(url + path, method, tokens["a"], body)[0] == 403, path
    assert call(f"{url}/api/teams", "POST", tokens["org"], {"name": "team-c"})[0] == 201


def test_teams_made_over_http_get_a_working_token(service):
    url, _, _, tokens, _ = service
    status, made = call(f"{url}/api/teams", "POST", tokens["org"], {"name": "team-c"})
    assert status == 201 and made["team"] == "team-c"
    assert call(f"{url}/api/submissions", token=made["token"])[0] == 200
    assert call(f"{url}/api/teams", "POST", tokens["org"], {"name": "team-c"})[0] == 400  # taken
    assert call(f"{url}/api/teams", "POST", tokens["org"], {"name": "<b>x</b>"})[0] == 400


def test_leaderboard_is_hidden_until_published(service):
    url, factory, _, tokens, _ = service
    _add_submission(factory, "team-a")
    assert call(f"{url}/api/tasks/{TASK}/leaderboard")[0] == 404
    assert call(f"{url}/tasks/{TASK}/leaderboard")[0] == 404
    assert call(f"{url}/api/tasks/{TASK}/leaderboard", token=tokens["a"])[0] == 404
    assert call(f"{url}/api/tasks/{TASK}/leaderboard", token=tokens["org"])[0] == 200
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200
    status, board = call(f"{url}/api/tasks/{TASK}/leaderboard")
    assert status == 200 and [r["run"] for r in board["runs"]] == ["team-a/t"]


def test_upload_over_the_limit_is_413_before_the_body_is_stored(service):
    url, factory, executor, tokens, data_dir = service
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as sock:
        sock.sendall((f"POST /api/tasks/{TASK}/submissions HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {tokens['a']}\r\nContent-Type: application/x-tar\r\n"
                      f"Content-Length: {10 * 1024**3}\r\n\r\n").encode())
        answer = b""  # answered before a single byte of the body was sent
        while b"limit" not in answer and (chunk := sock.recv(65536)):
            answer += chunk
        answer = answer.decode()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "limit of 65536 bytes" in answer
    assert not list((data_dir / "uploads").glob("*")) and executor.queued == []


def test_chunked_upload_over_the_limit_is_413_and_removed(service):
    url, _, executor, tokens, data_dir = service
    body = iter([b"x" * 50_000, b"y" * 50_000])
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]))
    conn.request("POST", f"/api/tasks/{TASK}/submissions", body=body, encode_chunked=True,
                 headers={"Authorization": f"Bearer {tokens['a']}", "Content-Type": "application/x-tar"})
    assert conn.getresponse().status == 413
    assert not list((data_dir / "uploads").glob("*")) and executor.queued == []


def test_interrupted_upload_stores_nothing(service):
    url, factory, executor, tokens, data_dir = service
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as sock:
        sock.sendall((f"POST /api/tasks/{TASK}/submissions HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {tokens['a']}\r\nContent-Type: application/x-tar\r\n"
                      "Content-Length: 60000\r\n\r\n").encode() + b"\0" * 20_000)
    # the connection is closed mid-body; the next request is answered only after the server saw it
    assert call(f"{url}/api/submissions", token=tokens["a"])[1] == []
    for _ in range(50):
        if not list((data_dir / "uploads").glob("*")):
            break
        import time

        time.sleep(0.1)
    assert not list((data_dir / "uploads").glob("*")) and executor.queued == []
    with factory() as session:
        assert session.scalar(select(func.count(Image.id))) == 0


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("payload, message", [
    (b"this is not a tar archive at all" * 40, "corrupt image archive"),
    (_tar({"hello.txt": b"hi"}), "no manifest.json"),
    (_tar({"manifest.json": b"[]"}), "lists no image"),
    (_tar({"../evil": b"x"}), "leaves the archive"),
])
def test_corrupt_archive_is_a_clear_error_and_nothing_is_queued(service, payload, message):
    url, factory, executor, tokens, data_dir = service
    status, body = call(f"{url}/api/tasks/{TASK}/submissions", "POST", tokens["a"], data=payload,
                        headers={"Content-Type": "application/x-tar"})
    assert status == 400 and message in body["detail"], body
    assert executor.queued == [] and not list((data_dir / "uploads").glob("*"))
    with factory() as session:
        assert session.scalar(select(func.count(Submission.id))) == 0


def test_announced_sha256_must_match(service):
    url, _, executor, tokens, _ = service
    status, body = call(f"{url}/api/tasks/{TASK}/submissions", "POST", tokens["a"], data=_tar({"a": b"b"}),
                        headers={"Content-Type": "application/x-tar", "X-Image-Sha256": "0" * 64})
    assert status == 400 and "not " + "0" * 64 in body["detail"] and executor.queued == []


def test_clean_archive_keeps_only_our_manifest_the_config_and_the_layers(tmp_path):
    """Names an archive would give itself (RepoTags, repositories, index.json annotations) never reach docker."""
    layer = _tar({"hello": b"hi"})
    config = json.dumps({"rootfs": {"type": "layers",
                                    "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}}).encode()
    manifest = [{"Config": "abc.json", "RepoTags": ["sharedtask/base:latest"], "Layers": ["l/layer.tar"]}]
    index = {"manifests": [{"digest": "sha256:1", "annotations": {"io.containerd.image.name": "sharedtask/base"}}]}
    source = tmp_path / "in.tar"
    source.write_bytes(_tar({"manifest.json": json.dumps(manifest).encode(), "index.json": json.dumps(index).encode(),
                             "repositories": b'{"sharedtask/base": {"latest": "abc"}}', "abc.json": config,
                             "oci-layout": b'{"imageLayoutVersion": "1.0.0"}', "l/layer.tar": layer}))
    clean_archive(source, tmp_path / "out.tar", max_size=1 << 20)
    with tarfile.open(tmp_path / "out.tar") as tar:
        assert all(m.isfile() for m in tar.getmembers())
        names = tar.getnames()
        cleaned = json.load(tar.extractfile("manifest.json"))
        copied = tar.extractfile("config.json").read(), tar.extractfile("layer-0.tar").read()
    assert names == ["manifest.json", "config.json", "layer-0.tar"]
    assert cleaned == [{"Config": "config.json", "RepoTags": None, "Layers": ["layer-0.tar"]}]
    assert copied == (config, layer)


def test_a_second_image_in_one_archive_is_refused(tmp_path):
    source = tmp_path / "in.tar"
    source.write_bytes(_tar({"manifest.json": json.dumps([{"Config": "a"}, {"Config": "b"}]).encode()}))
    with pytest.raises(UploadError, match="holds 2 images"):
        clean_archive(source, tmp_path / "out.tar")
    assert not (tmp_path / "out.tar").exists()


def test_closed_task_and_daily_limit(service):
    url, factory, executor, tokens, _ = service
    status, _ = call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"], {"closes": "2000-01-01T00:00:00Z"})
    assert status == 200
    status, body = call(f"{url}/api/tasks/{TASK}/submissions", "POST", tokens["a"], {"image": "x/y:1"})
    assert status == 403 and "closed for submissions at 2000-01-01T00:00:00" in body["detail"]
    call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"], {"daily_limit": 1})
    status, page = call(f"{url}/team", token=tokens["a"])
    assert status == 200 and f'<span data-task="{TASK}"><code>{TASK}</code> 1 of 1</span>' in page
    _add_submission(factory, "team-a")  # made now: today's one submission
    status, body = call(f"{url}/api/tasks/{TASK}/submissions", "POST", tokens["a"], {"image": "x/y:1"})
    assert status == 429 and "1 submission(s)" in body["detail"]
    assert executor.queued == []
    # the team page said so before the refusal: none left today; the organizer has no quota line
    status, page = call(f"{url}/team", token=tokens["a"])
    assert status == 200 and f'<code>{TASK}</code> 0 of 1</span>' in page
    assert 'class="quota"' not in call(f"{url}/team", token=tokens["org"])[1]


def test_unknown_task_is_404(service):
    url, _, _, tokens, _ = service
    assert call(f"{url}/api/tasks/no-such-task/submissions", "POST", tokens["a"], {"image": "x"})[0] == 404


def test_openapi_documents_the_api(service):
    url = service[0]
    status, doc = call(f"{url}/openapi.json")
    assert status == 200
    for path in ("/api/tasks/{task_id}/submissions", "/api/submissions/{submission_id}", "/api/teams",
                 "/api/tasks/{task_id}/publish", "/api/tasks/{task_id}/leaderboard", "/api/tasks/{task_id}/archive",
                 "/api/submissions/{submission_id}/hide", "/api/submissions/{submission_id}/rerun"):
        assert path in doc["paths"], path


def test_pages_need_a_token_and_the_login_link_sets_it(service):
    url, _, _, tokens, _ = service
    assert call(f"{url}/team")[0] == 401
    assert call(f"{url}/organizer", token=tokens["a"])[0] == 403
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]))
    conn.request("GET", f"/login?token={tokens['a']}")
    answer = conn.getresponse()
    assert answer.status == 303 and answer.getheader("location") == "/team"
    cookie = answer.getheader("set-cookie")
    # a sign-in of its own, never the token; it expires (14 days) and cannot be read by scripts
    assert cookie.startswith("sharedtask_session=si_") and tokens["a"] not in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=1209600" in cookie
    status, page = call(f"{url}/team", headers={"Cookie": cookie.split(";")[0]})
    assert status == 200 and "submissions of team-a" in page
    assert call(f"{url}/login?token=wrong")[0] == 401


def test_a_sign_in_ends_with_sign_out_and_with_its_revoked_token(service):
    import http.client

    url, factory, _, tokens, _ = service
    port = int(url.rsplit(":", 1)[1])

    def signed_in(token: str) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("GET", f"/login?token={token}")
        response = conn.getresponse()
        cookie = response.getheader("set-cookie")
        assert cookie, (response.status, response.read()[:500])
        return cookie.split(";")[0]

    first, second = signed_in(tokens["a"]), signed_in(tokens["a"])
    assert call(f"{url}/logout", "POST", headers={"Cookie": first}, data=b"")[0] == 200  # back on /
    assert call(f"{url}/team", headers={"Cookie": first})[0] == 401  # that browser is signed out
    assert call(f"{url}/team", headers={"Cookie": second})[0] == 200  # the other one is not
    status, member = call(f"{url}/api/teams/team-a/tokens", "POST", tokens["org"])
    third = signed_in(member["token"])
    assert call(f"{url}/team", headers={"Cookie": third})[0] == 200
    call(f"{url}/api/teams/team-a/tokens/{member['id']}/revoke", "POST", tokens["org"])
    assert call(f"{url}/team", headers={"Cookie": third})[0] == 401  # revoking a token signs it out
    assert call(f"{url}/team", headers={"Cookie": second})[0] == 200
    from sharedtask.service.models import SignIn, utcnow

    with factory.begin() as session:  # fourteen days later
        for row in session.scalars(select(SignIn)):
            row.expires = utcnow() - dt.timedelta(seconds=1)
    assert call(f"{url}/team", headers={"Cookie": second})[0] == 401  # expired


def _queued(database: str, count: int):
    """A migrated database with one team and ``count`` queued submissions (ids 1..count)."""
    engine = make_engine(database)
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        team, _ = create_team(session, "t")
        image = Image(archive_sha256="0" * 64, docker_id="sha256:x", size=1)
        session.add(image)
        session.flush()
        for _ in range(count):
            session.add(Submission(team_id=team.id, task_id=TASK, image_id=image.id, image_name="x", tag="t",
                                   status="queued", attempts=0, notes=[]))
    return factory


def test_claim_is_atomic_and_resume_requeues_interrupted_runs(database):
    factory = _queued(database, 2)
    assert claim(factory, 1) == 1
    assert claim(factory, 1) is None  # queued twice, claimed once
    executor = RecordingExecutor()
    assert resume(factory, executor) == [1, 2] and executor.queued == [1, 2]
    with factory() as session:
        first = session.get(Submission, 1)
        assert first.status == "queued" and first.notes == [RESUMED_NOTE]
    assert claim(factory, 1) == 2  # the second attempt


def test_migrations_make_the_schema_and_are_idempotent(database):
    engine = make_engine(database)
    migrate(engine)
    migrate(engine)
    assert {"teams", "tokens", "images", "submissions", "task_settings", "alembic_version"} <= set(
        inspect(engine).get_table_names())
    with engine.connect() as conn:
        assert conn.exec_driver_sql("select version_num from alembic_version").scalar() == HEAD


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sharedtask", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("args, message", [
    (["serve", "--db", "mysql+nodriver://x/y"], "cannot open the database"),
    (["serve", "--broker", "redis://127.0.0.1:9/0"], "does not answer"),
    (["serve", "--images-dir", "x"], "need --broker"),
    (["serve", "--processes", "0"], "--processes 0: must be at least 1"),
    (["serve", "--task", "no-such-task"], "no-such-task"),
    (["serve", "--new-team", "a b"], "invalid team name"),
    (["submit", "--server", "http://127.0.0.1:9", "--token", "t", "--task", TASK, "--image", "x", "--registry"],
     "cannot reach the server"),
    (["submit", "--server", "ftp://x", "--token", "t", "--task", TASK, "--image", "x", "--registry"],
     "invalid server URL"),
])
def test_cli_mistakes_are_one_line_exit_2(tmp_path, args, message):
    extra = ["--data-dir", str(tmp_path / "d")] if args[0] == "serve" else []
    done = _cli(*args, *extra, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2  # one line, wrapped at most once by the console


def test_port_in_use_is_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _cli("serve", "--data-dir", str(tmp_path / "d"), "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2 and "cannot listen on 127.0.0.1" in done.stderr and "Traceback" not in done.stderr


def test_validation_is_stored_before_scoring_and_only_for_the_current_claim(database):
    from sharedtask.report.model import RunEntry
    from sharedtask.service.runs.claims import store_validation

    factory = _queued(database, 1)
    attempt = claim(factory, 1)
    entry = RunEntry(name="t", image="x", command=None, status="success", valid=False, findings=[], scores={},
                     per_topic={}, record={"status": "success", "validation": {"status": "invalid"}})
    assert not store_validation(factory, 1, attempt + 1, entry)  # a stale claim stores nothing
    assert store_validation(factory, 1, attempt, entry)
    with factory() as session:
        sub = session.get(Submission, 1)
        assert (sub.status, sub.run_status, sub.valid, sub.scores) == ("running", "success", False, None)
        assert sub.record["validation"] == {"status": "invalid"}


def test_organizer_page_forms_publish_and_set_dates(service):
    url, _, _, tokens, _ = service
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _ = call(f"{url}/organizer/tasks/{TASK}/settings", "POST", tokens["org"],
                     data=b"opens=2030-01-02T03%3A04&closes=&daily_limit=3", headers=form)
    assert status == 200  # the redirect to /organizer, followed
    settings = {t["task"]: t for t in call(f"{url}/api/tasks")[1]}[TASK]
    assert settings["opens"] == "2030-01-02T03:04:00+00:00" and settings["daily_limit"] == 3 and settings["closes"] is None
    status, body = call(f"{url}/api/tasks/{TASK}/submissions", "POST", tokens["a"], {"image": "x/y:1"})
    assert status == 403 and "opens for submissions at 2030-01-02T03:04:00" in body["detail"]
    assert call(f"{url}/organizer/tasks/{TASK}/settings", "POST", tokens["org"], data=b"daily_limit=x",
                headers=form)[0] == 422
    assert call(f"{url}/organizer/tasks/{TASK}/publish", "POST", tokens["a"], data=b"", headers=form)[0] == 403
    assert call(f"{url}/organizer/tasks/{TASK}/publish", "POST", tokens["org"], data=b"", headers=form)[0] == 200
    assert call(f"{url}/api/tasks/{TASK}/leaderboard")[0] == 200
    status, page = call(f"{url}/organizer", token=tokens["org"])
    assert 'value="2030-01-02T03:04"' in page and ">unpublish<" in page


def test_redact_drops_logs_and_server_paths():
    """The team's own record (logs) and the public one (no logs, no server paths); blind mode shows no
    record at all (tests/service/test_blind.py)."""
    from sharedtask.service.entries import redact

    run = "/srv/st/runs/1/attempt-1/t/run1"
    record = {"status": "success", "logs": {"stdout": f"{run}/stdout.log"},
              "output": {"dir": f"{run}/output", "bytes": 5},
              "validation": {"status": "invalid", "reason": "r", "run_file": f"{run}/output/run.txt",
                             "report": {"valid": False, "path": f"{run}/output/run.txt", "findings": [
                                 {"severity": "error", "code": "RUN-DOC-ID", "message": "docno 'secret'", "line": 3,
                                  "path": f"{run}/output/run.txt"}]}}}
    original = json.dumps(record)
    assert redact(record, logs=True) == record
    own = redact(record, logs=False)
    assert "logs" not in own and own["validation"] == record["validation"]
    public = redact(record, logs=False, paths=False, roots=["/srv/st"])
    assert "logs" not in public and "/srv" not in json.dumps(public)
    finding = public["validation"]["report"]["findings"][0]
    assert finding["message"] == "docno 'secret'" and finding["path"] == "run.txt" and finding["line"] == 3
    assert public["output"] == {"bytes": 5} and public["validation"]["run_file"] == "run.txt"
    assert json.dumps(record) == original  # not changed


# ----------------------------------------------------------------------------- bounded bodies, pre-flight


def _raw(url: str, method: str, path: str, headers: dict[str, str], body: bytes = b"",
         chunks: list[bytes] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A request with exactly these headers (a lying Content-Length, chunked bodies); (status, headers, body)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for key, value in headers.items():
            conn.putheader(key, value)
        conn.endheaders()
        try:
            if chunks is not None:
                for chunk in chunks:
                    conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                conn.send(b"0\r\n\r\n")
            elif body:
                conn.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the body was read: the answer says so
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_a_huge_body_is_refused_by_its_headers_before_a_byte_is_read(service):
    url = service[0]
    # claims 1.5 GB and sends 10 bytes: answered at once from the header, without waiting for the rest
    status, _, body = _raw(url, "POST", "/login", {"Content-Type": "application/x-www-form-urlencoded",
                                                  "Content-Length": str(1500 * 2**20)}, b"token=abc&")
    assert status == 413 and b"larger than" in body
    # a chunked body without a length is cut as soon as it passes the limit
    status, _, _ = _raw(url, "POST", "/login", {"Content-Type": "application/x-www-form-urlencoded",
                                                "Transfer-Encoding": "chunked"}, chunks=[b"x" * 40_000] * 4)
    assert status == 413
    status, _, _ = _raw(url, "PUT", f"/api/tasks/{TASK}/settings", {"Content-Type": "application/json",
                                                                    "Content-Length": str(10 * 2**20)}, b"{")
    assert status == 413


def test_an_upload_with_a_bad_token_is_401_before_its_body_is_read(service):
    url = service[0]
    status, _, _ = _raw(url, "POST", f"/api/tasks/{TASK}/submissions",
                        {"Authorization": "Bearer wrong", "Content-Type": "application/x-tar",
                         "Content-Length": str(5 * 2**30)}, b"x" * 1000)
    assert status == 401


def test_invalid_json_is_422_not_500(service):
    url, _, _, tokens, _ = service
    for body in (b"{not json", b'{"command": "x"}', b"[]"):
        status, _, raw = _raw(url, "POST", f"/api/tasks/{TASK}/submissions",
                              {"Authorization": f"Bearer {tokens['a']}", "Content-Type": "application/json",
                               "Content-Length": str(len(body))}, body)
        assert status == 422, raw
    status, answer = call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"], data=b"{oops",
                          headers={"Content-Type": "application/json"})
    assert status == 422, answer


def test_preflight_answers_what_a_submission_would_get(service):
    url, factory, _, tokens, _ = service
    base = f"{url}/api/tasks/{TASK}/submissions/preflight"
    assert call(base)[0] == 401
    status, ready = call(base, token=tokens["a"])
    assert status == 200 and ready["max_upload"] == 64 * 1024 and ready["used_today"] == 0
    assert call(base + f"?size={64 * 1024 + 1}", token=tokens["a"])[0] == 413
    assert call(base + "?tag=bad%20tag", token=tokens["a"])[0] == 422
    _add_submission(factory, "team-a")  # tagged "t", made today
    assert call(base + "?tag=t", token=tokens["a"])[0] == 409  # a team's tags are unique per task
    assert call(base + "?tag=t", token=tokens["b"])[0] == 200
    assert call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"], {"daily_limit": 1})[0] == 200
    status, refused = call(base, token=tokens["a"])
    assert status == 429 and "resets at" in refused["detail"] and "+00:00" in refused["detail"]
    _, headers, _ = _raw(url, "GET", f"/api/tasks/{TASK}/submissions/preflight",
                         {"Authorization": f"Bearer {tokens['a']}"})
    assert 0 < int(headers["retry-after"]) <= 86400
    assert call(base, token=tokens["org"])[0] == 200  # the organizer has no daily limit
    closed = {"opens": "2020-01-01T00:00:00Z", "closes": "2020-02-01T00:00:00+01:00"}
    assert call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"], closed)[0] == 200
    status, refused = call(base, token=tokens["b"])
    assert status == 403 and "2020-01-31T23:00:00+00:00" in refused["detail"]


def test_settings_refuse_a_task_that_closes_before_it_opens(service):
    url, _, _, tokens, _ = service
    status, answer = call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"],
                          {"opens": "2030-03-01T00:00:00Z", "closes": "2030-02-01T00:00:00Z"})
    assert status == 422 and "before it opens" in answer["detail"]
    status, answer = call(f"{url}/api/tasks/{TASK}/settings", "PUT", tokens["org"],
                          {"opens": "2030-01-01T00:00:00+02:00", "closes": "2030-02-01T00:00:00Z"})
    assert status == 200 and answer["opens"] == "2029-12-31T22:00:00+00:00" and answer["closes"].endswith("+00:00")


def test_settings_rows_exist_from_start_up(service):
    from sharedtask.service.models import TaskSettings

    _, factory, _, _, _ = service
    with factory() as session:
        assert [s.task_id for s in session.scalars(select(TaskSettings))] == [TASK]


def test_submit_says_why_a_run_failed_from_what_the_server_shows():
    from sharedtask.cli.submit import failure_reasons

    seen = {"status": "failed", "run_status": "timeout", "record": {"exit_code": 137, "message": "timed out after 5 s"},
            "validation": {"status": "no run file", "code": "RUN-MISSING", "reason": "no run.txt in the output"}}
    assert failure_reasons(seen) == ["exit code 137", "timed out after 5 s", "findings: RUN-MISSING",
                                     "no run.txt in the output"]
    blind = {"status": "done", "valid": False, "findings": [{"code": "RUN-TIE", "severity": "error"},
                                                            {"code": "RUN-DEPTH", "severity": "warning"}]}
    assert failure_reasons(blind) == ["findings: RUN-TIE"]  # errors only: what made the run invalid
    assert failure_reasons({"status": "done", "valid": True, "record": {"exit_code": 0}}) == []


def test_a_named_image_is_pulled_only_from_an_allowed_registry(tmp_path):
    """A pull makes dockerd connect to the host an image name gives: the server refuses any
    registry the organizer did not allow, before the daemon is asked (a loopback listener in
    place of the team's host sees no connection)."""
    import socket

    from sharedtask.service.uploads import UploadError, named_image

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        for reference, allowed in ((f"127.0.0.1:{port}/team/evil:1", ()), ("team/evil:1", ("127.0.0.1:5000",)),
                                   (f"127.0.0.1:{port}/team/evil:1", ("registry.example:5000",))):
            with pytest.raises(UploadError, match="this server pulls from") as info:
                named_image(reference, 1 << 30, registries=allowed)
            assert info.value.status == 400
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected
    finally:
        listener.close()
