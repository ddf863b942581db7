"""Touché topics and qrels through ir_datasets (``irds:<id>``): the real ir_datasets code
path, with ``IR_DATASETS_HOME`` pre-populated in its exact layout (``touche/<year>/task-1/``,
the file names its ``Cache`` objects use), since nothing can be downloaded here. The
bundled samples, which are in the organizers' formats, stand in for the official files."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import importlib.util
import os

import pytest

from sharedtask.cli import main
from sharedtask.data import registry
from sharedtask.errors import SharedTaskError

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


def test_every_touche_file_has_a_checksum() -> None:
    """Issue 27: each Touché file the registry names carries the organizers' checksum (the md5 of
    the file itself, of the file its records are written from, or of the archive it is extracted
    from)."""
    registry.all_datasets.cache_clear()
    for ds in registry.all_datasets().values():
        if ds.task.startswith("touche"):
            for f in ds.files:
                assert f.md5 or f.sha256 or f.source_md5, (ds.id, f.target)
                assert not f.extract or f.md5, (ds.id, f.target)  # an extracted file: the archive's md5


@pytest.mark.parametrize("dataset_id", ["touche-2020-task1/test", "touche-2021-task1/test"])
def test_the_topics_archive_pins_are_the_ones_ir_datasets_downloads_and_checks(dataset_id: str) -> None:
    """The registry's URL, member, md5 and size of each topics zip are those of the object
    ir_datasets reads the topics from (its ZipExtract over a Download with expected_md5)."""
    import ir_datasets

    registry.all_datasets.cache_clear()
    ds = registry.get_dataset(dataset_id)
    topics = ds.file("input/topics.xml")
    assert topics is not None and topics.irds == "queries"
    with contextlib.redirect_stdout(io.StringIO()):
        extract = ir_datasets.load(ds.irds).queries_handler()._source._streamer  # ir_datasets 0.6.3: Cache(ZipExtract)
    assert extract.zip_path == topics.extract
    assert extract.dlc.expected_md5 == topics.md5
    assert [m.url for m in extract.dlc.mirrors] == [topics.url]
    assert extract.dlc._size_hint == topics.size


def _zip(path: Path, member: str, data: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, data)
    return path


@pytest.fixture
def topics_zip(catalogue, repo_root, tmp_path) -> tuple[Path, bytes]:
    """The organizers' topics zip as a fixture (the sample topics as its member), with the
    registry's md5 and size of the official zip replaced by this one's."""
    data = (repo_root / "tasks/samples/touche-2020/input/topics.xml").read_bytes()
    (tmp_path / "release").mkdir()
    archive = _zip(tmp_path / "release" / "topics-task-1.zip", "topics-task-1.xml", data)
    reg = catalogue / "datasets" / "touche.yml"
    reg.write_text(reg.read_text().replace("9605104435165a6b01b737464596eba4", _md5(archive))
                   .replace("size: 8768,", f"size: {archive.stat().st_size},"))
    registry.all_datasets.cache_clear()
    return archive, data


def _manifest(store: Path, dataset: str) -> dict:
    return json.loads((store / "datasets" / dataset / "manifest.json").read_text())["files"]


def test_topics_imported_from_the_organizers_zip_are_checked_by_its_md5(topics_zip, capsys, tmp_path):
    archive, data = topics_zip
    main(["data", "import", "touche-2020-task1/test", "--from", str(archive.parent)])  # args.me stays missing
    capsys.readouterr()
    placed = tmp_path / "store/datasets/touche-2020-task1/test/input/topics.xml"
    assert placed.read_bytes() == data
    assert _manifest(tmp_path / "store", "touche-2020-task1/test")["input/topics.xml"]["source"].endswith(".zip")
    assert main(["data", "verify", "touche-2020-task1/test", "--json"]) == 1  # args.me is not placed
    checks = {c["path"]: c for c in json.loads(capsys.readouterr().out)["files"]}
    assert checks["input/topics.xml"]["ok"] and "archive with md5" in checks["input/topics.xml"]["detail"]


def test_a_topics_zip_that_is_not_the_official_one_is_refused(topics_zip, capsys, tmp_path):
    archive, data = topics_zip
    _zip(archive, "topics-task-1.xml", data.replace(b"tenure", b"tenurE"))  # one letter of the topics
    assert main(["data", "import", "touche-2020-task1/test", "--from", str(archive.parent)]) == 2
    err = capsys.readouterr().err
    assert "md5 is" in err and "the registry expects" in err and str(archive) in err
    assert not (tmp_path / "store/datasets/touche-2020-task1/test/input/topics.xml").exists()


def test_data_fetch_takes_the_topics_from_the_zip_and_checks_it(topics_zip, capsys, tmp_path):
    """Over a real HTTP server on 127.0.0.1 serving the zip under its official name."""
    from sharedtask.data import store
    from test_data_fetch import _Server

    archive, data = topics_zip
    server = _Server()
    try:
        server.files["topics-task-1.zip"] = archive.read_bytes()
        ds = registry.get_dataset("touche-2020-task1/test")
        with pytest.raises(SharedTaskError, match="HTTP 404"):  # the args.me parts are not served
            store.assemble(ds, download=True, mirror=server.url, show_progress=False)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    placed = tmp_path / "store/datasets/touche-2020-task1/test/input/topics.xml"
    assert placed.read_bytes() == data
    assert _manifest(tmp_path / "store", "touche-2020-task1/test")["input/topics.xml"]["source"] == ds.file(
        "input/topics.xml").url


def test_without_a_download_the_topics_come_through_ir_datasets(topics_zip, capsys, tmp_path, irds_home):
    from sharedtask.data import store

    ds = registry.get_dataset("touche-2020-task1/test")
    store.assemble(ds, show_progress=False)
    placed = tmp_path / "store/datasets/touche-2020-task1/test/input/topics.xml"
    assert placed.read_bytes() == (irds_home / "touche/2020/task-1/queries.xml").read_bytes()
    entry = _manifest(tmp_path / "store", "touche-2020-task1/test")["input/topics.xml"]
    assert entry["source"].startswith("irds:")
    (check,) = [c for c in store.verify(ds, show_progress=False) if c.target == "input/topics.xml"]
    assert check.ok and "through ir_datasets, which checks the archive's md5" in check.detail


def test_ir_datasets_log_lines_do_not_reach_the_users_error_output(irds_home, capfd):
    """ir_datasets gives each module a logger with its own stderr handler, level INFO and no
    propagation (0.6.3 log.py): its "[INFO] ..." and download-retry lines stood before our one-line
    error. While sharedtask calls it they are held back; outside, logging is as it was."""
    from sharedtask.data import irds

    with irds._quiet():
        import ir_datasets

        ir_datasets.log.easy("ir_datasets.util.download").warn("[WARN] download failed, retrying")
        print("a path ir_datasets prints on stdout")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    ir_datasets.log.easy("ir_datasets.test").info("visible again")
    assert "visible again" in capfd.readouterr().err
