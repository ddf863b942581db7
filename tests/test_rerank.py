"""Re-ranking stages without Docker: candidates, the rerank.jsonl.gz input, the check of a
re-ranked run, the contract in specs and manifests, jobs that name their first stage, and the
re-ranker scaffold run on the host. Expected values are worked out by hand or read from the
sample's own files, never from the code under test."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from sharedtask.cli import main
from sharedtask.errors import FormatError, SharedTaskError, SpecError
from sharedtask.executor.admission import JobRefused, admit
from sharedtask.executor.job import DatasetRef, Job
from sharedtask.manifest import load_manifest
from sharedtask.rerank import check_reranked, prepare_stage, top_candidates, write_rerank_input
from sharedtask.scaffold import write_submission
from sharedtask.spec import all_tasks, load_task
from sharedtask.validate import validate

REPO = Path(__file__).resolve().parent.parent
TOUCHE = load_task("touche-2021-task1")
SAMPLE = TOUCHE.sample_dir / "input"
BM25 = REPO / "baselines" / "reference-runs" / "touche-2021-task1" / "lucene-bm25.txt"


def lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------ candidates


def test_candidates_are_the_top_depth_in_trec_eval_order(tmp_path: Path) -> None:
    run = write(tmp_path / "run.txt", [
        "1 Q0 a 1 1.0 t",
        "1 Q0 b 2 3.0 t",  # the rank column is ignored, as trec_eval ignores it
        "1 Q0 c 3 2.0 t",
        "1 Q0 d 4 2.0 t",  # ties with c: doc id descending puts d first
        "1 Q0 b 5 9.0 t",  # b again: the first line counts
        "2 Q0 z 1 0.5 t",
    ])
    got = top_candidates(run, 3)
    assert [(c.docno, c.rank, c.score) for c in got["1"]] == [("b", 1, 3.0), ("d", 2, 2.0), ("c", 3, 2.0)]
    assert [(c.docno, c.rank) for c in got["2"]] == [("z", 1)]
    with pytest.raises(ValueError):
        top_candidates(run, 0)


# ------------------------------------------------------------------ the input file


def test_rerank_input_of_the_touche_sample(tmp_path: Path) -> None:
    first = write_rerank_input(TOUCHE, SAMPLE, BM25, tmp_path / "a" / "rerank.jsonl.gz", depth=5)
    again = write_rerank_input(TOUCHE, SAMPLE, BM25, tmp_path / "b" / "rerank.jsonl.gz", depth=5)
    data = first.path.read_bytes()
    assert data == again.path.read_bytes()  # same run and dataset: same bytes
    assert first.sha256 == hashlib.sha256(data).hexdigest()
    rows = lines(first.path)
    topics = [t.split("<number>")[1].split("<")[0].strip()
              for t in (SAMPLE / "topics.xml").read_text().split("<topic>")[1:]]
    run_topics = {line.split()[0] for line in BM25.read_text().splitlines()}
    assert [r["qid"] for r in rows[::5]] == [t for t in topics if t in run_topics]  # topics in file order
    assert first.topics == len(rows) // 5 and first.candidates == len(rows)
    assert set(rows[0]) == {"qid", "query", "original_query", "docno", "text", "original_document", "rank", "score",
                            "fields"}  # TIREx's fields (tira 0.0.207 construct_rerank_row) and ours
    # the first candidate of topic 51: BM25's best line, its score, and the argument's own text
    best = max((line.split() for line in BM25.read_text().splitlines() if line.split()[0] == "51"),
               key=lambda parts: (float(parts[4]), parts[2]))
    assert (rows[0]["qid"], rows[0]["docno"], rows[0]["rank"], rows[0]["score"]) == ("51", best[2], 1, float(best[4]))
    arguments = [a for name in ("debateorg", "debatepedia", "debatewise", "idebate", "parliamentary")
                 for a in json.loads((SAMPLE / f"{name}.json").read_text())["arguments"]]
    argument = next(a for a in arguments if a["id"] == best[2])
    assert rows[0]["text"] == " ".join([argument["conclusion"], *(p["text"] for p in argument["premises"])])
    assert rows[0]["fields"] == {"conclusion": argument["conclusion"],
                                 "premises": " ".join(p["text"] for p in argument["premises"])}
    title = (SAMPLE / "topics.xml").read_text().split("<number>51</number>")[1].split("<title>")[1].split("</title>")[0]
    assert rows[0]["query"] == title.strip()
    # the sample's topics have a title only (as Touché 2021's published topics.xml)
    assert rows[0]["original_query"] == {"query_id": "51", "title": title.strip(), "description": "", "narrative": ""}
    assert rows[0]["original_document"] == {"doc_id": best[2], **rows[0]["fields"]}
    assert [r["rank"] for r in rows[:5]] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("task_id, first", [("arqmath-3-task1", "lucene-bm25"),
                                            ("mathlib4-search", "lucene-bm25-statements")])
def test_rerank_input_of_the_other_families(tmp_path: Path, task_id: str, first: str) -> None:
    task = load_task(task_id)
    run = REPO / "baselines" / "reference-runs" / task_id / f"{first}.txt"
    summary = prepare_stage(task, task.sample_dir / "input", run, tmp_path / "stage")
    assert (tmp_path / "stage" / "run.txt").read_bytes() == run.read_bytes()
    rows = lines(summary.path)
    per_topic: dict[str, int] = {}
    for row in rows:
        per_topic[row["qid"]] = per_topic.get(row["qid"], 0) + 1
        assert row["text"].strip() and row["query"].strip()
    assert max(per_topic.values()) <= task.rerank.depth
    assert summary.candidates == len(rows) and summary.topics == len(per_topic)


def test_a_gzipped_first_stage_gives_the_same_stage_with_a_plain_run_txt(tmp_path: Path) -> None:
    """TIRA accepts run.txt.gz: the stage's run.txt is the decompressed run, its candidates the same bytes."""
    output = tmp_path / "output"
    output.mkdir()
    with gzip.open(output / "run.txt.gz", "wb") as packed:
        packed.write(BM25.read_bytes())
    plain = prepare_stage(TOUCHE, SAMPLE, BM25, tmp_path / "plain")
    packed_stage = prepare_stage(TOUCHE, SAMPLE, output, tmp_path / "packed")
    assert (tmp_path / "packed" / "run.txt").read_bytes() == BM25.read_bytes()
    assert packed_stage.sha256 == plain.sha256
    (output / "run.txt.gz").write_bytes(b"\x1f\x8b\x08 not gzip")
    with pytest.raises(FormatError, match="not a readable gzip file"):
        prepare_stage(TOUCHE, SAMPLE, output, tmp_path / "broken")
    assert not (tmp_path / "broken" / "run.txt").exists()


