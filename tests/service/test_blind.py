"""``serve --blind`` is an allow-list, and the public leaderboard names none of the server's folders.

The attack these tests replay: a container reads the hidden test data and writes it
(raw, hex, base64) into every column of its run file, into file names, into its logs,
and exits with a code of its choosing; then the team reads back everything the
service lets it reach. In blind mode nothing of it may come back: the team's view of a
submission is built from ``sharedtask.service.visibility.BLIND_FIELDS`` alone.

The first tests need no Docker (a crafted submission row, and the app in a thread);
the last ones run a real ``sharedtask serve`` and real containers.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from service_helpers import (REPO, SAMPLE, TASK, RecordingExecutor, ThreadServer, build_tiny_image, call, free_port,
                             perfect_run, start_server, stop)
from sharedtask.service import visibility
from sharedtask.service.runs.claims import RESUMED_NOTE
from sharedtask.service.models import Image, Submission, Team

PRIMARY = "ndcg5_official"


def forms(secret: str) -> list[str]:
    """The secret as a container could smuggle it: raw, hex (both cases), base64."""
    raw = secret.encode()
    return [secret, raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode().rstrip("=")]


def leaks(text: str, secret: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [form for form in (*forms(secret), *extra) if form in text]


# ----------------------------------------------------------------------------- the allow-list, without Docker


def crafted(secret: str, **fields: Any) -> Submission:
    """A submission row whose every run-derived field carries ``secret``."""
    hexed = secret.encode().hex()
    run = f"/srv/data-{secret}/runs/7/attempt-1/{TASK}/t"
    finding = {"severity": "error", "code": "RUN-DOC-ID", "message": f"docno {secret!r} is not in the corpus",
               "path": f"{run}/output/run.txt", "line": 3, "column": 2, "hint": f"fix {secret}"}
    validation = {"status": "invalid", "run_file": f"{run}/output/run.txt", "reason": secret,
                  "report": {"path": f"{run}/output/run.txt", "valid": False, "counts": {"error": 12345678},
                             "stats": {"tags": [hexed, secret], "topics": [secret]},
                             "findings": [finding, {**finding, "code": "RUN-TIE", "severity": "warning"},
                                          {**finding, "code": f"X-{secret}"}],
                             "omitted": {secret: 1}}}
    record = {"status": "failed", "exit_code": 31337, "message": f"the container exited with code 31337 {secret}",
              "wall_seconds": 1234.5, "peak_memory": {"bytes": 987654321, "human": "942 MiB"},
              "output": {"dir": f"{run}/output", "bytes": 555444333, "entries": 3},
              "logs": {"stdout": f"{run}/stdout.log", "stderr": f"{run}/stderr.log"},
              "stdout_tail": [secret], "dataset": {"id": secret, "input_dir": f"/hidden/{secret}/input"},
              "reproduce": f"docker run -v /hidden/{secret}/input:/tira-data/input:ro img",
              "validation": validation, secret: secret}
    values: dict[str, Any] = dict(
        id=7, team_id=1, task_id=TASK, image_id=1, image_name="sha256:team-image", tag="my-run",
        command="sh /app/run.sh $inputDataset $outputDir", status="failed", attempts=1,
        created=dt.datetime(2030, 1, 2, 3, 4, 5), started=dt.datetime(2030, 1, 2, 3, 4, 6),
        finished=dt.datetime(2030, 1, 2, 3, 5, 7), run_status=secret, valid=False, run_dir=run,
        validation=validation, record=record, scores={PRIMARY: 0.25, f"n-{secret}": 3.0, "ndcg_cut_5": float("nan")},
        per_topic={PRIMARY: {secret: 0.5}},
        notes=[f"evaluation: topic {secret} not in the qrels", RESUMED_NOTE,
               "re-run by the organizer at 2030-01-02T03:04:05", f"re-run by the organizer at 2030-01-02T03:04:05 {secret}"],
        hidden_reason=None)
    values.update(fields)
    return Submission(**values)


def test_blind_view_has_exactly_the_allowed_fields_and_nothing_of_the_run():
    secret = "hush" + secrets.token_hex(6)
    view = visibility.blind_view(crafted(secret), "team-a")
    assert list(view) == list(visibility.BLIND_FIELDS)
    text = json.dumps(view)
    assert leaks(text, secret, ("31337", "987654321", "555444333", "12345678", "1234.5", "/srv", "/hidden")) == []
    assert view["run_status"] == "error"  # a word outside the sandbox's vocabulary is not passed on
    assert view["findings"] == [{"code": "RUN-DOC-ID", "severity": "error"},
                                {"code": "RUN-TIE", "severity": "warning"}]  # catalogue codes, once each
    assert view["scores"] == {PRIMARY: 0.25, "ndcg_cut_5": None}  # declared measures only, JSON-safe
    assert view["notes"] == [RESUMED_NOTE, "re-run by the organizer at 2030-01-02T03:04:05"]
    assert (view["tag"], view["image"], view["command"], view["valid"], view["status"]) == (
        "my-run", "sha256:team-image", "sh /app/run.sh $inputDataset $outputDir", False, "failed")
    assert view["created"] == "2030-01-02T03:04:05+00:00" and view["finished"] == "2030-01-02T03:05:07+00:00"
    # a run refused before validation: its code (from the catalogue) is the finding
    refused = crafted(secret, record={"validation": {"status": "refused", "code": "RUN-OUTPUT-LINK", "reason": secret}})
    assert visibility.blind_view(refused, "team-a")["findings"] == [{"code": "RUN-OUTPUT-LINK", "severity": "error"}]
    for status in ("success", "timeout", "oom", "output-limit", "disk-limit", None):
        assert visibility.blind_view(crafted(secret, run_status=status), "t")["run_status"] == status


def test_submission_json_blind_is_the_allow_list_and_not_blind_is_everything():
    from sharedtask.service.submissions import submission_json

    secret = "hush" + secrets.token_hex(6)
    sub = crafted(secret)
    assert submission_json(sub, "team-a", blind=True) == visibility.blind_view(sub, "team-a")
    full = submission_json(sub, "team-a")
    assert full["record"]["exit_code"] == 31337 and secret in json.dumps(full["validation"])


def test_blind_report_page_shows_codes_and_their_meaning_but_nothing_of_the_run():
    from sharedtask.service import entries
    from sharedtask.service.web import pages
    from sharedtask.spec import load_task

    secret = "hush" + secrets.token_hex(6)
    sub = crafted(secret)
    entry = entries.entry_of(sub, "team-a", seen_by=visibility.BLIND)
    assert entry.record == {} and entry.per_topic == {} and entry.status == "error"
    page = pages.report_page(load_task(TASK), [entry], "submission")
    assert leaks(page, secret, ("31337", "987654321", "555444333", "/srv", "/hidden")) == []
    assert 'data-code="RUN-DOC-ID"' in page and 'data-code="RUN-TIE"' in page
    assert "a document id that does not match" in page  # the catalogue's meaning: the team knows what to fix
    organizer = pages.report_page(load_task(TASK), [entries.entry_of(sub, "team-a")], "submission")
    assert secret in organizer and "31337" in organizer  # the same page for the organizer has it all


def test_team_page_rows_under_blind_use_the_allow_list():
    from sharedtask.service.web import pages

    secret = "hush" + secrets.token_hex(6)
    page = pages.team_page(Team(id=1, name="team-a"), [(crafted(secret), "team-a")], {TASK: PRIMARY}, blind=True)
    assert leaks(page, secret) == [] and "0.2500" in page and ">error<" in page


def test_public_record_names_no_server_folder():
    from sharedtask.service.entries import redact

    data, hidden = "/var/lib/sharedtask", "/srv/hidden/test/input"
    run = f"{data}/runs/4/attempt-1/{TASK}/bm25"
    record = {
        "status": "failed", "message": f"container did not start: cannot mount {hidden}/topics.xml",
        "dataset": {"id": "test", "input_dir": hidden, "input_run": None, "registry": None},
        "output": {"dir": f"{run}/output", "bytes": 10, "entries": 1},
        "logs": {"stdout": f"{run}/stdout.log", "stderr": f"{run}/stderr.log", "truncated": False},
        "container": {"mounts": {hidden: {"bind": "/tira-data/input", "mode": "ro"},
                                 f"{run}/output": {"bind": "/tira-data/output", "mode": "rw"}},
                      "environment": {"inputDataset": "/tira-data/input"}},
        "policy": {"tmpfs": {"/tmp": "rw,size=64m"}},
        "reproduce": (f"docker run --rm --tmpfs /tmp:rw -v {hidden}:/tira-data/input:ro "
                      f"-v '{run}/output:/tira-data/output:rw' -e inputDataset=/tira-data/input sha256:abc"),
        "validation": {"status": "refused", "code": "RUN-OUTPUT-LINK",
                       "reason": f"run.txt links to {data}/service.db", "run_file": f"{run}/output/run.txt"},
    }
    public = redact(record, logs=False, paths=False, roots=[data])
    text = json.dumps(public)
    assert data not in text and hidden not in text and "/srv" not in text and "logs" not in public
    assert public["reproduce"] == ("docker run --rm --tmpfs /tmp:rw -v ./input:/tira-data/input:ro "
                                   "-v ./output:/tira-data/output:rw -e inputDataset=/tira-data/input sha256:abc")
    assert set(public["container"]["mounts"]) == {"./input", "./output"}
    assert public["policy"] == record["policy"] and public["validation"]["run_file"] == "run.txt"
    assert public["container"]["environment"] == {"inputDataset": "/tira-data/input"}  # the container's own paths
    # notes (the pipeline's errors) lose paths too
    notes = visibility.public_notes([f"sandbox: input dataset directory {hidden} does not exist"], record, [data])
    assert notes == ["sandbox: input dataset directory <server> does not exist"]


def test_docs_table_lists_exactly_the_allow_list():
    """docs/service.md's table: the rows a blind team sees are BLIND_FIELDS, no more, no fewer."""
    text = (REPO / "docs" / "service.md").read_text()
    table = text[text.index("**What each viewer sees.**"):].split("\n\n")[1]
    shown = set()
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if cells[1].startswith("yes"):
            shown.update(re.findall(r"`([a-z_]+)`", cells[0]))
    assert shown == set(visibility.BLIND_FIELDS)


