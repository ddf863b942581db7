"""TIRA's own code runs here unchanged: an image with pip's tira client (0.0.207, the pinned
version) and ir_datasets inside (tests/fixtures/tira-client).

- A re-ranker written as TIREx's starters are (``load_rerank_data`` +
  ``persist_and_normalize_run``) through ``run``, ``demo --submissions`` and the service:
  its runs are valid, rank exactly what an independent scoring of its candidates ranks, and
  score on the sample's leaderboards.
- A probe run as a re-ranker reads every file it can: no corpus file, only the re-rank
  dataset and the stage (the same probe without a stage finds the corpus: the probe works).

Real Docker, the real client from PyPI (built with docker's build network, as the
baselines are), the bundled Touché 2021 sample and its reference BM25 run.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import time
from pathlib import Path

import pytest
import yaml

from sharedtask.cli import main

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASK = "touche-2021-task1"
REPO = Path(__file__).resolve().parent.parent
BM25 = REPO / "baselines" / "reference-runs" / TASK / "lucene-bm25.txt"
MARKER = "zqxprobemarker"


@pytest.fixture(scope="module")
def tira_image(base_image, docker_client) -> str:
    tag = "sharedtask-test/tira-client:latest"
    docker_client.images.build(path=str(REPO / "tests" / "fixtures" / "tira-client"), tag=tag,
                               buildargs={"BASE_IMAGE": base_image}, rm=True, forcerm=True)
    yield tag
    docker_client.images.remove(tag, force=True)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tira-sample")
    assert main(["sample", TASK, str(folder / "sample")]) == 0
    return folder / "sample"


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _expected_tops(stage_candidates: Path) -> dict[str, str]:
    """Each topic's best document under the fixture's scoring, computed here from the candidates."""
    best: dict[str, tuple[float, str]] = {}
    with gzip.open(stage_candidates, "rt", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            score = len(_words(row["query"]) & _words(row["text"])) + 1.0 / (1 + row["rank"])
            if row["qid"] not in best or (score, row["docno"]) > best[row["qid"]]:
                best[row["qid"]] = (score, row["docno"])
    return {qid: doc for qid, (_, doc) in best.items()}


def _tops(run: Path) -> dict[str, str]:
    return {p[0]: p[2] for p in (line.split() for line in run.read_text().splitlines()) if p[3] == "1"}


def test_a_tirex_reranker_runs_unchanged(tira_image, sample, tmp_path, capsys) -> None:
    out = tmp_path / "run" / "output"
    assert main(["run", "--task", TASK, "--image", tira_image, "--input", str(sample / "input"),
                 "--input-run", str(BM25), "--output", str(out)]) == 0
    record = json.loads((tmp_path / "run" / "run-record.json").read_text())
    assert record["validation"]["status"] == "valid", record["validation"]
    assert record["rerank"]["depth"] == 100
    # it read $TIRA_INPUT_DATASET/rerank.jsonl.gz: the ranking is the candidates' own scoring
    assert _tops(out / "run.txt") == _expected_tops(tmp_path / "run" / "input-run" / "rerank.jsonl.gz")
    assert "I will read the input data from /tira-data/input." in (tmp_path / "run" / "stdout.log").read_text()
    capsys.readouterr()
    assert main(["evaluate", "--task", TASK, "--truth", str(sample / "truth"), "--json", str(out / "run.txt")]) == 0
    assert re.search(r'"ndcg5_official[^"]*":\s*0\.\d+', capsys.readouterr().out)


def test_a_reranker_reads_no_corpus_file(tira_image, sample, tmp_path) -> None:
    """One argument added to the corpus, marked; BM25's reference run does not rank it, so it is
    no candidate. As a re-ranker the probe finds the marker nowhere it can read; as a full-rank
    run it finds it in the corpus."""
    data = tmp_path / "input"
    shutil.copytree(sample / "input", data)
    part = json.loads((data / "parliamentary.json").read_text())
    extra = dict(part["arguments"][0], id="S0000beef-A0000cafe", conclusion=f"{MARKER} is ranked by nobody")
    part["arguments"].append(extra)
    (data / "parliamentary.json").write_text(json.dumps(part))
    probe = f"python /app/probe.py {MARKER}"
    assert main(["run", "--task", TASK, "--image", tira_image, "--command", probe, "--input", str(data),
                 "--input-run", str(BM25), "--output", str(tmp_path / "rerank" / "output")]) == 0
    seen = json.loads((tmp_path / "rerank" / "output" / "probe.json").read_text())
    assert seen["found"] == []
    assert seen["listing"] == ["/tira-data/input-run/rerank.jsonl.gz", "/tira-data/input-run/run.txt",
                               "/tira-data/input/queries.jsonl", "/tira-data/input/queries.xml",
                               "/tira-data/input/rerank.jsonl.gz"]
    main(["run", "--task", TASK, "--image", tira_image, "--command", probe, "--input", str(data),
          "--output", str(tmp_path / "full" / "output")])  # no run file: invalid, the probe only looks
    control = json.loads((tmp_path / "full" / "output" / "probe.json").read_text())
    assert control["found"] == ["/tira-data/input/parliamentary.json"]


def test_demo_submissions_run_a_tirex_reranker(tira_image, tmp_path) -> None:
    """A prebuilt TIREx image in an organizer's submission list, re-ranking the demo's BM25."""
    raw = yaml.safe_load((REPO / "tira.yml").read_text())["baselines"]
    bm25 = dict(raw["lucene-bm25"], build=str((REPO / raw["lucene-bm25"]["build"]).resolve()))
    manifest = tmp_path / "tira.yml"
    manifest.write_text(yaml.safe_dump({"version": 1, "baselines": {"lucene-bm25": bm25}}))
    submissions = tmp_path / "submissions.yml"
    submissions.write_text(yaml.safe_dump({"version": 1, "submissions": {"tirex-overlap": {
        "image": tira_image, "input_run": "lucene-bm25", "tasks": [TASK]}}}))
    out = tmp_path / "out"
    assert main(["demo", "--task", TASK, "--manifest", str(manifest), "--submissions", str(submissions),
                 "--output", str(out)]) == 0
    record = json.loads((out / TASK / "tirex-overlap" / "run-record.json").read_text())
    assert record["validation"]["status"] == "valid"
    stage = out / TASK / "lucene-bm25" / "stage"
    assert _tops(out / TASK / "tirex-overlap" / "output" / "run.txt") == _expected_tops(stage / "rerank.jsonl.gz")
    board = json.loads((out / TASK / "leaderboard.json").read_text())
    row = {r["run"]: r for r in board["runs"]}["tirex-overlap"]
    assert row["input_run"] == "lucene-bm25"
    assert any(isinstance(v, float) and 0 < v <= 1 for v in row.get("scores", row).values()), row


def test_the_service_runs_a_tirex_reranker(tira_image, tmp_path) -> None:
    """The organizer publishes BM25's reference run as a stage; a team submits the TIREx image."""
    from service_helpers import call, free_port, start_server, stop

    data_dir = tmp_path / "service"
    data_dir.mkdir()
    port = free_port()
    served = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", port)
    try:
        org, team = served.token(), served.token("team-a")
        url = served.url
        status, stage = call(f"{url}/api/tasks/{TASK}/stages/bm25", "PUT", org, data=BM25.read_bytes(),
                             headers={"Content-Type": "text/plain"})
        assert status == 200, stage
        done = served.cli("submit", "--server", url, "--token", team, "--task", TASK, "--image", tira_image,
                          "--tag", "tirex", "--input-run", "bm25", "--json")
        sid = json.loads(done.stdout)["id"]
        end = time.monotonic() + 600  # a hang bound, not a speed test
        while (sub := call(f"{url}/api/submissions/{sid}", token=org)[1])["status"] not in ("done", "failed"):
            assert time.monotonic() < end, sub
            time.sleep(0.5)
        assert sub["valid"] is True, sub
        assert sub["input_run"] == "bm25" and sub["record"]["rerank"]["sha256"] == stage["sha256"]
        assert 0 < sub["scores"]["ndcg5_official"] <= 1
        mounts = sub["record"]["container"]["mounts"]
        assert sorted(m["bind"] for m in mounts.values()) == ["/tira-data/input", "/tira-data/input-run",
                                                              "/tira-data/output"]
        assert Path(next(h for h, m in mounts.items() if m["bind"] == "/tira-data/input")).name == "rerank-dataset"
    finally:
        stop(served)