def test_a_run_the_dataset_does_not_know_is_refused(tmp_path: Path) -> None:
    unknown_topic = write(tmp_path / "t.txt", ["999 Q0 S3e0ed44a-A51a35c8a 1 1.0 t"])
    with pytest.raises(FormatError, match="topic 999 is not a topic of the dataset"):
        write_rerank_input(TOUCHE, SAMPLE, unknown_topic, tmp_path / "r.jsonl.gz")
    unknown_doc = write(tmp_path / "d.txt", ["51 Q0 S00000000-A00000000 1 1.0 t"])
    with pytest.raises(FormatError, match="S00000000-A00000000 is not in the dataset's corpus"):
        write_rerank_input(TOUCHE, SAMPLE, unknown_doc, tmp_path / "r.jsonl.gz")
    assert not (tmp_path / "r.jsonl.gz").exists()  # nothing half-written
    with pytest.raises(SharedTaskError, match="declares no re-ranking stage"):
        write_rerank_input(load_task("arqmath-3-task2"), SAMPLE, BM25, tmp_path / "r.jsonl.gz")


# ------------------------------------------------------------------ the check of a re-ranked run


@pytest.fixture()
def stage(tmp_path: Path) -> Path:
    prepare_stage(TOUCHE, SAMPLE, BM25, tmp_path / "stage", depth=3)
    return tmp_path / "stage"


