"""The MathQA suite's files through the dataset registry (tasks/datasets/mathqa.yml): import
from a local copy with the registry's sha256 checked, verify, and ``sharedtask evaluate``
finding the truth there (no --truth). Real files: the suite's own, copied into tmp at test
time (tests/mathqa_suite.py says from where; skipped without them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sharedtask.cli import main as cli_main
from sharedtask.data import get_dataset, store
import mathqa_suite


@pytest.fixture()
def data_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    return tmp_path / "store"


def test_the_registry_names_the_suite_s_files_by_checksum() -> None:
    ds = get_dataset("mathqa-test/test")
    assert ds.official and ds.task == "mathqa-test" and ds.judged_topics == 2975
    assert [(f.target, f.origin, f.source) for f in ds.files] == [
        ("truth/gold.json", "test.json", "import"), ("truth/broken.txt", "test_broken.txt", "import"),
        ("input/problems.jsonl", None, "derived")]
    assert all(f.sha256 and len(f.sha256) == 64 for f in ds.files)
    assert all(f"@{mathqa_suite.COMMIT[:7]} " in f.description for f in ds.role("truth"))  # provenance: the commit
    assert ds.file("input/problems.jsonl").derive == "truth/gold.json"
    assert get_dataset("mathqa-challenge/test").judged_topics == 601


def test_evaluate_without_imported_truth_says_how_to_import(data_store: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run.txt"
    run.write_text("add(n0,n1)|\n", encoding="utf-8")
    assert cli_main(["evaluate", str(run), "--task", "mathqa-test"]) == 2
    err = capsys.readouterr().err
    assert "not imported" in err and "sharedtask data import mathqa-test/test --from DIR" in err and "Traceback" not in err
    assert cli_main(["evaluate", str(run), "--task", "mathqa-test", "--dataset", "mathqa-test/test"]) == 2
    assert "lacks truth/gold.json" in capsys.readouterr().err


@pytest.mark.parametrize(("dataset", "gold", "correct", "total"), [
    ("mathqa-test/test", "test.json", 2035, 2975),  # the suite's notebook: "Correct: 2035, total: 2975"
    ("mathqa-challenge/test", "challenge_test.json", 435, 601),  # "Correct: 435, total: 601"
])
def test_import_verify_and_evaluate_through_the_registry(data_store: Path, tmp_path: Path, capsys, dataset: str,
                                                         gold: str, correct: int, total: int) -> None:
    suite = mathqa_suite.copy_to(tmp_path / "mathqa-evaluation" / "data")
    assert cli_main(["data", "import", dataset, "--from", str(suite)]) == 0
    assert cli_main(["data", "verify", dataset]) == 0
    capsys.readouterr()
    run = tmp_path / "gold-programs.txt"
    run.write_text("".join(p["linear_formula"] + "\n" for p in json.loads((suite / gold).read_text(encoding="utf-8"))),
                   encoding="utf-8")
    task = dataset.split("/")[0]
    assert cli_main(["evaluate", str(run), "--task", task, "--json"]) == 0  # no --truth: the registry's
    out = json.loads(capsys.readouterr().out)
    result = out[0] if isinstance(out, list) else out
    assert result["topics_averaged"]["mathqa_published"] == total
    assert round(result["scores"]["mathqa_published"] * total) == correct
    assert any(n.startswith(f"truth: {dataset} official gold.json") for n in result["notes"])


def test_a_changed_file_is_refused_at_import_and_found_by_verify(data_store: Path, tmp_path: Path, capsys) -> None:
    suite = mathqa_suite.copy_to(tmp_path / "data")
    good = (suite / "test_broken.txt").read_bytes()
    (suite / "test_broken.txt").write_bytes(good.replace(b"457", b"458"))
    assert cli_main(["data", "import", "mathqa-test/test", "--from", str(suite)]) == 2
    assert "sha256" in capsys.readouterr().err
    folder = store.dataset_dir(get_dataset("mathqa-test/test"))
    assert not (folder / "truth" / "broken.txt").exists()  # nothing half-written left behind
    assert not list(folder.rglob("*.part"))
    (suite / "test_broken.txt").write_bytes(good)
    assert cli_main(["data", "import", "mathqa-test/test", "--from", str(suite)]) == 0
    (folder / "truth" / "broken.txt").write_bytes(good + b"1\n")  # changed after the import
    assert cli_main(["data", "verify", "mathqa-test/test"]) == 1


def test_evaluate_refuses_an_edited_imported_gold(data_store: Path, tmp_path: Path, capsys) -> None:
    """Issue 27, point 4: 50 gold letters changed after the import; evaluate refuses the file
    (one line naming it and `sharedtask data verify`) instead of scoring against it."""
    suite = mathqa_suite.copy_to(tmp_path / "data")
    assert cli_main(["data", "import", "mathqa-challenge/test", "--from", str(suite)]) == 0
    problems = json.loads((suite / "challenge_test.json").read_text(encoding="utf-8"))
    run = tmp_path / "run.txt"
    run.write_text("".join(p["linear_formula"] + "\n" for p in problems), encoding="utf-8")
    gold = store.dataset_dir(get_dataset("mathqa-challenge/test")) / "truth" / "gold.json"
    for p in problems[:50]:
        p["correct"] = "e" if p["correct"] != "e" else "a"
    gold.write_text(json.dumps(problems), encoding="utf-8")
    capsys.readouterr()
    assert cli_main(["evaluate", str(run), "--task", "mathqa-challenge"]) == 2
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if line.strip()]) == 1 and "Traceback" not in err
    flat = "".join(err.split())
    assert str(gold).replace(" ", "") in flat and "sharedtaskdataverifymathqa-challenge/test" in flat


@pytest.mark.parametrize(("dataset", "gold", "problems"), [("mathqa-test/test", "test.json", 2985),
                                                          ("mathqa-challenge/test", "challenge_test.json", 604)])
def test_the_official_sets_get_an_input_and_validate_accepts_line_runs(data_store: Path, tmp_path: Path, capsys,
                                                                       dataset: str, gold: str, problems: int) -> None:
    """Issue 27: the suite publishes no input; problems.jsonl is built from its JSON at import (sha256
    pinned), so `validate --input` reads a one-program-per-line run against the official set."""
    suite = mathqa_suite.copy_to(tmp_path / "data")
    assert cli_main(["data", "import", dataset, "--from", str(suite)]) == 0
    assert cli_main(["data", "verify", dataset]) == 0
    capsys.readouterr()
    assert cli_main(["data", "path", dataset, "--input"]) == 0
    input_dir = Path(capsys.readouterr().out.strip())
    lines = (input_dir / "problems.jsonl").read_text(encoding="utf-8").splitlines()
    source = json.loads((suite / gold).read_text(encoding="utf-8"))
    assert len(lines) == len(source) == problems
    first = json.loads(lines[0])
    assert first == {"id": "1", "problem": source[0]["Problem"], "options": source[0]["options"]}
    run = tmp_path / "run.txt"
    run.write_text("".join(p["linear_formula"] + "\n" for p in source), encoding="utf-8")
    task = dataset.split("/")[0]
    assert cli_main(["validate", str(run), "--task", task, "--input", str(input_dir), "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    codes = {f["code"] for f in report.get("findings", [])}
    assert "RUN-PROGRAM-FILE" not in codes  # the line form is read: the input says which line is whose
    assert report["stats"]["topics_expected"] == problems
