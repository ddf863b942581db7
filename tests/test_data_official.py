"""The official ARQMath topics and qrels shipped with the package, through the registry.

Facts asserted come from the ARQMath-3 overview (judged topics per task and year; oracle
P′@10) and are recomputed here: topic counts by reading the organizers' files, oracle
scores by ``sharedtask evaluate`` and independently by pytrec_eval on a run the test
builds itself.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

import pytest
import pytrec_eval

from sharedtask.cli import main
from sharedtask.data import all_datasets, get_dataset, store

JUDGED = {  # ARQMath-3 overview, Table 1 (judged topics)
    "arqmath-1-task1/test": 77, "arqmath-2-task1/test": 71, "arqmath-3-task1/test": 78,
    "arqmath-1-task2/test": 45, "arqmath-2-task2/test": 58, "arqmath-3-task2/test": 76,
    "arqmath-3-task3/test": 78,
}


@pytest.fixture(autouse=True)
def data_store(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "store"
    monkeypatch.setenv("SHAREDTASK_DATA", str(root))
    return root


def _qrels_file(dataset_id: str) -> Path:
    ds = get_dataset(dataset_id)
    return next(f for f in ds.files if f.role == "truth" and f.path == "qrels.tsv").package_path()


def _raw_qrels(path: Path) -> dict[str, dict[str, int]]:
    """The qrels read with nothing but str.split (independent of our readers)."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text(encoding="ascii").splitlines():
        topic, _, doc, grade = line.split()
        out[topic][doc] = int(grade)
    return dict(out)


@pytest.mark.parametrize("dataset_id", sorted(JUDGED))
def test_judged_topics_match_the_overview(dataset_id):
    ds = get_dataset(dataset_id)
    assert ds.judged_topics == JUDGED[dataset_id]
    assert len(_raw_qrels(_qrels_file(dataset_id))) == JUDGED[dataset_id]


def test_shipped_files_are_the_registered_bytes():
    for ds in all_datasets().values():
        for f in ds.files:
            if f.package:
                data = f.package_path().read_bytes()
                assert hashlib.sha256(data).hexdigest() == f.sha256, f.package
                assert len(data) == f.size
                if f.role == "truth":
                    assert data.count(b"\r\n") == data.count(b"\n")  # the organizers' CRLF kept


def _oracle_task1(qrels: dict[str, dict[str, int]], path: Path) -> None:
    """Every judged post, best grade first (ties by id): the ideal ranking."""
    with path.open("w") as out:
        for topic, docs in qrels.items():
            ranked = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
            for rank, (doc, _) in enumerate(ranked[:1000], 1):
                out.write(f"{topic}\t{doc}\t{rank}\t{1000 - rank}\toracle\n")


def _pytrec_mean(qrels, run, measure: str, level: int) -> float:
    ev = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=level)
    values = [v[measure] for v in ev.evaluate(run).values()]
    return sum(values) / len(values)


