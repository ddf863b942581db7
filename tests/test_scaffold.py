"""The participant scaffold: `sharedtask new-submission --task ID DIR`.

For every task (all four families) the scaffold is written, its run.py is executed
on the host with TIRA's environment variables pointing at the task's sample, and
the run it writes must pass the validator. One family's image is built on the base
image and run in the sandbox (marked docker).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest

from sharedtask.cli import main as cli_main
from sharedtask.findings import Severity
from sharedtask.formats import read_programs, read_run, read_topic_ids
from sharedtask import families
from sharedtask.scaffold import write_submission
from sharedtask.scaffold.writer import image_name, run_tag
from sharedtask.spec import Task, all_tasks, load_task
from sharedtask.validate import validate

FILES = {"run.py", "Dockerfile", ".dockerignore", "README.md", "tests/test_submission.py"}
LAYOUT = {"trec-run": "trec", "arqmath-task1-run": "arqmath-task1", "arqmath-task2-run": "arqmath-task2",
          "arqmath-task3-run": "arqmath-task3"}


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _sample_topics(task: Task) -> set[str]:
    entry = task.input.file("topics")
    return set(read_topic_ids(entry.format, task.sample_dir / "input" / entry.path))


def _run_on_sample(submission: Path, task: Task, out: Path) -> Path:
    """run.py as TIRA calls it: env variables only, from another working directory."""
    out.mkdir()
    env = dict(os.environ, inputDataset=str(task.sample_dir / "input"), outputDir=str(out))
    subprocess.run([sys.executable, str(submission / "run.py")], env=env, cwd=out.parent, check=True,
                   capture_output=True, text=True)
    return out / "run.txt"


def test_every_family_has_a_template() -> None:
    templates = files("sharedtask.scaffold") / "templates"
    missing = [f.name for f in families.REGISTRY.values() if not (templates / f"{f.template}.tmpl").is_file()]
    assert missing == []


@pytest.mark.parametrize("task_id", [t.id for t in all_tasks()])
def test_scaffold_run_py_writes_a_valid_run_on_the_sample(task_id: str, tmp_path: Path) -> None:
    task = load_task(task_id)
    if not (task.sample_dir / "input").is_dir():
        pytest.fail(f"the sample dataset of {task_id} is missing at {task.sample_dir}")
    sub = tmp_path / "my-submission"
    write_submission(task, sub)
    assert _files(sub) == FILES
    assert os.access(sub / "run.py", os.X_OK)
    for rel in FILES:
        assert "%%" not in (sub / rel).read_text(encoding="utf-8"), f"unfilled placeholder in {rel}"

    run_file = _run_on_sample(sub, task, tmp_path / "output")
    result = validate(run_file, task, input_dir=task.sample_dir / "input")
    errors = [(f.code, f.message) for f in result.findings if f.severity == Severity.ERROR]
    assert result.valid and not errors, errors
    assert not [f for f in result.findings if f.severity == Severity.WARNING], result.findings

    if task.output.format == "mathqa-programs":  # programs, one per problem in order
        programs = read_programs(run_file, read_topic_ids("mathqa-problems-jsonl", task.sample_dir / "input" /
                                                          "problems.jsonl"))
        assert programs.beam == 1 and set(programs.programs) == _sample_topics(task)
        return
    rows = list(read_run(run_file, layout=LAYOUT[task.output.format]))
    per_topic = Counter(r.topic for r in rows)
    assert set(per_topic) == _sample_topics(task)  # every sample topic answered
    assert max(per_topic.values()) <= task.output.max_results_per_topic
    assert {r.tag for r in rows} == {"my-submission"}
    if task.output.max_answer_chars:
        assert all(0 < len(r.answer or "") <= task.output.max_answer_chars for r in rows)


def test_run_is_deterministic(tmp_path: Path) -> None:
    task = load_task("arqmath-3-task2")
    write_submission(task, tmp_path / "sub")
    first = _run_on_sample(tmp_path / "sub", task, tmp_path / "a").read_bytes()
    second = _run_on_sample(tmp_path / "sub", task, tmp_path / "b").read_bytes()
    assert first == second and first


def test_run_py_takes_directories_as_arguments(tmp_path: Path) -> None:
    task = load_task("touche-2020-task1")
    write_submission(task, tmp_path / "sub", name="argsTeam")
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("inputDataset", "outputDir")}
    subprocess.run([sys.executable, str(tmp_path / "sub" / "run.py"), str(task.sample_dir / "input"), str(out)],
                   env=env, check=True, capture_output=True)
    assert {r.tag for r in read_run(out / "run.txt", layout="trec")} == {"argsTeam"}


def test_dockerfile_and_readme_follow_the_contract(tmp_path: Path) -> None:
    sub = write_submission("arqmath-3-task1", tmp_path / "x", name="Team A").files
    docker = sub["Dockerfile"]
    assert re.search(r"^ARG BASE_IMAGE=sharedtask/base:latest$", docker, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", docker, re.M)
    assert re.search(r"^COPY run\.py /app/run\.py$", docker, re.M)
    assert re.search(r'^ENTRYPOINT \["python3", "/app/run.py"\]$', docker, re.M)
    readme = sub["README.md"]
    for needle in ("docker build -t team-a:latest .", "sharedtask run --task arqmath-3-task1 --image team-a:latest",
                   "sharedtask validate --task arqmath-3-task1", "sharedtask evaluate --task arqmath-3-task1",
                   "tira-cli code-submission", "$inputDataset $outputDir", "task1-"):
        assert needle in readme, needle
    assert "tests/" in sub[".dockerignore"].split()


def test_names_become_valid_image_names_and_run_tags() -> None:
    assert image_name("My Team__v2!") == "my-team-v2:latest"
    assert image_name("???") == "submission:latest"
    assert run_tag("My Team/v2", r"[A-Za-z0-9_.+-]{1,100}") == "My-Team-v2"


def test_refuses_a_non_empty_directory_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "sub"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    (target / "run.py").write_text("old")
    code = cli_main(["new-submission", "--task", "touche-2021-task1", str(target)])
    err = capsys.readouterr().err
    assert code == 2
    assert "not empty" in err and "--force" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert (target / "run.py").read_text() == "old"

    assert cli_main(["new-submission", "--task", "touche-2021-task1", str(target), "--force"]) == 0
    assert (target / "notes.txt").read_text() == "mine"  # other files are kept
    assert "read_argsme_dir" in (target / "run.py").read_text()


def test_unknown_task_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["new-submission", "--task", "no-such-task", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "unknown task" in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()


def test_generated_host_test_passes(tmp_path: Path) -> None:
    """The scaffold's own tests/test_submission.py works (its host part; docker part below)."""
    sub = tmp_path / "qa"
    write_submission("arqmath-3-task3", sub)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
                           "-k", "run_py_on_the_sample"], cwd=sub, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


