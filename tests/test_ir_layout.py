"""TIRA's ir_datasets layout of a dataset folder (documents.jsonl.gz, queries.jsonl, queries.xml):
written from the native files, byte-stable, checked by check-input, and read by the real tira
client (0.0.207, the test extra) exactly as code running in TIRA reads it."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.data.irlayout import write_ir_layout
from sharedtask.errors import SharedTaskError
from sharedtask.data.inputcheck import check_input
from sharedtask.spec import load_task

LAYOUT = ("documents.jsonl.gz", "queries.jsonl", "queries.xml")


@pytest.mark.parametrize("task_id", ["touche-2020-task1", "touche-2021-task1", "mathlib4-search"])
def test_the_samples_carry_the_layout_their_native_files_give(tmp_path: Path, task_id: str) -> None:
    task = load_task(task_id)
    sample = task.sample_dir / "input"
    copy = tmp_path / "input"
    shutil.copytree(sample, copy)
    for name in LAYOUT:
        if name != "queries.jsonl" or task.family == "touche":
            (copy / name).unlink()
    summary = write_ir_layout(task, copy)
    for name in LAYOUT:  # the bundled files are what the writer gives: not stale
        assert (copy / name).read_bytes() == (sample / name).read_bytes(), name
    assert check_input(task, sample).valid
    assert summary.documents == sum(1 for _ in gzip.open(copy / "documents.jsonl.gz"))


def test_touche_documents_are_conclusion_and_premises(tmp_path: Path) -> None:
    task = load_task("touche-2021-task1")
    sample = task.sample_dir / "input"
    expected = {}
    for name in ("debateorg", "debatepedia", "debatewise", "idebate", "parliamentary"):
        for arg in json.loads((sample / f"{name}.json").read_text())["arguments"]:
            expected.setdefault(arg["id"], " ".join([arg["conclusion"], *(p["text"] for p in arg["premises"])]))
    with gzip.open(sample / "documents.jsonl.gz", "rt", encoding="utf-8") as handle:
        got = {d["docno"]: d["text"] for d in map(json.loads, handle)}
    assert got == expected
    queries = [json.loads(line) for line in (sample / "queries.jsonl").read_text().splitlines()]
    titles = [t.split("<title>")[1].split("</title>")[0].strip()
              for t in (sample / "topics.xml").read_text().split("<topic>")[1:]]
    assert [q["query"] for q in queries] == titles


def test_check_input_finds_a_stale_layout(tmp_path: Path) -> None:
    task = load_task("touche-2021-task1")
    data = tmp_path / "input"
    shutil.copytree(task.sample_dir / "input", data)
    lines = (data / "queries.jsonl").read_text().splitlines()
    (data / "queries.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # one topic lost
    with gzip.open(data / "documents.jsonl.gz", "rt") as handle:
        docs = handle.readlines()
    with gzip.open(data / "documents.jsonl.gz", "wt") as handle:
        handle.writelines(docs[:-1])
    report = check_input(task, data)
    messages = [f.message for f in report.findings if f.code == "INPUT-FORMAT"]
    assert not report.valid
    assert any("queries.jsonl (TIRA's layout) holds 1 of the task's topic(s) missing" in m for m in messages), messages
    assert any("holds 265 documents, the corpus 266" in m for m in messages), messages
    (data / "queries.xml").write_text("<topics><topic><query>x</query></topic></topics>")
    report = check_input(task, data)
    assert any(f.path and f.path.endswith("queries.xml") for f in report.findings if f.code == "INPUT-FORMAT")


def test_the_cli_writes_the_layout_and_refuses_a_task_without_it(tmp_path: Path, capsys) -> None:
    task = load_task("touche-2021-task1")
    assert main(["data", "ir-layout", "--task", task.id, str(task.sample_dir / "input"), "--output",
                 str(tmp_path / "out"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 266
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(LAYOUT)
    assert main(["data", "ir-layout", "--task", "arqmath-3-task1", str(tmp_path)]) == 2
    assert "does not declare TIRA's ir_datasets layout" in capsys.readouterr().err
    with pytest.raises(SharedTaskError):
        write_ir_layout(load_task("arqmath-3-task1"), tmp_path)


_TIRA_READS = r"""
import json
from tira.third_party_integrations import ir_datasets
ds = ir_datasets.load("replaced-in-the-sandbox")
print(json.dumps({"docs": {d.doc_id: d.text for d in ds.docs_iter()},
                  "queries": [[q.query_id, q.text] for q in ds.queries_iter()],
                  "topics_file": ir_datasets.topics_file("x")}))
"""


@pytest.mark.parametrize("task_id", ["touche-2021-task1", "mathlib4-search"])
def test_the_tira_client_reads_the_layout(tmp_path: Path, task_id: str) -> None:
    pytest.importorskip("tira")
    pytest.importorskip("ir_datasets")
    task = load_task(task_id)
    sample = task.sample_dir / "input"
    env = {"TIRA_INPUT_DATASET": str(sample), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "IR_DATASETS_HOME": str(tmp_path / "irds")}
    done = subprocess.run([sys.executable, "-c", _TIRA_READS], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    with gzip.open(sample / "documents.jsonl.gz", "rt", encoding="utf-8") as handle:
        assert got["docs"] == {d["docno"]: d["text"] for d in map(json.loads, handle)}
    from sharedtask.rerank.texts import topics

    assert got["queries"] == [[qid, t.text] for qid, t in topics(task, sample).items()]
    assert got["topics_file"] == f"{sample}/queries.xml"