def _evaluate_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main(["evaluate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_oracle_task1_arqmath3_p10_is_095_without_a_qrels_argument(tmp_path, capsys):
    qrels = _raw_qrels(_qrels_file("arqmath-3-task1/test"))
    run = tmp_path / "oracle.tsv"
    _oracle_task1(qrels, run)
    result = _evaluate_json(capsys, str(run), "--task", "arqmath-3-task1")
    assert round(result["scores"]["p10_prime"], 2) == 0.95
    assert any("qrels.arqmath-2022-task1-official.txt" in n for n in result["notes"])
    # independently: pytrec_eval on the same ranking (all judged, so prime = run)
    trec_run = {t: {d: float(1000 - i) for i, (d, _) in enumerate(sorted(docs.items(), key=lambda kv: (-kv[1], kv[0])))}
                for t, docs in qrels.items()}
    assert _pytrec_mean(qrels, trec_run, "P_10", 2) == pytest.approx(result["scores"]["p10_prime"], abs=1e-9)


def test_oracle_task2_arqmath3_p10_is_093_by_visual_id(tmp_path, capsys):
    qrels = _raw_qrels(_qrels_file("arqmath-3-task2/test"))
    # a formula index where each formula id is its own visual id: the run names visual ids
    index = tmp_path / "input" / "formulas"
    index.mkdir(parents=True)
    run = tmp_path / "oracle2.tsv"
    with (index / "1.tsv").open("w") as idx, run.open("w") as out:
        idx.write("id\tpost_id\tthread_id\ttype\tcomment_id\told_visual_id\tvisual_id\tissue\tformula\n")
        for topic, docs in qrels.items():
            ranked = sorted(docs.items(), key=lambda kv: (-kv[1], int(kv[0])))
            for rank, (vid, _) in enumerate(ranked[:1000], 1):
                out.write(f"{topic}\t{vid}\t7\t{rank}\t{1000 - rank}\toracle\n")
        for vid in sorted({v for docs in qrels.values() for v in docs}, key=int):
            idx.write(f"{vid}\t7\t7\tanswer\t\t{vid}\t{vid}\t\tx\n")
    result = _evaluate_json(capsys, str(run), "--task", "arqmath-3-task2", "--input", str(tmp_path / "input"))
    assert round(result["scores"]["p10_prime"], 2) == 0.93
    trec_run = {t: {v: float(1000 - i) for i, (v, _) in enumerate(sorted(d.items(), key=lambda kv: (-kv[1], int(kv[0]))))}
                for t, d in qrels.items()}
    assert _pytrec_mean(qrels, trec_run, "P_10", 2) == pytest.approx(result["scores"]["p10_prime"], abs=1e-9)


def test_arqmath2_task1_on_official_qrels_equals_trec_eval(tmp_path, capsys):
    """An imperfect run (judged posts in a scrambled order, unjudged posts between them):
    the evaluator's prime measures equal pytrec_eval on the run with unjudged posts removed."""
    qrels = _raw_qrels(_qrels_file("arqmath-2-task1/test"))
    run_path = tmp_path / "run.tsv"
    run: dict[str, dict[str, float]] = {}
    with run_path.open("w") as out:
        for n, (topic, docs) in enumerate(sorted(qrels.items())):
            if n % 10 == 3:
                continue  # a topic the run misses: it drops out of the mean (no -c)
            ranked = sorted(docs, key=lambda d: hashlib.md5(f"{topic}{d}".encode()).hexdigest())[:40]
            lines = []
            for i, doc in enumerate(ranked):
                lines.append(doc)
                if i % 3 == 0:
                    lines.append(f"9{i:08d}")  # never judged
            for rank, doc in enumerate(lines, 1):
                out.write(f"{topic}\t{doc}\t{rank}\t{100 - rank * 0.5}\tmine\n")
                if doc in docs:
                    run.setdefault(topic, {})[doc] = 100 - rank * 0.5
    result = _evaluate_json(capsys, str(run_path), "--task", "arqmath-2-task1")
    scores = result["scores"]
    assert scores["ndcg_prime"] == pytest.approx(_pytrec_mean(qrels, run, "ndcg", 1), abs=1e-9)
    assert scores["map_prime"] == pytest.approx(_pytrec_mean(qrels, run, "map", 2), abs=1e-9)
    assert scores["p10_prime"] == pytest.approx(_pytrec_mean(qrels, run, "P_10", 2), abs=1e-9)
    assert 0.01 < scores["ndcg_prime"] < 0.99  # neither empty nor perfect (40 judged posts of ~450)


def test_evaluate_refuses_a_dataset_of_another_task(tmp_path, capsys):
    run = tmp_path / "r.tsv"
    run.write_text("A.301\t1\t1\t1\tx\n")
    assert main(["evaluate", str(run), "--task", "arqmath-3-task1", "--dataset", "arqmath-2-task1/test"]) == 2
    assert "belongs to task arqmath-2-task1" in capsys.readouterr().err


def test_import_assembles_a_folder_check_input_accepts_and_verify_sees_a_change(tmp_path, capsys, repo_root):
    release = tmp_path / "release"
    release.mkdir()
    # a stand-in for the 3 GB collection: the bundled sample's Posts.xml under the release's name
    (release / "Posts.V1.3.xml").write_bytes((repo_root / "tasks/samples/arqmath-task1/input/Posts.xml").read_bytes())
    assert main(["data", "import", "arqmath-3-task1/test", "--from", str(release)]) == 0
    capsys.readouterr()
    assert main(["data", "path", "arqmath-3-task1/test", "--input"]) == 0
    input_dir = Path(capsys.readouterr().out.strip())
    assert (input_dir / "topics.xml").read_bytes() == _qrels_file("arqmath-3-task1/test").with_name(
        "topics.arqmath-2022-task1-or-task3-origin.xml").read_bytes()
    assert main(["check-input", "--task", "arqmath-3-task1", str(input_dir)]) == 0
    assert main(["data", "verify", "arqmath-3-task1/test"]) == 0
    with (input_dir / "Posts.xml").open("ab") as fh:
        fh.write(b"\n")
    capsys.readouterr()
    assert main(["data", "verify", "arqmath-3-task1/test", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    bad = [f for f in report["files"] if not f["ok"]]
    assert [f["path"] for f in bad] == ["input/Posts.xml"] and "changed" in bad[0]["detail"]


def test_path_of_an_incomplete_dataset_says_how_to_complete_it(capsys):
    assert main(["data", "path", "arqmath-3-task1/test"]) == 2
    err = capsys.readouterr().err
    assert "input/Posts.xml missing" in err and "data import arqmath-3-task1/test" in err
    assert main(["data", "show", "arqmath-9-task1/test"]) == 2
    assert "unknown dataset" in capsys.readouterr().err


def test_run_and_demo_take_a_registry_dataset_by_name(tmp_path, capsys, repo_root):
    assert main(["run", "--task", "arqmath-3-task1", "--image", "x", "--dataset", "test"]) == 2
    err = capsys.readouterr().err
    assert "lacks input/Posts.xml" in err and "data import arqmath-3-task1/test" in err
    release = tmp_path / "release"
    release.mkdir()
    (release / "Posts.V1.3.xml").write_bytes((repo_root / "tasks/samples/arqmath-task1/input/Posts.xml").read_bytes())
    assert main(["data", "import", "arqmath-3-task1/test", "--from", str(release)]) == 0
    from sharedtask.manifest import load_manifest
    from sharedtask.spec import load_task

    dataset = load_manifest().dataset(load_task("arqmath-3-task1"), "test")  # what demo --dataset test uses
    assert dataset.name == "arqmath-3-task1/test"
    assert (dataset.input_dir / "topics.xml").is_file() and any(dataset.truth_dir.iterdir())


def _refused_registry(tmp_path: Path, monkeypatch, repo_root: Path, name: str, old: str, new: str,
                      match: str) -> None:
    """A copy of tasks/ whose registry file ``name`` has ``old`` replaced by ``new`` is refused
    on load with an error matching ``match``."""
    import shutil

    from sharedtask.data import registry
    from sharedtask.errors import SpecError

    tasks = tmp_path / "tasks"
    shutil.copytree(repo_root / "tasks", tasks)
    bad = tasks / "datasets" / name
    bad.write_text(bad.read_text().replace(old, new, 1))
    monkeypatch.setenv("SHAREDTASK_TASKS", str(tasks))
    registry.all_datasets.cache_clear()
    registry._schema.cache_clear()
    try:
        with pytest.raises(SpecError, match=match):
            registry.all_datasets()
    finally:
        registry.all_datasets.cache_clear()
        registry._schema.cache_clear()


def test_registry_errors_name_the_file_and_the_path(tmp_path, monkeypatch, repo_root):
    _refused_registry(tmp_path, monkeypatch, repo_root, "arqmath.yml", "sha256: 16b09495", "sha256: 16b0949X",
                      r"arqmath\.yml: datasets\.arqmath-3-task1/test\.files\[1\]\.sha256")


def test_an_irds_file_with_an_archive_url_needs_its_member_and_md5(tmp_path, monkeypatch, repo_root):
    """irds: with url: names the organizers' archive ir_datasets extracts the file from: without the
    member (extract) and the archive's md5 there would be nothing to check, so the schema refuses it."""
    _refused_registry(tmp_path, monkeypatch, repo_root, "touche.yml", "extract: topics-task-1.xml,", "",
                      r"touche\.yml: datasets\.touche-2020-task1/test\.files\[0\]")


# --- placed official truth is re-checked at every evaluation (issue 27, point 4) ----------------

def _one_line_refusal(err: str, path: Path, dataset_id: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    joined = " ".join(err.split())  # rich may wrap the one line at the terminal's width
    assert str(path) in joined.replace(" ", "") or str(path) in joined
    assert f"sharedtask data verify {dataset_id}" in joined and "changed" in joined


def test_evaluate_refuses_an_edited_placed_qrels(tmp_path, capsys):
    qrels = _raw_qrels(_qrels_file("arqmath-3-task1/test"))
    run = tmp_path / "oracle.tsv"
    _oracle_task1(qrels, run)
    before = _evaluate_json(capsys, str(run), "--task", "arqmath-3-task1")
    placed = store.dataset_dir(get_dataset("arqmath-3-task1/test")) / "truth" / "qrels.tsv"
    registry_sha = get_dataset("arqmath-3-task1/test").file("truth/qrels.tsv").sha256
    assert any(registry_sha[:16] in n for n in before["notes"])
    original = placed.read_bytes()
    placed.write_bytes(original.replace(b"\t3\r\n", b"\t0\r\n", 50))  # 50 grades lowered, size unchanged
    capsys.readouterr()
    for argv in (["--task", "arqmath-3-task1"], ["--task", "arqmath-3-task1", "--dataset", "arqmath-3-task1/test"],
                 ["--task", "arqmath-3-task1", "--truth", str(placed.parent)]):
        assert main(["evaluate", str(run), *argv]) == 2
        _one_line_refusal(capsys.readouterr().err, placed, "arqmath-3-task1/test")
    from sharedtask.evaluate import evaluate as api_evaluate  # the demo and the service score through it

    with pytest.raises(store.SharedTaskError, match="has changed since it was placed"):
        api_evaluate(run, "arqmath-3-task1", truth_dir=placed.parent)
    with pytest.raises(store.SharedTaskError, match="has changed since it was placed"):
        api_evaluate(run, "arqmath-3-task1", qrels=placed)
    placed.write_bytes(original)  # the official bytes again: scored as before
    assert _evaluate_json(capsys, str(run), "--task", "arqmath-3-task1")["scores"] == before["scores"]


def test_a_large_truth_file_is_checked_by_its_stamp_and_rehashed_when_it_changes(tmp_path, monkeypatch):
    """Above FULL_HASH_MAX a file is hashed once and then trusted while size, mtime, ctime and
    inode hold; an edit that keeps the size and puts the mtime back still changes the ctime."""
    import os

    ds = get_dataset("arqmath-3-task1/test")
    assert store.assemble(ds, roles=("truth",), show_progress=False) == []
    monkeypatch.setattr(store, "FULL_HASH_MAX", 0)
    calls: list[Path] = []
    real = store.checksum.sha256
    monkeypatch.setattr(store.checksum, "sha256", lambda p: calls.append(p) or real(p))
    assert store.check_truth(ds) == {"truth/qrels.tsv": ds.file("truth/qrels.tsv").sha256}
    assert len(calls) == 1
    store.check_truth(ds)
    assert len(calls) == 1  # the stamp held: no hash
    placed = store.dataset_dir(ds) / "truth" / "qrels.tsv"
    st = placed.stat()
    data = bytearray(placed.read_bytes())
    data[-3:-2] = b"9" if data[-3:-2] != b"9" else b"8"
    placed.write_bytes(bytes(data))
    os.utime(placed, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(store.SharedTaskError, match="has changed since it was placed"):
        store.check_truth(ds)
    assert len(calls) == 2


def test_a_large_truth_file_placed_just_now_is_not_hashed_again(monkeypatch):
    """Placing a file hashes it already: its stamp is recorded then, so the first evaluation
    after an import of the (multi-GB) Task 2 formula index does not read it a second time."""
    ds = get_dataset("arqmath-3-task1/test")
    monkeypatch.setattr(store, "FULL_HASH_MAX", 0)
    assert store.assemble(ds, roles=("truth",), show_progress=False) == []
    calls: list[Path] = []
    real = store.checksum.sha256
    monkeypatch.setattr(store.checksum, "sha256", lambda p: calls.append(p) or real(p))
    assert store.check_truth(ds) == {"truth/qrels.tsv": ds.file("truth/qrels.tsv").sha256}
    assert calls == []