@pytest.mark.docker
def test_scaffold_image_builds_on_base_and_runs_in_sandbox(tmp_path: Path, docker_client, base_image: str) -> None:
    from sharedtask.sandbox import run

    task = load_task("touche-2021-task1")
    sub = tmp_path / "sandboxed"
    write_submission(task, sub)
    image = f"sharedtask-test/scaffold-{uuid.uuid4().hex[:8]}:latest"
    try:
        docker_client.images.build(path=str(sub), tag=image, buildargs={"BASE_IMAGE": base_image}, rm=True)
        outcome = run(task, image, output_dir=tmp_path / "output", record_dir=tmp_path / "record")
        assert outcome.result.status == "success", outcome.result.message
        assert outcome.result.exit_code == 0
        result = validate(tmp_path / "output" / "run.txt", task, input_dir=task.sample_dir / "input")
        assert result.valid, result.findings
        rows = list(read_run(tmp_path / "output" / "run.txt", layout="trec"))
        assert {r.topic for r in rows} == _sample_topics(task)

        # the scaffold's own test file, end to end (host run + build + sandbox)
        env = dict(os.environ, SUBMISSION_IMAGE=image, BASE_IMAGE=base_image)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                              cwd=sub, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "2 passed" in proc.stdout
    finally:
        try:
            docker_client.images.remove(image, force=True)
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass


REFERENCE_RUNS = Path(__file__).resolve().parents[1] / "baselines" / "reference-runs"


@pytest.mark.parametrize("task_id", [t.id for t in all_tasks() if t.rerank is not None])
def test_scaffolded_reranker_writes_a_run_without_warnings(task_id: str, tmp_path: Path) -> None:
    """The re-ranker scaffold on the sample, over the shipped lucene-bm25 first stage: the field
    test's scaffolded re-ranker got 45 warnings (float32 ties of sums that differ in float noise)."""
    task = load_task(task_id)
    first = sorted((REFERENCE_RUNS / task_id).glob("lucene-bm25*.txt"))[0]
    sub, stage, out = tmp_path / "rr", tmp_path / "stage", tmp_path / "output"
    write_submission(task, sub, rerank=True)
    subprocess.run([sys.executable, "-m", "sharedtask", "rerank-input", "--task", task_id, "--run", str(first),
                    "--output", str(stage), "--input", str(task.sample_dir / "input")], check=True, capture_output=True)
    out.mkdir()
    # TIREx hands the re-rank dataset over as $inputDataset (the stage folder with rerank.jsonl.gz)
    subprocess.run([sys.executable, str(sub / "run.py"), str(stage), str(out)], cwd=tmp_path, check=True,
                   capture_output=True)
    result = validate(out / "run.txt", task, input_dir=task.sample_dir / "input")
    assert result.valid and result.stats.data_lines > 0
    assert [f.code for f in result.findings if f.severity is Severity.WARNING] == []


@pytest.mark.parametrize("reference", sorted(REFERENCE_RUNS.glob("*/*.txt")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_baselines_reference_runs_validate_without_warnings(reference: Path, tmp_path: Path) -> None:
    """Each baseline's run as the pipeline validates it (output/run.txt, the sample's topics)."""
    task = load_task(reference.parent.name)
    run = tmp_path / "run.txt"
    run.write_bytes(reference.read_bytes())
    result = validate(run, task, input_dir=task.sample_dir / "input")
    warnings = [(f.code, f.message) for f in result.findings if f.severity is Severity.WARNING]
    assert warnings == []
    assert result.to_json()["counts"]["warning"] == 0  # none counted past a cap either