def test_reordered_candidates_pass_and_others_are_findings(tmp_path: Path, stage: Path) -> None:
    rows = lines(stage / "rerank.jsonl.gz")
    by_topic: dict[str, list[str]] = {}
    for r in rows:
        by_topic.setdefault(r["qid"], []).append(r["docno"])
    reordered_rows = [f"{qid} Q0 {doc} {i} {10 - i} mine"
                      for qid, docs in by_topic.items() for i, doc in enumerate(reversed(docs), 1)]
    reordered = write(tmp_path / "ok.txt", reordered_rows)
    assert check_reranked(reordered, stage) == []
    assert validate(reordered, TOUCHE, input_dir=SAMPLE, input_run=stage).valid
    topic = rows[0]["qid"]
    other = next(line.split()[2] for line in BM25.read_text().splitlines()
                 if line.split()[0] == topic and line.split()[2] not in by_topic[topic])
    added = write(tmp_path / "bad.txt", reordered_rows + [f"{topic} Q0 {other} 4 1 mine"])
    found = check_reranked(added, stage)
    assert [(f.code, f.line) for f in found] == [("RUN-NOT-CANDIDATE", len(reordered_rows) + 1),
                                                 ("RUN-RERANK-DEPTH", None)]
    assert other in found[0].message and "4 documents ranked, 3 handed over" in found[1].message
    verdict = validate(added, TOUCHE, input_dir=SAMPLE, input_run=stage)
    assert not verdict.valid and {"RUN-NOT-CANDIDATE", "RUN-RERANK-DEPTH"} <= verdict.codes()
    assert validate(added, TOUCHE, input_dir=SAMPLE).valid  # without the stage: an ordinary valid run


def test_the_cli_makes_a_stage_and_validates_against_it(tmp_path: Path, stage: Path, capsys) -> None:
    out = tmp_path / "cli-stage"
    assert main(["rerank-input", "--task", TOUCHE.id, "--run", str(BM25), "--output", str(out), "--depth", "3"]) == 0
    assert (out / "rerank.jsonl.gz").read_bytes() == (stage / "rerank.jsonl.gz").read_bytes()
    assert "candidates" in capsys.readouterr().out
    rows = lines(stage / "rerank.jsonl.gz")
    bad = write(tmp_path / "bad.txt", [f"{rows[0]['qid']} Q0 S3e0ed44a-A51a35c8a 1 1 mine"])
    assert main(["validate", "--task", TOUCHE.id, "--input-run", str(out), "--json", str(bad)]) == 1
    assert "RUN-NOT-CANDIDATE" in capsys.readouterr().out
    assert main(["validate", "--task", TOUCHE.id, "--input-run", str(tmp_path), str(bad)]) == 2
    assert "holds no rerank.jsonl.gz" in capsys.readouterr().err
    assert main(["rerank-input", "--task", "arqmath-3-task2", "--run", str(BM25), "--output", str(tmp_path / "x")]) == 2
    assert "no re-ranking stage" in capsys.readouterr().err


# ------------------------------------------------------------------ contracts


def test_every_stage_names_software_that_serves_its_task() -> None:
    manifest = load_manifest()
    declared = [t for t in all_tasks() if t.rerank is not None]
    assert {t.family for t in declared} == {"touche", "arqmath-task1", "semantic-search"}
    for task in declared:
        for name in task.rerank.first_stages:
            assert manifest.software(name).serves(task.id) or not any(
                manifest.software(n).serves(task.id) for n in task.rerank.first_stages), (task.id, name)
        rerankers = [sw for sw in manifest.for_task(task.id) if sw.is_reranker]
        assert rerankers and all(manifest.first_stage(sw, task) is not None for sw in rerankers)


