"""Published first stages in the submission service, without Docker: publishing, refusals, the pre-flight.

A real uvicorn server on 127.0.0.1 over a real database (SQLite and PostgreSQL) migrated by
Alembic; the stage is made by the real rerank code from the Touché 2021 sample and a real
run file. Only the executor is replaced (:class:`RecordingExecutor`): running re-rankers is
tests/service/test_stages_docker.py's part.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from service_helpers import TASK, ThreadServer, call, perfect_run, service_app

NO_STAGE_TASK = "arqmath-3-task2"  # its outputs are formulas: its spec declares no `rerank:`


def _server(tmp_path: Path, database: str, **config: object):
    made = service_app(database, "team-a", data_dir=tmp_path / "data", task_ids=[TASK, NO_STAGE_TASK], **config)
    return ThreadServer(made.app), made.tokens["org"], made.tokens["team-a"]


def put_run(url: str, token: str, name: str, run: str, task: str = TASK) -> tuple[int, object]:
    return call(f"{url}/api/tasks/{task}/stages/{name}", "PUT", token, data=run.encode(),
                headers={"Content-Type": "text/plain"})


def test_a_run_file_is_published_once_and_teams_see_no_folder(tmp_path: Path, database: str):
    server, org, team = _server(tmp_path, database)
    run = perfect_run("bm25")
    with server:
        url = server.url
        # two requests at once: one makes the stage, the other gets the same stage (made: false)
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: put_run(url, org, "bm25", run), range(2)))
        assert [a[0] for a in answers] == [200, 200], answers
        assert sorted(a[1]["made"] for a in answers) == [False, True]
        stage = answers[0][1]
        folder = Path(stage["path"])
        assert sorted(p.name for p in folder.iterdir()) == ["rerank.jsonl.gz", "run.txt"]
        assert (folder / "run.txt").read_text() == run
        assert stage["sha256"] == hashlib.sha256((folder / "rerank.jsonl.gz").read_bytes()).hexdigest()
        # counted independently: the perfect run ranks every judged document, fewer than the depth of 100
        judged = [line.split() for line in run.splitlines()]
        assert stage["candidates"] == len(judged) and stage["topics"] == len({q for q, *_ in judged})
        with gzip.open(folder / "rerank.jsonl.gz", "rt") as fh:
            lines = [json.loads(line) for line in fh]
        assert len(lines) == len(judged)
        assert {(c["qid"], c["docno"]) for c in lines} == {(q, d) for q, _, d, *_ in judged}
        assert all(c["text"] for c in lines)

        page = call(f"{url}/tasks/{TASK}")[1]  # the task's page names it for teams, not its folder
        assert "<code>bm25</code>" in page and "--input-run NAME" in page and str(folder) not in page
        assert "Re-rankers" not in call(f"{url}/tasks/{NO_STAGE_TASK}")[1]
        status, listed = call(f"{url}/api/tasks/{TASK}/stages", token=team)
        assert status == 200 and [s["name"] for s in listed] == ["bm25"]
        assert "path" not in listed[0] and "submission" not in listed[0] and str(folder) not in json.dumps(listed)
        assert call(f"{url}/api/tasks/{TASK}/stages", token=org)[1][0]["path"] == str(folder)

        # the same name with another run: a published stage never changes
        other = "\n".join(run.splitlines()[1:]) + "\n"
        status, body = put_run(url, org, "bm25", other)
        assert status == 409 and "never changes" in body["detail"]


def test_publishing_is_refused_with_the_reason(tmp_path: Path, database: str):
    server, org, team = _server(tmp_path, database)
    with server:
        url = server.url
        assert put_run(url, team, "bm25", perfect_run())[0] == 403
        status, body = put_run(url, org, "bm25", "51 Q0 not-a-document 1 1.0 x\n")
        assert status == 422 and "not a valid run" in body["detail"], body
        status, body = put_run(url, org, "bm25", perfect_run(), task=NO_STAGE_TASK)
        assert status == 422 and "declares no re-ranking stage" in body["detail"]
        status, body = put_run(url, org, "no/slash", perfect_run())
        assert status in (404, 422)
        assert put_run(url, org, "bm25", "")[0] == 422
        status, body = call(f"{url}/api/tasks/{TASK}/stages/bm25", "PUT", org, body={"submission": 999})
        assert status == 422 and "submission 999" in body["detail"]
        assert call(f"{url}/api/tasks/{TASK}/stages", token=org)[1] == []
        assert not (tmp_path / "data" / "stages" / TASK / "sample" / "bm25").exists()


def test_the_preflight_names_the_published_stages(tmp_path: Path, database: str):
    server, org, team = _server(tmp_path, database)
    with server:
        url = server.url
        preflight = f"{url}/api/tasks/{TASK}/submissions/preflight"
        status, body = call(f"{preflight}?input_run=bm25", token=team)
        assert status == 422 and "no published first stage 'bm25'" in body["detail"] and "none yet" in body["detail"]
        assert put_run(url, org, "bm25", perfect_run())[0] == 200
        status, body = call(f"{preflight}?input_run=bm25", token=team)
        assert status == 200 and body["input_run"] == "bm25"
        status, body = call(f"{preflight}?input_run=dense", token=team)
        assert status == 422 and "published: bm25" in body["detail"]
        status, body = call(f"{url}/api/tasks/{NO_STAGE_TASK}/submissions/preflight?input_run=bm25", token=team)
        assert status == 422 and "submit without --input-run" in body["detail"]


def test_a_server_with_compute_workers_refuses_a_re_ranker_before_the_upload(tmp_path: Path, database: str):
    """The workers do not hold the stages (docs/service.md): the refusal says so at the pre-flight."""
    server, org, team = _server(tmp_path, database, workers_lack_stages=True)
    with server:
        url = server.url
        assert put_run(url, org, "bm25", perfect_run())[0] == 200
        status, body = call(f"{url}/api/tasks/{TASK}/submissions/preflight?input_run=bm25", token=team)
        assert status == 422 and "compute workers" in body["detail"]
        assert call(f"{url}/api/tasks/{TASK}/submissions/preflight", token=team)[0] == 200


def test_a_stage_belongs_to_its_phase_dataset(tmp_path: Path, database: str):
    """A stage made for the test phase's dataset is found by the test phase's submissions only."""
    from service_helpers import SAMPLE

    manifest = tmp_path / "tira.yml"  # a second dataset of the task, as an organizer's hidden test data
    manifest.write_text(f"version: 1\ntasks:\n  {TASK}:\n    datasets:\n"
                        f"      hidden: {{input: {SAMPLE / 'input'}, truth: {SAMPLE / 'truth'}}}\n")
    server, org, team = _server(tmp_path, database, manifest=manifest)
    with server:
        url = server.url
        for name, dataset in (("dev", "sample"), ("test", "hidden")):
            status, body = call(f"{url}/api/tasks/{TASK}/phases/{name}", "PUT", org, {"dataset": dataset})
            assert status == 200, body
        status, stage = call(f"{url}/api/tasks/{TASK}/stages/bm25?phase=test", "PUT", org,
                             data=perfect_run().encode(), headers={"Content-Type": "text/plain"})
        assert status == 200 and stage["dataset"] == "hidden" and "/hidden/bm25" in stage["path"], stage
        preflight = f"{url}/api/tasks/{TASK}/submissions/preflight?input_run=bm25&phase="
        status, body = call(preflight + "test", token=team)
        assert status == 200 and body["input_run"] == "bm25" and body["phase"]["name"] == "test"
        status, body = call(preflight + "dev", token=team)
        assert status == 422 and "phase's dataset" in body["detail"] and "none yet" in body["detail"]
        status, body = call(f"{url}/api/tasks/{TASK}/stages/bm25?phase=nope", "PUT", org,
                            data=perfect_run().encode(), headers={"Content-Type": "text/plain"})
        assert status == 404 and "nope" in body["detail"], (status, body)