# ------------------------------------------------------------------ a full-ranker on tira's ir_datasets

FULLRANK = "python /app/fullrank.py"


def _expected_full_tops(sample_input: Path) -> dict[str, str]:
    """Each query's best document under the fixture's scoring, from the layout's files read here."""
    with gzip.open(sample_input / "documents.jsonl.gz", "rt", encoding="utf-8") as handle:
        docs = [(d["docno"], _words(d["text"])) for d in map(json.loads, handle)]
    out = {}
    for q in map(json.loads, (sample_input / "queries.jsonl").read_text().splitlines()):
        words = _words(q["query"])
        out[q["qid"]] = max((len(words & w), doc) for doc, w in docs)[1]
    return out


@pytest.mark.parametrize("task", [TASK, "mathlib4-search"])
def test_a_tira_client_full_ranker_runs_unchanged(tira_image, tmp_path, task) -> None:
    from sharedtask.spec import load_task

    out = tmp_path / "run" / "output"
    assert main(["run", "--task", task, "--image", tira_image, "--command", FULLRANK, "--output", str(out)]) == 0
    record = json.loads((tmp_path / "run" / "run-record.json").read_text())
    assert record["validation"]["status"] == "valid", record["validation"]
    assert _tops(out / "run.txt") == _expected_full_tops(load_task(task).sample_dir / "input")
    assert 'Load ir_dataset from "/tira-data/input"' in (tmp_path / "run" / "stdout.log").read_text()


