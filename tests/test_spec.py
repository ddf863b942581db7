"""Task specs: the catalogue loads, validates, and broken specs get one-line errors."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.errors import SpecError, UnknownTaskError
from sharedtask.spec import all_tasks, load_task, load_task_file, tasks_dir

# A task is one YAML file named after its id: the expected catalogue is the folder's listing,
# so adding a task needs no change here.
EXPECTED_IDS = {p.stem for p in (Path(__file__).resolve().parent.parent / "tasks").glob("*.yml")}


def test_catalogue_is_one_task_per_yaml_file() -> None:
    assert len(EXPECTED_IDS) >= 9  # the shipped ARQMath and Touché tasks at least
    assert {t.id for t in all_tasks()} == EXPECTED_IDS


def test_contracts_follow_the_reference() -> None:
    # Values from docs/formats.md, not from our YAML.
    t1 = load_task("arqmath-3-task1")
    assert t1.output.format == "arqmath-task1-run"
    assert t1.output.max_results_per_topic == 1000
    assert t1.truth.relevant_threshold == 2
    assert t1.primary_measure.id == "ndcg_prime"
    assert t1.output.pattern("topic").fullmatch("A.301")
    assert not t1.output.pattern("topic").fullmatch("B.301")
    t3 = load_task("arqmath-3-task3")
    assert t3.output.max_answer_chars == 1200
    assert t3.output.max_results_per_topic == 1
    assert re.fullmatch(t3.output.file_name_pattern, "DPRL-task3-run1-auto-both-extract-P.tsv")
    touche = load_task("touche-2021-task1")
    assert touche.output.pattern("document").fullmatch("Sb38112c8-A443a9828")
    assert not touche.output.pattern("document").fullmatch("Sb38112c8-A443a982")
    assert {m.qrels_role for m in touche.measures} == {"relevance", "quality"}
    assert touche.primary_measure.key == "ndcg5_official"
    assert len({m.key for m in touche.measures}) == len(touche.measures)
    assert load_task("touche-2020-task1").truth.file("relevance").min_rel == -2


def test_bases_are_shared_not_copied() -> None:
    # Nine tasks, but the contracts live once per lab/family.
    a1, a3 = load_task("arqmath-1-task1"), load_task("arqmath-3-task1")
    assert a1.input == a3.input and a1.output == a3.output and a1.measures == a3.measures
    assert a1.year == 2020 and a3.year == 2022


def test_unknown_task_lists_known_ones() -> None:
    with pytest.raises(UnknownTaskError, match="known tasks: arqmath-1-task1"):
        load_task("arqmath-4-task1")


def _copy_tasks(tmp_path: Path) -> Path:
    dest = tmp_path / "tasks"
    shutil.copytree(tasks_dir(), dest, ignore=shutil.ignore_patterns("samples"))
    return dest


def test_broken_value_names_file_and_path(tmp_path: Path) -> None:
    tasks = _copy_tasks(tmp_path)
    spec = tasks / "touche-2020-task1.yml"
    spec.write_text(spec.read_text().replace("year: 2020", "year: twenty"))
    with pytest.raises(SpecError) as exc:
        load_task_file(spec)
    msg = str(exc.value)
    assert "\n" not in msg
    assert str(spec) in msg and "year" in msg and "'twenty' is not of type 'integer'" in msg


def test_broken_value_in_base_blames_the_base(tmp_path: Path) -> None:
    tasks = _copy_tasks(tmp_path)
    base = tasks / "_base" / "arqmath-task1.yml"
    base.write_text(base.read_text().replace("max_results_per_topic: 1000", "max_results_per_topic: -5"))
    with pytest.raises(SpecError) as exc:
        load_task_file(tasks / "arqmath-2-task1.yml")
    msg = str(exc.value)
    assert str(base) in msg and "output.max_results_per_topic" in msg and "-5" in msg


def test_missing_key_and_bad_enum(tmp_path: Path) -> None:
    tasks = _copy_tasks(tmp_path)
    spec = tasks / "arqmath-3-task3.yml"
    spec.write_text(spec.read_text().replace("format: arqmath-task3-run", "format: csv"))
    with pytest.raises(SpecError, match=r"output\.format: 'csv' is not one of"):
        load_task_file(spec)
    spec.write_text("id: arqmath-3-task3\n")
    with pytest.raises(SpecError, match=r"\(top level\): 'title' is a required property"):
        load_task_file(spec)


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yml"
    spec.write_text("id: broken\ntitle: [unclosed\nlab: ARQMath\n")
    with pytest.raises(SpecError, match=r"broken\.yml:\d+:\d+: invalid YAML"):
        load_task_file(spec)


def test_extends_cycle_and_missing_base(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("extends: b.yml\n")
    (tmp_path / "b.yml").write_text("extends: a.yml\n")
    with pytest.raises(SpecError, match="cycle"):
        load_task_file(tmp_path / "a.yml")
    (tmp_path / "c.yml").write_text("extends: nowhere.yml\n")
    with pytest.raises(SpecError, match="'nowhere.yml' does not exist"):
        load_task_file(tmp_path / "c.yml")


def test_id_must_match_file_name(tmp_path: Path) -> None:
    tasks = _copy_tasks(tmp_path)
    (tasks / "touche-2020-task1.yml").rename(tasks / "touche-2099-task1.yml")
    with pytest.raises(SpecError, match="must equal the file name"):
        load_task_file(tasks / "touche-2099-task1.yml")


def test_cli_lists_and_shows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "--json"]) == 0
    out = capsys.readouterr().out
    assert all(task_id in out for task_id in EXPECTED_IDS)
    assert main(["tasks", "show", "arqmath-3-task2"]) == 0
    out = capsys.readouterr().out
    assert "formulas/*.tsv" in out and "nDCG′" in out and "B\\.[0-9]+" in out


def test_cli_unknown_task_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "show", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown task 'nope'") and "Traceback" not in err


def test_schema_check_is_remembered_by_content_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tasks = _copy_tasks(tmp_path)
    spec = tasks / "touche-2020-task1.yml"
    load_task_file(spec)  # checked with jsonschema, digest remembered
    assert (tmp_path / "cache" / "sharedtask" / "valid-specs.txt").is_file()
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # any import of jsonschema now fails
    assert load_task_file(spec).id == "touche-2020-task1"  # same content: no jsonschema needed
    spec.write_text(spec.read_text().replace("year: 2020", "year: 2019"))
    with pytest.raises(ImportError):  # new content: the schema check runs again
        load_task_file(spec)


def test_adding_a_task_is_one_yaml_file(tmp_path: Path) -> None:
    """A new task over existing formats: one YAML file in a copy of the catalogue, no code.

    The new task reuses the Touché 2021 sample; it must list, show, validate and evaluate
    exactly like the task it was copied from (run as a user would: the CLI in a new process).
    """
    import os
    import subprocess
    import sys

    tasks = tmp_path / "tasks"
    shutil.copytree(tasks_dir(), tasks, ignore=shutil.ignore_patterns("samples"))
    (tasks / "samples").symlink_to(tasks_dir() / "samples", target_is_directory=True)
    (tasks / "mylab-2026-args.yml").write_text(
        "id: mylab-2026-args\n"
        "extends: _base/touche.yml\n"
        'title: "My lab 2026: argument retrieval on args.me"\n'
        "description: Retrieve arguments for controversial questions (a copy of Touché 2021).\n"
        "year: 2026\n"
        "edition: My lab 2026\n"
        'topics: {first: "51", last: "56", count: 6, judged: 5}\n'
        "truth:\n"
        "  relevant_threshold: 1\n"
        "  files:\n"
        "    - {path: qrels.txt, format: trec-qrels, role: relevance, min_rel: -2, max_rel: 3}\n"
        "measures:\n"
        "  - {id: ndcg5_official, label: nDCG@5, procedure: touche-official, primary: true, official: true,"
        " qrels_role: relevance}\n"
        "sample: touche-2021\n"
    )
    env = {**os.environ, "SHAREDTASK_TASKS": str(tasks), "SHAREDTASK_NO_CACHE": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sharedtask", *args], env=env, capture_output=True, text=True)

    listing = cli("tasks")
    assert listing.returncode == 0 and "mylab-2026-args" in listing.stdout
    sample = tasks_dir() / "samples" / "touche-2021"
    run = tmp_path / "run.txt"
    qrels = [line.split() for line in (sample / "truth" / "qrels.txt").read_text().splitlines()]
    # every judged document of every topic in a seeded shuffled order (nDCG@5 neither 0 nor 1)
    import random

    by_topic: dict[str, list[str]] = {}
    for topic, _, doc, _rel in qrels:
        by_topic.setdefault(topic, []).append(doc)
    for docs in by_topic.values():
        random.Random(7).shuffle(docs)
    run.write_text("".join(f"{t} Q0 {d} {r} {100 - r} mine\n" for t, docs in by_topic.items()
                           for r, d in enumerate(docs, start=1)))
    ours = cli("evaluate", str(run), "--task", "mylab-2026-args", "--truth", str(sample / "truth"), "--json")
    theirs = cli("evaluate", str(run), "--task", "touche-2021-task1", "--truth", str(sample / "truth"), "--json")
    assert ours.returncode == 0, ours.stderr
    import json

    mine, copied = json.loads(ours.stdout)["scores"], json.loads(theirs.stdout)["scores"]
    assert 0 < mine["ndcg5_official"] < 1
    assert mine["ndcg5_official"] == copied["ndcg5_official"]


def test_a_near_miss_is_suggested_before_the_list():
    """A typo, a wrong case or a short form gets "did you mean"; a far-off name only the list."""
    from sharedtask.errors import choices_hint

    known = ["touche-2021-task1", "arqmath-3-task1", "ndcg_prime"]
    assert choices_hint("touche-2021-tsak1", known, "tasks").startswith("did you mean 'touche-2021-task1'? known tasks: ")
    assert choices_hint("ARQMATH-3-TASK1", known, "tasks").startswith("did you mean 'arqmath-3-task1'?")
    assert choices_hint("ndcg", known, "measures").startswith("did you mean 'ndcg_prime'?")
    assert choices_hint("bm25", known, "x") == "known x: touche-2021-task1, arqmath-3-task1, ndcg_prime"
    assert choices_hint("x", [], "datasets") == "known datasets: none"
