"""Pipelines on real containers: `sharedtask demo` runs BM25 once and hands its top 100 to two
re-rankers (the dense baseline and a scaffolded term-overlap re-ranker); a participant's
re-ranker loop from `new-submission --rerank` to `evaluate`, as its README says.

Real Docker, the real baseline images, the bundled Touché 2021 sample."""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from pathlib import Path

import pytest
import yaml

from sharedtask.cli import main
from sharedtask.sandbox.orphans import owner

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASK = "touche-2021-task1"
REPO = Path(__file__).resolve().parent.parent


def _baselines(*names: str) -> dict:
    """Entries of the project's tira.yml, their build folders made absolute."""
    raw = yaml.safe_load((REPO / "tira.yml").read_text())["baselines"]
    out = {}
    for name in names:
        entry = dict(raw[name])
        if "build" in entry:
            entry["build"] = str((REPO / entry["build"]).resolve())
        out[name] = entry
    return out


def _run_lines(path: Path) -> dict[tuple[str, str], str]:
    return {(p[0], p[2]): p[4] for p in (line.split() for line in path.read_text().splitlines())}


@pytest.fixture(scope="module")
def pipeline_demo(base_image, docker_client, tmp_path_factory) -> tuple[Path, list[dict], str]:
    folder = tmp_path_factory.mktemp("pipelines")
    assert main(["new-submission", "--rerank", "--task", TASK, "--name", "overlap-rerank",
                 str(folder / "overlap")]) == 0
    manifest = folder / "tira.yml"
    baselines = _baselines("lucene-bm25", "dense-wordllama", "dense-rerank")
    baselines["dense-rerank"].update(input_run="lucene-bm25", tasks=[TASK])  # mathlib4's first stage is not here
    manifest.write_text(yaml.safe_dump({"version": 1, "baselines": baselines}))
    submissions = folder / "submissions.yml"
    submissions.write_text(yaml.safe_dump({"version": 1, "submissions": {"overlap-rerank": {
        "build": str(folder / "overlap"), "image": "sharedtask-test/overlap-rerank:latest",
        "input_run": "lucene-bm25", "tasks": [TASK]}}}))
    out = folder / "out"
    since = time.time() - 1
    code = main(["demo", "--task", TASK, "--manifest", str(manifest), "--submissions", str(submissions),
                 "--output", str(out)])
    events = list(docker_client.events(since=since, until=time.time() + 1, decode=True,
                                       filters={"event": "start", "label": [f"sharedtask.owner={owner()}"]}))
    assert code == 0
    yield out, events, "sharedtask-test/overlap-rerank:latest"
    docker_client.images.remove("sharedtask-test/overlap-rerank:latest", force=True)


def test_the_first_stage_runs_once_for_two_rerankers(pipeline_demo) -> None:
    out, events, _ = pipeline_demo
    runs = [e for e in events if "sharedtask.purpose" not in e["Actor"]["Attributes"]]
    record = json.loads((out / TASK / "lucene-bm25" / "run-record.json").read_text())
    lucene = [e for e in runs if e["id"] == record["container"]["id"]]
    started = sorted(e["id"] for e in runs)
    assert len(lucene) == 1 and len(started) == 4, started  # BM25 once, full dense, the two re-rankers
    others = {json.loads((out / TASK / name / "run-record.json").read_text())["container"]["id"]
              for name in ("dense-wordllama", "dense-rerank", "overlap-rerank")}
    assert others | {record["container"]["id"]} == set(started)
    stage = out / TASK / "lucene-bm25" / "stage"
    digest = hashlib.sha256((stage / "rerank.jsonl.gz").read_bytes()).hexdigest()
    assert (stage / "run.txt").read_bytes() == (out / TASK / "lucene-bm25" / "output" / "run.txt").read_bytes()
    for name in ("dense-rerank", "overlap-rerank"):
        record = json.loads((out / TASK / name / "run-record.json").read_text())
        assert record["rerank"]["sha256"] == digest and record["rerank"]["depth"] == 100
        assert record["validation"]["status"] == "valid"