# ----------------------------------------------------------------------------- every route, app in a thread


def team_routes(url: str, token: str | None, ids: list[int]) -> dict[str, Any]:
    """Every answer a team can get from the server (the organizer's routes refuse it: 403)."""
    paths = ["/api/submissions", f"/api/submissions?task={TASK}", "/api/tasks", f"/api/tasks/{TASK}/leaderboard",
             "/", "/team", f"/tasks/{TASK}/leaderboard", "/openapi.json"]
    for sid in ids:
        paths += [f"/api/submissions/{sid}", f"/submissions/{sid}"]
    out = {}
    for path in paths:
        status, body = call(url + path, token=token)
        assert status in (200, 401), (path, status, body)
        out[path] = body if isinstance(body, str) else json.dumps(body)
    return out


def test_every_route_a_team_reaches_under_blind_shows_no_run_content(tmp_path):
    from sharedtask.service.app import ServiceConfig, create_app
    from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
    from sharedtask.service.teams.tokens import create_team, organizer_token

    secret = "hush" + secrets.token_hex(6)
    engine = make_engine(sqlite_url(tmp_path / "s.db"))
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        org = organizer_token(session)
        team, token = create_team(session, "team-a")
        session.flush()
        image = Image(archive_sha256="a" * 64, docker_id="sha256:team-image", size=1)
        session.add(image)
        session.flush()
        sub = crafted(secret, id=None, team_id=team.id, image_id=image.id, status="done", run_status="success")
        session.add(sub)
        session.flush()
        sid = sub.id
    config = ServiceConfig(data_dir=tmp_path, task_ids=[TASK], blind=True)
    with ThreadServer(create_app(factory, RecordingExecutor(), config)) as server:
        assert call(f"{server.url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200
        numbers = ("31337", "987654321", "555444333", "12345678", "/srv", "/hidden", str(tmp_path))
        for who, tok in (("team", token), ("anyone", None)):
            for path, body in team_routes(server.url, tok, [sid]).items():
                assert leaks(body, secret, numbers) == [], (who, path)
        status, mine = call(f"{server.url}/api/submissions/{sid}", token=token)
        assert status == 200 and set(mine) == set(visibility.BLIND_FIELDS) and mine["findings"]
        status, board = call(f"{server.url}/api/tasks/{TASK}/leaderboard", token=token)
        assert board["runs"] == [{"rank": None, "run": "team-a/my-run", "status": "invalid",
                                  "scores": {PRIMARY: 0.25}}]
        # the organizer sees it all (so the checks above could fail)
        status, full = call(f"{server.url}/api/submissions/{sid}", token=org)
        assert secret in json.dumps(full) and full["record"]["exit_code"] == 31337
        for path in (f"/submissions/{sid}", f"/tasks/{TASK}/leaderboard"):
            assert secret in call(server.url + path, token=org)[1], path
        # the organizer's re-run note is the service's own words: the team sees it
        assert call(f"{server.url}/api/submissions/{sid}/rerun", "POST", org)[0] == 200
        notes = call(f"{server.url}/api/submissions/{sid}", token=token)[1]["notes"]
        assert notes[:2] == [RESUMED_NOTE, "re-run by the organizer at 2030-01-02T03:04:05"]
        assert len(notes) == 3 and visibility.RERUN_NOTE.fullmatch(notes[2])
    with factory() as session:  # nothing was changed by reading
        assert session.scalar(select(Submission.record).where(Submission.id == sid))["exit_code"] == 31337


# ----------------------------------------------------------------------------- real server, real containers


def hidden_dataset(root: Path, secret: str) -> Path:
    """The sample with its first topic's title replaced by the secret, declared in a manifest."""
    shutil.copytree(SAMPLE, root / "hidden")
    topics = root / "hidden" / "input" / "topics.xml"
    text = topics.read_text()
    first = re.search(r"<title>[^<]*</title>", text)
    assert first is not None
    topics.write_text(text[:first.start()] + f"<title>{secret}</title>" + text[first.end():])
    manifest = root / "tira.yml"
    manifest.write_text(f"version: 1\ntasks:\n  {TASK}:\n    datasets:\n"
                        "      hidden: {input: hidden/input, truth: hidden/truth}\n")
    return manifest


# Reads the first topic's title from $inputDataset and plants it everywhere a run can write.
READ_SECRET = r"""
S=$(sed -n 's:.*<title>\(.*\)</title>.*:\1:p' "$1/topics.xml" | head -n 1)
H=$(printf %s "$S" | od -An -tx1 | tr -d ' \n')
B=$(printf %s "$S" | base64 | tr -d '\n')
echo "stdout $S $H $B"
echo "stderr $S $H $B" >&2
for name in "$S" "$H" "$(printf %s "$B" | tr '/' '_')"; do echo x > "$2/$name"; done
"""


def poisoned_lines(doc: str) -> str:
    """Run lines with the secret (raw, hex, base64) in every column: topic, Q0, doc id, rank, score, tag."""
    return "\n".join([
        f'printf "51 Q0 {doc} 1 10 $H\\n" > "$2/run.txt"',
        *(f'printf "%s\\n" "{line}" >> "$2/run.txt"' for value in ("$S", "$H", "$B") for line in (
            f"{value} Q0 {doc} 2 9 t", f"51 {value} {doc} 3 8 t", f"51 Q0 {value} 4 7 t",
            f"51 Q0 {doc} {value} 6 t", f"51 Q0 {doc} 5 {value} t", f"51 Q0 {doc} 6 5 {value}")),
    ])


@pytest.mark.docker
@pytest.mark.slow
def test_a_container_cannot_read_hidden_data_back_in_blind_mode(tmp_path, docker_client):
    secret = "hush" + secrets.token_hex(6)
    organizer_dir = tmp_path / "organizer"
    organizer_dir.mkdir()
    manifest = hidden_dataset(organizer_dir, secret)
    doc = (SAMPLE / "truth" / "qrels.txt").read_text().split()[2]
    scripts = {
        # valid and scored: the secret only in the tag column, the logs and the output's file names
        "valid": READ_SECRET + 'sed "s/ TAGX$/ $H/" /app/run.txt > "$2/run.txt"\nexit 0',
        # invalid: the secret in every column
        "invalid": READ_SECRET + poisoned_lines(doc) + "\nexit 0",
        # the same, and the container fails with a code of its choosing
        "crash": READ_SECRET + poisoned_lines(doc) + "\nexit 77",
    }
    tags = [build_tiny_image(docker_client, f"sharedtask-test/blind-{name}:{secrets.token_hex(4)}",
                             perfect_run("TAGX"), tmp_path, script=script) for name, script in scripts.items()]
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    server = start_server(data_dir, f"sqlite:///{data_dir / 's.db'}", free_port(), "--blind", "--manifest",
                          str(manifest), "--dataset", "hidden")
    try:
        org, token = server.token(), server.token("team-a")
        answers: dict[str, str] = {}
        subs = {}
        for name, image in zip(scripts, tags):
            done = server.cli("submit", "--server", server.url, "--token", token, "--task", TASK, "--image", image,
                              "--tag", name, "--json", "--wait", check=False)
            assert done.returncode in (0, 1), done.stderr
            answers[f"submit {name}"] = done.stdout + done.stderr
            subs[name] = json.loads(done.stdout)
        assert call(f"{server.url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200

        # the runs did what they were made to do (the organizer's view has it all)
        full = {name: call(f"{server.url}/api/submissions/{sub['id']}", token=org)[1] for name, sub in subs.items()}
        hexed = secret.encode().hex()
        assert full["valid"]["valid"] is True and full["valid"]["scores"][PRIMARY] == pytest.approx(1.0)
        assert hexed in json.dumps(full["valid"]["record"]["validation"]["report"]["stats"])
        assert full["invalid"]["valid"] is False and secret in json.dumps(full["invalid"]["validation"])
        assert full["crash"]["run_status"] == "failed" and full["crash"]["record"]["exit_code"] == 77
        organizer_page = call(f"{server.url}/submissions/{subs['crash']['id']}", token=org)[1]
        assert f"stderr {secret}" in organizer_page and str(data_dir.resolve()) in organizer_page

        # what the team got: the allow-list, with findings and scores (so it is not empty)
        ids = [sub["id"] for sub in subs.values()]
        for path, body in team_routes(server.url, token, ids).items():
            answers[f"team {path}"] = body
        for path, body in team_routes(server.url, None, ids).items():
            answers[f"anyone {path}"] = body
        never = (str(data_dir), str(data_dir.resolve()), str(organizer_dir), str(organizer_dir.resolve()))
        for where, body in answers.items():
            assert leaks(body, secret, never) == [], where
        mine = {name: call(f"{server.url}/api/submissions/{sub['id']}", token=token)[1] for name, sub in subs.items()}
        assert all(set(view) == set(visibility.BLIND_FIELDS) for view in mine.values())  # no exit code, no record
        assert mine["valid"]["scores"][PRIMARY] == pytest.approx(1.0) and mine["valid"]["run_status"] == "success"
        assert mine["invalid"]["valid"] is False and mine["invalid"]["findings"]
        assert mine["crash"]["status"] == "failed" and mine["crash"]["run_status"] == "failed"
        board = json.loads(answers[f"anyone /api/tasks/{TASK}/leaderboard"])
        assert [r["run"] for r in board["runs"]][0] == "team-a/valid"
    finally:
        stop(server)
        for tag in tags:
            try:
                docker_client.images.remove(docker_client.images.get(tag).id, force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass


@pytest.mark.docker
@pytest.mark.slow
def test_the_public_leaderboard_names_no_server_folder(tmp_path, docker_client):
    """Without ``--blind``: the public board shows the records, but no folder of the server."""
    tag = build_tiny_image(docker_client, f"sharedtask-test/paths:{secrets.token_hex(4)}", perfect_run("paths"),
                           tmp_path, script="echo logged")
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    server = start_server(data_dir, f"sqlite:///{data_dir / 's.db'}", free_port())
    try:
        org, token = server.token(), server.token("team-a")
        done = server.cli("submit", "--server", server.url, "--token", token, "--task", TASK, "--image", tag,
                          "--json", "--wait")
        sub = json.loads(done.stdout)
        assert sub["status"] == "done" and str(data_dir.resolve()) in sub["record"]["reproduce"]  # the team's own
        assert call(f"{server.url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200
        folders = (str(data_dir), str(data_dir.resolve()), str(SAMPLE), str(SAMPLE.resolve()))
        for who in (None, token):
            for path in (f"/tasks/{TASK}/leaderboard", f"/api/tasks/{TASK}/leaderboard"):
                status, body = call(server.url + path, token=who)
                text = body if isinstance(body, str) else json.dumps(body)
                assert status == 200 and "team-a/run1" in text
                assert [f for f in folders if f in text] == [], (who, path)
        page = call(f"{server.url}/tasks/{TASK}/leaderboard")[1]
        assert "./output:/tira-data/output" in page and "logged" not in page  # the docker run line, no logs
        organizer = call(f"{server.url}/tasks/{TASK}/leaderboard", token=org)[1]
        assert str(data_dir.resolve()) in organizer  # the organizer's view keeps them (the check above can fail)
    finally:
        stop(server)
        try:
            docker_client.images.remove(docker_client.images.get(tag).id, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
