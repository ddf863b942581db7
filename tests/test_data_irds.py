"""Touché topics and qrels through ir_datasets (``irds:<id>``): the real ir_datasets code
path, with ``IR_DATASETS_HOME`` pre-populated in its exact layout (``touche/<year>/task-1/``,
the file names its ``Cache`` objects use), since nothing can be downloaded here. The
bundled samples, which are in the organizers' formats, stand in for the official files."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import importlib.util
import os

import pytest

from sharedtask.cli import main
from sharedtask.data import registry

if importlib.util.find_spec("ir_datasets") is None:  # not imported here: it reads its home once, at import
    pytest.skip("ir_datasets is not installed", allow_module_level=True)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def irds_home(tmp_path_factory, repo_root) -> Path:
    """One home for the module: ir_datasets fixes its paths when first imported."""
    import sys

    home = tmp_path_factory.mktemp("irds")
    if "ir_datasets" in sys.modules and os.environ.get("IR_DATASETS_HOME") != str(home):
        pytest.skip("ir_datasets was imported before this module set its home")
    t20, t21 = home / "touche/2020/task-1", home / "touche/2021/task-1"
    t20.mkdir(parents=True)
    t21.mkdir(parents=True)
    shutil.copyfile(repo_root / "tasks/samples/touche-2020/input/topics.xml", t20 / "queries.xml")
    shutil.copyfile(repo_root / "tasks/samples/touche-2020/truth/qrels.txt", t20 / "qrels.qrels")
    shutil.copyfile(repo_root / "tasks/samples/touche-2021/input/topics.xml", t21 / "queries.xml")
    shutil.copyfile(repo_root / "tasks/samples/touche-2021/truth/qrels.txt", t21 / "qrels-relevance.qrels")
    shutil.copyfile(repo_root / "tasks/samples/touche-2021/truth/qrels-quality.txt", t21 / "qrels-quality.qrels")
    os.environ["IR_DATASETS_HOME"] = str(home)
    return home


@pytest.fixture
def catalogue(tmp_path, monkeypatch, repo_root, irds_home):
    """tasks/ with the registry's md5 of the official qrels replaced by the samples' md5."""
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    tasks = tmp_path / "tasks"
    shutil.copytree(repo_root / "tasks", tasks)
    reg = tasks / "datasets" / "touche.yml"
    text = reg.read_text()
    text = text.replace("6a645e2ebd4f1d6c44da4d9509624598", _md5(irds_home / "touche/2020/task-1/qrels.qrels"))
    text = text.replace("76b4e8348bde353167ce52ffa598a6b1", _md5(irds_home / "touche/2021/task-1/qrels-relevance.qrels"))
    text = text.replace("c899bcab9b00fdd28f77d08a1d26298a", _md5(irds_home / "touche/2021/task-1/qrels-quality.qrels"))
    reg.write_text(text)
    monkeypatch.setenv("SHAREDTASK_TASKS", str(tasks))
    registry.all_datasets.cache_clear()
    yield tasks
    registry.all_datasets.cache_clear()


def test_irds_truth_is_the_ir_datasets_file_byte_for_byte(catalogue, irds_home, capsys, tmp_path):
    assert main(["data", "path", "irds:argsme/2020-04-01/touche-2020-task-1", "--truth"]) == 0
    truth = Path(capsys.readouterr().out.strip())
    assert truth == tmp_path / "store/datasets/touche-2020-task1/test/truth"
    assert (truth / "qrels.txt").read_bytes() == (irds_home / "touche/2020/task-1/qrels.qrels").read_bytes()


def test_irds_quality_qrels_come_from_the_records(catalogue, irds_home, repo_root, capsys):
    assert main(["data", "path", "irds:argsme/2020-04-01/touche-2021-task-1", "--truth"]) == 0
    truth = Path(capsys.readouterr().out.strip())
    written = [line.split() for line in (truth / "qrels-quality.txt").read_text().splitlines()]
    sample = [line.split() for line in (repo_root / "tasks/samples/touche-2021/truth/qrels-quality.txt")
              .read_text().splitlines() if line.strip()]
    assert written == sample


def test_evaluate_with_irds_equals_evaluate_with_the_files(catalogue, repo_root, capsys, tmp_path):
    run = tmp_path / "run.txt"
    qrels = (repo_root / "tasks/samples/touche-2021/truth/qrels.txt").read_text().split("\n")
    rows = [line.split() for line in qrels if line.strip()][:60]
    run.write_text("".join(f"{q} Q0 {d} {i % 10 + 1} {100 - i} t\n" for i, (q, _, d, _) in enumerate(rows)))
    capsys.readouterr()
    assert main(["evaluate", str(run), "--task", "touche-2021-task1", "--dataset",
                 "irds:argsme/2020-04-01/touche-2021-task-1", "--json"]) == 0
    via_irds = json.loads(capsys.readouterr().out)
    assert main(["evaluate", str(run), "--task", "touche-2021-task1", "--truth",
                 str(repo_root / "tasks/samples/touche-2021/truth"), "--json"]) == 0
    via_files = json.loads(capsys.readouterr().out)
    assert via_irds["scores"] == via_files["scores"] and "ndcg5_official_quality" in via_irds["scores"]
    assert "ir_datasets argsme/2020-04-01/touche-2021-task-1" in via_irds["notes"][0]
    # with no truth argument at all, nothing is fetched unasked: one line naming the dataset to use
    assert main(["evaluate", str(run), "--task", "touche-2021-task1", "--json"]) == 2
    assert "--dataset touche-2021-task1/test" in capsys.readouterr().err


def test_a_qrels_file_that_is_not_the_official_one_is_refused(irds_home, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    registry.all_datasets.cache_clear()  # the real registry: the official md5, which the sample is not
    assert main(["data", "path", "touche-2020-task1/test", "--truth"]) == 2
    err = capsys.readouterr().err
    assert "md5 is" in err and "6a645e2ebd4f1d6c44da4d9509624598" in err
    assert not list((tmp_path / "store").rglob("qrels.txt*"))


def test_quality_qrels_from_a_source_that_is_not_the_official_one_are_refused(catalogue, irds_home, capsys, tmp_path):
    """The quality grades are written from ir_datasets' records; the registry pins the md5 of the
    organizers' file behind them (source_md5), checked before anything is written."""
    reg = Path(os.environ["SHAREDTASK_TASKS"]) / "datasets" / "touche.yml"
    reg.write_text(reg.read_text().replace(_md5(irds_home / "touche/2021/task-1/qrels-quality.qrels"),
                                           "c899bcab9b00fdd28f77d08a1d26298a"))
    registry.all_datasets.cache_clear()
    assert main(["data", "path", "touche-2021-task1/test", "--truth"]) == 2
    err = capsys.readouterr().err
    assert "qrels-quality of ir_datasets" in err and "c899bcab9b00fdd28f77d08a1d26298a" in err
    assert not list((tmp_path / "store").rglob("qrels-quality.txt*"))


def test_every_touche_truth_file_has_a_checksum() -> None:
    """Issue 27: each Touché truth file the registry names carries the organizers' checksum (the
    md5 of the file itself, or of the file its records are written from)."""
    registry.all_datasets.cache_clear()
    for ds in registry.all_datasets().values():
        if ds.task.startswith("touche"):
            for f in ds.role("truth"):
                assert f.md5 or f.sha256 or f.source_md5, (ds.id, f.target)