def _manifest(tmp_path: Path, software: dict) -> Path:
    path = tmp_path / "tira.yml"
    path.write_text(yaml.safe_dump({"version": 1, "baselines": software}))
    return path


@pytest.mark.parametrize("software, message", [
    ({"r": {"image": "x:1", "input_run": "nope", "tasks": ["touche-2021-task1"]}}, "'nope' is not software"),
    ({"f": {"image": "x:1", "tasks": ["touche-2021-task1"]},
      "r": {"image": "x:1", "input_run": "f", "tasks": ["touche-2021-task1"]},
      "rr": {"image": "x:1", "input_run": "r", "tasks": ["touche-2021-task1"]}}, "'r' is a re-ranker itself"),
    ({"f": {"image": "x:1", "tasks": ["arqmath-3-task2"]},
      "r": {"image": "x:1", "input_run": "f", "tasks": ["arqmath-3-task2"]}}, "declares no re-ranking stage"),
    # a first stage the task's spec does not admit (touche: lucene-bm25, lucene-dirichlet): demo
    # planned no run of the re-ranker there, without a word
    ({"f": {"image": "x:1", "tasks": ["touche-2021-task1"]},
      "r": {"image": "x:1", "input_run": "f", "tasks": ["touche-2021-task1"]}},
     r"none of its input runs \(f\) is a first stage of task touche-2021-task1.*admits lucene-bm25, lucene-dirichlet"),
    # an admitted name that does not run on the task
    ({"lucene-bm25": {"image": "x:1", "tasks": ["touche-2020-task1"]},
      "r": {"image": "x:1", "input_run": "lucene-bm25", "tasks": ["touche-2021-task1"]}},
     "none of its input runs"),
])
def test_manifest_pipelines_are_checked(tmp_path: Path, software: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_manifest(_manifest(tmp_path, software))


def test_a_job_names_its_first_stage_and_workers_refuse_it() -> None:
    job = Job(task="touche-2021-task1", software="r", image="x:1", image_id="sha256:" + "a" * 64, command=None,
              dataset=DatasetRef("touche-2021-task1/sample", {"topics.xml": "b" * 64}))
    identity = {"task": job.task, "software": job.software, "image_id": job.image_id, "command": None,
                "dataset": asdict(job.dataset), "options": {}}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    assert job.id == "job-" + hashlib.sha256(text.encode()).hexdigest()[:24]  # first stages keep their ids
    staged = Job(**{**asdict(job), "dataset": job.dataset, "stage": {"software": "f", "job": "job-1", "sha256": "c" * 64}})
    changed = Job(**{**asdict(job), "dataset": job.dataset, "stage": {"software": "f", "job": "job-1", "sha256": "d" * 64}})
    assert len({job.id, staged.id, changed.id}) == 3  # a changed first stage is a new job
    assert Job.from_json(staged.to_json()) == staged
    with pytest.raises(JobRefused, match="job field stage"):
        admit(staged.to_json())


# ------------------------------------------------------------------ the scaffold


def test_the_reranker_scaffold_runs_on_a_stage(tmp_path: Path, stage: Path) -> None:
    sub = write_submission(TOUCHE, tmp_path / "my-reranker", rerank=True)
    assert {"run.py", "Dockerfile", "README.md", "tests/test_submission.py"} <= set(sub.files)
    assert "rerank.jsonl.gz" in sub.files["run.py"] and "--input-run" in sub.files["README.md"]
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(tmp_path / "my-reranker" / "run.py"), str(stage), str(out)], check=True)
    verdict = validate(out / "run.txt", TOUCHE, input_dir=SAMPLE, input_run=stage)
    assert verdict.valid and verdict.stats.lines == len(lines(stage / "rerank.jsonl.gz"))
    with pytest.raises(SharedTaskError, match="declares no re-ranking stage"):
        write_submission("arqmath-3-task2", tmp_path / "nope", rerank=True)