def test_the_leaderboard_shows_the_pipelines(pipeline_demo) -> None:
    out, _, _ = pipeline_demo
    board = json.loads((out / TASK / "leaderboard.json").read_text())
    rows = {r["run"]: r for r in board["runs"]}
    assert set(rows) == {"lucene-bm25", "dense-wordllama", "dense-rerank", "overlap-rerank"}
    assert rows["dense-rerank"].get("input_run") == "lucene-bm25" and "input_run" not in rows["dense-wordllama"]
    report = (out / "report.html").read_text()
    assert "dense-rerank ← lucene-bm25" in report and "overlap-rerank ← lucene-bm25" in report


def test_dense_reranking_gives_the_full_dense_scores_on_the_candidates(pipeline_demo) -> None:
    """The candidate text is the text the full dense run embeds: the same exact scores, to the bit."""
    out, _, _ = pipeline_demo
    reranked = _run_lines(out / TASK / "dense-rerank" / "output" / "run.txt")
    full = _run_lines(out / TASK / "dense-wordllama" / "output" / "run.txt")
    with gzip.open(out / TASK / "lucene-bm25" / "stage" / "rerank.jsonl.gz", "rt") as handle:
        candidates = {(c["qid"], c["docno"]) for c in map(json.loads, handle)}
    assert set(reranked) == candidates
    assert all(full[key] == score for key, score in reranked.items())


def test_a_participants_reranker_loop(pipeline_demo, docker_client, tmp_path, capsys) -> None:
    """The scaffold README's loop: a stage from a first stage's run, the image run on it
    sandboxed, validated against its candidates, evaluated."""
    out, _, image = pipeline_demo
    sample = tmp_path / "sample"
    assert main(["sample", TASK, str(sample)]) == 0
    first = out / TASK / "lucene-bm25" / "output" / "run.txt"
    assert main(["rerank-input", "--task", TASK, "--input", str(sample / "input"), "--run", str(first),
                 "--output", str(tmp_path / "stage")]) == 0
    assert main(["run", "--task", TASK, "--image", image, "--input", str(sample / "input"),
                 "--input-run", str(tmp_path / "stage"), "--output", str(tmp_path / "mine" / "output")]) == 0
    mine = tmp_path / "mine" / "output" / "run.txt"
    assert main(["validate", "--task", TASK, "--input", str(sample / "input"), "--input-run",
                 str(tmp_path / "stage"), str(mine)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--task", TASK, "--truth", str(sample / "truth"), "--json", str(mine)]) == 0
    scores = json.loads(capsys.readouterr().out)["scores"]
    assert 0.0 <= scores["ndcg5_official"] <= 1.0
    # the same image, its run mounted without a stage: the sandbox makes the stage itself
    assert main(["run", "--task", TASK, "--image", image, "--input", str(sample / "input"),
                 "--input-run", str(first), "--output", str(tmp_path / "again" / "output")]) == 0
    assert (tmp_path / "again" / "output" / "run.txt").read_bytes() == mine.read_bytes()


def test_dense_reranking_equals_the_full_dense_run_with_an_empty_field(pipeline_demo, tmp_path) -> None:
    """mathlib4-search with empty `informal` fields (as every statement of the real mathlib4 has):
    the candidates' text is the text the full dense run embeds, so the scores are equal to the bit.
    Before the fix the full run embedded "name  formal" (two spaces) and no score was equal."""
    task = "mathlib4-search"
    sample = tmp_path / "sample"
    assert main(["sample", task, str(sample)]) == 0
    corpus = sample / "input" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    for row in rows[::2]:
        row["informal"] = ""
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    first = REPO / "baselines" / "reference-runs" / task / "lucene-bm25-statements.txt"
    image = "sharedtask/baseline-dense:latest"  # built by the module's demo
    assert main(["run", "--task", task, "--image", image, "--command", "python -m dense_baseline --mode dense",
                 "--input", str(sample / "input"), "--output", str(tmp_path / "full" / "output")]) == 0
    assert main(["run", "--task", task, "--image", image, "--command", "python -m dense_baseline --mode rerank",
                 "--input", str(sample / "input"), "--input-run", str(first),
                 "--output", str(tmp_path / "rerank" / "output")]) == 0
    full = _run_lines(tmp_path / "full" / "output" / "run.txt")
    reranked = _run_lines(tmp_path / "rerank" / "output" / "run.txt")
    blanked = {r["id"] for r in rows[::2]}
    assert {doc for _, doc in reranked} & blanked  # the empty fields are among the candidates
    assert reranked and all(full[key] == score for key, score in reranked.items())