def test_demo_submissions_and_the_service_run_a_tira_client_full_ranker(tira_image, tmp_path) -> None:
    from service_helpers import call, free_port, start_server, stop

    submissions = tmp_path / "submissions.yml"
    submissions.write_text(yaml.safe_dump({"version": 1, "submissions": {"tira-irds": {
        "image": tira_image, "command": FULLRANK, "tasks": [TASK]}}}))
    out = tmp_path / "out"
    assert main(["demo", "--task", TASK, "--no-baselines", "--submissions", str(submissions), "--output", str(out)]) == 0
    board = json.loads((out / TASK / "leaderboard.json").read_text())
    row = {r["run"]: r for r in board["runs"]}["tira-irds"]
    assert "input_run" not in row
    assert any(isinstance(v, float) and 0 < v <= 1 for v in row.get("scores", row).values()), row

    data_dir = tmp_path / "service"
    data_dir.mkdir()
    served = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port())
    try:
        team = served.token("team-a")
        done = served.cli("submit", "--server", served.url, "--token", team, "--task", TASK, "--image", tira_image,
                          "--command", FULLRANK, "--tag", "irds", "--json")
        sid = json.loads(done.stdout)["id"]
        org = served.token()
        end = time.monotonic() + 600  # a hang bound, not a speed test
        while (sub := call(f"{served.url}/api/submissions/{sid}", token=org)[1])["status"] not in ("done", "failed"):
            assert time.monotonic() < end, sub
            time.sleep(0.5)
        assert sub["valid"] is True, sub
        assert 0 < sub["scores"]["ndcg5_official"] <= 1
    finally:
        stop(served)