# ------------------------------------------------------------------ the re-rank dataset (TIREx's layout)

_TIRA_READS = r"""
import json, os, sys
from tira.third_party_integrations import ir_datasets, load_rerank_data
df = load_rerank_data(default="/nonexistent")
ds = ir_datasets.load("anything")
queries = {q.query_id: (q.text, q.description) for q in ds.queries_iter()}
docs = {d.doc_id: d.text for d in ds.docs_iter()}
print(json.dumps({"rows": len(df), "columns": sorted(df.columns), "qids": sorted(set(df["qid"])),
                  "queries": queries, "docs": docs}))
"""


def test_the_rerank_dataset_reads_with_the_tira_client(tmp_path: Path) -> None:
    """The real tira client (0.0.207, the test extra) reads the re-rank dataset as it reads
    TIREx's: load_rerank_data and its ir_datasets integration, with $TIRA_INPUT_DATASET set."""
    pytest.importorskip("tira")
    pytest.importorskip("ir_datasets")
    from sharedtask.rerank.dataset import RERANK_DATASET_FILES, make_rerank_dataset

    summary = write_rerank_input(TOUCHE, SAMPLE, BM25, tmp_path / "stage" / "rerank.jsonl.gz", depth=5)
    folder = make_rerank_dataset(tmp_path / "stage", tmp_path / "dataset")
    assert sorted(p.name for p in folder.iterdir()) == sorted(RERANK_DATASET_FILES)
    assert (folder / "rerank.jsonl.gz").read_bytes() == summary.path.read_bytes()
    rows = lines(summary.path)
    env = {"TIRA_INPUT_DATASET": str(folder), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "IR_DATASETS_HOME": str(tmp_path / "irds")}
    done = subprocess.run([sys.executable, "-c", _TIRA_READS], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["rows"] == len(rows)
    assert {"qid", "query", "docno", "text", "rank", "score"} <= set(got["columns"])
    assert got["qids"] == sorted({r["qid"] for r in rows})
    # the topics come with their fields (original_query), the candidates with their text, no other document
    assert got["queries"] == {r["qid"]: [r["query"], ""] for r in rows}
    assert got["docs"] == {r["docno"]: r["text"] for r in rows}
    # queries.xml: TREC-style topics, one per topic, the query text in <query>
    import xml.etree.ElementTree as ET

    root = ET.parse(folder / "queries.xml").getroot()
    assert [(t.get("number"), t.findtext("query")) for t in root] == list(dict((r["qid"], r["query"]) for r in rows).items())


def test_a_rerank_dataset_from_a_stage_made_before_original_query(tmp_path: Path) -> None:
    """A stage written before the TIREx fields (qid, query, docno, text, rank, score, fields) still
    gives a re-rank dataset: its topics from qid and query."""
    from sharedtask.rerank.dataset import make_rerank_dataset

    stage = tmp_path / "stage"
    stage.mkdir()
    with gzip.open(stage / "rerank.jsonl.gz", "wt") as out:
        for qid, doc in (("7", "a"), ("7", "b"), ("3", "c")):
            out.write(json.dumps({"qid": qid, "query": f"q{qid}", "docno": doc, "text": "t", "rank": 1, "score": 1.0,
                                  "fields": {"x": "t"}}) + "\n")
    folder = make_rerank_dataset(stage, tmp_path / "dataset")
    assert [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()] == [
        {"qid": "7", "query": "q7", "original_query": {"query_id": "7", "text": "q7"}},
        {"qid": "3", "query": "q3", "original_query": {"query_id": "3", "text": "q3"}}]
    (stage / "rerank.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(FormatError, match="not a re-ranking input"):
        make_rerank_dataset(stage, tmp_path / "again")
