"""The command line as a user meets it: complete help, and mistakes that end in one line.

Every case runs the installed ``sharedtask`` console script in a subprocess (the real
entry point, its exit code and its stderr), from an empty working directory.

- ``--help`` of the program, of every subcommand and of the nested ones (``tasks
  show``, ``baseline list|build|run``) exits 0 and names every option with its help
  text; the parsers are walked, so a new option without help fails here.
- A user mistake (unknown task for every command that takes one, a missing or wrong
  file or folder, an image that does not exist, Docker not running, a malformed
  manifest or submissions file) exits 2 with exactly one line on stderr, starting with
  ``error:`` and saying what is wrong, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sharedtask.cli import build_parser
from sharedtask.spec import load_task

SHAREDTASK = Path(sys.executable).parent / "sharedtask"
if not SHAREDTASK.exists():  # e.g. a system-wide install
    SHAREDTASK = Path(shutil.which("sharedtask") or "sharedtask")

TASK = "touche-2021-task1"
NO_DOCKER = "unix:///nonexistent/sharedtask-test/docker.sock"


def cli(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run([str(SHAREDTASK), *map(str, args)], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=300)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, one ``error:`` line on stderr naming the problem, no traceback."""
    err = proc.stderr
    assert "Traceback" not in err, err
    assert proc.returncode == 2, (proc.returncode, err, proc.stdout[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def assert_usage_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """argparse's own mistakes: exit 2, usage plus one error line, no traceback."""
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.stderr.startswith("usage: sharedtask") and ": error: " in last, proc.stderr
    for needle in needles:
        assert needle in last, (needle, last)


# ---------------------------------------------------------------- help


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PARSERS = dict(_parsers(build_parser()))


def test_every_listed_subcommand_and_the_nested_ones_are_walked() -> None:
    names = {path for path in PARSERS if path}
    for expected in [("tasks",), ("tasks", "show"), ("sample",), ("check-input",), ("validate",), ("run",),
                     ("evaluate",), ("baseline",), ("baseline", "list"), ("baseline", "build"),
                     ("baseline", "run"), ("demo",), ("new-submission",), ("docker-doctor",)]:
        assert expected in names


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("path", sorted(PARSERS), ids=lambda p: " ".join(p) or "sharedtask")
def test_help_is_complete(path: tuple[str, ...], tmp_path: Path) -> None:
    proc = cli(*path, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert out.startswith(f"usage: {' '.join(('sharedtask', *path))}")
    flat = _words(out)
    for action in PARSERS[path]._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:  # each subcommand with its one-line help
                assert choice.dest in out and choice.help, choice.dest
                assert _words(choice.help) in flat, choice.help
            continue
        for old in getattr(action, "renamed_from", ()):  # an older name, hidden on purpose
            assert f"{old} " not in out and f"{old}\n" not in out and f"{old}," not in out, (path, old)
        assert action.help and action.help != argparse.SUPPRESS, (path, action.dest)
        names = action.option_strings or [action.metavar or action.dest]
        for name in names:
            assert name in out, (path, name)
        assert _words(action.help % {"default": action.default, "prog": ""}) in flat, (path, action.help)


def test_no_command_prints_the_help_and_exits_2(tmp_path: Path) -> None:
    proc = cli(cwd=tmp_path)
    assert proc.returncode == 2
    assert "COMMAND" in proc.stdout and "docker-doctor" in proc.stdout


def test_version(tmp_path: Path) -> None:
    proc = cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("sharedtask ")


# ---------------------------------------------------------------- unknown task


def _sample(tmp_path: Path) -> Path:
    """A copy of the task's sample dataset (input/ and truth/) and a small valid run."""
    root = tmp_path / "sample"
    shutil.copytree(load_task(TASK).sample_dir, root)
    topics = ["51", "52", "53"]
    docs = [line.split()[2] for line in (root / "truth" / "qrels.txt").read_text().splitlines()[:5]]
    rows = [f"{t} Q0 {d} {r} {10 - r}.0 test" for t in topics for r, d in enumerate(docs, 1)]
    (root / "run.txt").write_text("\n".join(rows) + "\n")
    return root


#: argv of every command that takes a task id; TASK_ID is replaced by the unknown id
UNKNOWN_TASK_ARGV: dict[tuple[str, ...], list[str]] = {
    ("tasks", "show"): ["tasks", "show", "TASK_ID"],
    ("sample",): ["sample", "TASK_ID", "new-folder"],
    ("check-input",): ["check-input", "--task", "TASK_ID", "SAMPLE/input"],
    ("validate",): ["validate", "SAMPLE/run.txt", "--task", "TASK_ID"],
    ("run",): ["run", "--task", "TASK_ID", "--image", "does-not-exist:1"],
    ("rerank-input",): ["rerank-input", "--task", "TASK_ID", "--run", "SAMPLE/run.txt", "--output", "new-folder"],
    ("evaluate",): ["evaluate", "SAMPLE/run.txt", "--task", "TASK_ID", "--truth", "SAMPLE/truth"],
    ("baseline", "run"): ["baseline", "run", "lucene-bm25", "--task", "TASK_ID"],
    ("demo",): ["demo", "--task", "TASK_ID"],
    ("new-submission",): ["new-submission", "--task", "TASK_ID", "new-folder"],
    ("compare",): ["compare", "SAMPLE/run.txt", "SAMPLE/run.txt", "--task", "TASK_ID"],
    ("reproduce",): ["reproduce", "--all", "--task", "TASK_ID"],
    ("serve",): ["serve", "--task", "TASK_ID", "--data-dir", "new-folder"],
    ("submit",): ["submit", "--server", "http://127.0.0.1:9", "--token", "t", "--task", "TASK_ID", "--image", "x"],
    ("data", "ir-layout"): ["data", "ir-layout", "--task", "TASK_ID", "SAMPLE/input"],
    ("pool",): ["pool", "SAMPLE/run.txt", "--task", "TASK_ID", "--output", "new-folder"],
    ("agreement",): ["agreement", "SAMPLE/truth/qrels.txt", "SAMPLE/truth/qrels.txt", "--task", "TASK_ID"],
}


def _takes_a_task(parser: argparse.ArgumentParser) -> bool:
    return any("--task" in a.option_strings or a.dest in {"task_id"} for a in parser._actions)


def test_every_command_that_takes_a_task_is_covered() -> None:
    takes = {path for path, parser in PARSERS.items() if _takes_a_task(parser)}
    assert takes == set(UNKNOWN_TASK_ARGV)


@pytest.mark.parametrize("path", sorted(UNKNOWN_TASK_ARGV), ids=" ".join)
def test_unknown_task_is_one_line(path: tuple[str, ...], tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    argv = [a.replace("TASK_ID", "touche-2099-task9").replace("SAMPLE", str(sample)) for a in UNKNOWN_TASK_ARGV[path]]
    # Docker unreachable on purpose: the task must be checked before anything else.
    line = assert_one_line_error(cli(*argv, cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER}),
                                 "unknown task 'touche-2099-task9'", TASK)
    assert "known tasks" in line
    assert not (tmp_path / "new-folder").exists()
    assert not (tmp_path / "sharedtask-runs").exists() and not (tmp_path / "sharedtask-demo").exists()


def test_task_ids_are_not_matched_loosely(tmp_path: Path) -> None:
    assert_one_line_error(cli("tasks", "show", TASK.upper(), cwd=tmp_path), "unknown task")


# ---------------------------------------------------------------- missing or wrong files and folders


def test_check_input_missing_folder(tmp_path: Path) -> None:
    assert_one_line_error(cli("check-input", "--task", TASK, tmp_path / "nope", cwd=tmp_path),
                          "not found", str(tmp_path / "nope"))


def test_check_input_on_a_file(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    assert_one_line_error(cli("check-input", "--task", TASK, sample / "run.txt", cwd=tmp_path), "run.txt")


def test_validate_missing_run(tmp_path: Path) -> None:
    assert_one_line_error(cli("validate", tmp_path / "nope.txt", "--task", TASK, cwd=tmp_path),
                          "no such file or directory", "nope.txt")


def test_validate_output_folder_without_run_file(tmp_path: Path) -> None:
    (tmp_path / "output").mkdir()
    (tmp_path / "output" / "notes.txt").write_text("x")
    assert_one_line_error(cli("validate", tmp_path / "output", "--task", TASK, cwd=tmp_path), "run.txt")


def test_validate_missing_topics_and_input(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    assert_one_line_error(cli("validate", sample / "run.txt", "--task", TASK, "--topics", tmp_path / "t.xml",
                              cwd=tmp_path), "t.xml", "not found")
    assert_one_line_error(cli("validate", sample / "run.txt", "--task", TASK, "--input", tmp_path / "nope",
                              cwd=tmp_path), "topics")


def test_validate_fix_into_a_folder_or_missing_parent(tmp_path: Path) -> None:
    """Writing the fixed run where it cannot go is the user's mistake: one line (was a traceback)."""
    sample = _sample(tmp_path)
    assert_one_line_error(cli("validate", sample / "run.txt", "--task", TASK, "--fix", tmp_path, cwd=tmp_path),
                          "Is a directory", str(tmp_path))
    assert_one_line_error(cli("validate", sample / "run.txt", "--task", TASK, "--fix", tmp_path / "a" / "b" / "run.txt",
                              cwd=tmp_path), "No such file or directory")


def test_evaluate_missing_run_qrels_truth(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    assert_one_line_error(cli("evaluate", tmp_path / "nope.txt", "--task", TASK, "--truth", sample / "truth",
                              cwd=tmp_path), "nope.txt", "does not exist")
    assert_one_line_error(cli("evaluate", sample / "run.txt", "--task", TASK, "--qrels", tmp_path / "q.txt",
                              cwd=tmp_path), "q.txt")
    assert_one_line_error(cli("evaluate", sample / "run.txt", "--task", TASK, "--truth", tmp_path / "nothing",
                              cwd=tmp_path), "nothing", "qrels")
    # No qrels at all means the official ones (sharedtask data): for Touché they come through
    # ir_datasets, which would try the network here; tests/test_evaluate_outputs.py covers the
    # case with ARQMath's shipped qrels.


def test_evaluate_binary_run_or_qrels(tmp_path: Path) -> None:
    """A file that is not text (a program, an image) was a UnicodeDecodeError traceback."""
    sample = _sample(tmp_path)
    binary = _write(tmp_path / "run.bin", b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) * 20)
    assert_one_line_error(cli("evaluate", binary, "--task", TASK, "--truth", sample / "truth", cwd=tmp_path),
                          "run.bin", "not UTF-8")
    assert_one_line_error(cli("evaluate", sample / "run.txt", "--task", TASK, "--qrels", binary, cwd=tmp_path),
                          "run.bin", "not UTF-8")


def test_evaluate_a_folder_without_a_run(tmp_path: Path) -> None:
    # A folder is read as a TIRA output directory; one without run.txt is a one-line error.
    sample = _sample(tmp_path)
    empty = tmp_path / "output"
    empty.mkdir()
    assert_one_line_error(cli("evaluate", empty, "--task", TASK, "--truth", sample / "truth", cwd=tmp_path),
                          "no run.txt or run.txt.gz", "$outputDir/run.txt")


def test_evaluate_tira_mode_without_its_folders(tmp_path: Path) -> None:
    env = {k: "" for k in ("inputRun", "inputDataset", "outputDir")}
    clean = {k: v for k, v in os.environ.items() if k not in env}
    proc = subprocess.run([str(SHAREDTASK), "evaluate", "--tira", "--task", TASK], cwd=tmp_path, env=clean,
                          capture_output=True, text=True, timeout=120)
    assert_one_line_error(proc, "$inputRun")
    assert_one_line_error(cli("evaluate", "--tira", "--task", TASK, "--input-run", tmp_path / "r", "--input-dataset",
                              tmp_path / "t", "--output", tmp_path / "o", cwd=tmp_path), "does not exist")


def test_run_missing_input_folder(tmp_path: Path) -> None:
    """Checked before Docker is asked anything: works with no daemon."""
    proc = cli("run", "--task", TASK, "--image", "does-not-exist:1", "--input", tmp_path / "nope", cwd=tmp_path,
               env={"DOCKER_HOST": NO_DOCKER})
    assert_one_line_error(proc, "input dataset directory", "does not exist")


def test_run_bad_limits(tmp_path: Path) -> None:
    for option, value, needle in [("--timeout", "soon", "invalid timeout"), ("--memory", "lots", "invalid memory"),
                                  ("--user", "root:x", "invalid --user")]:
        assert_one_line_error(cli("run", "--task", TASK, "--image", "x:1", option, value, cwd=tmp_path,
                                  env={"DOCKER_HOST": NO_DOCKER}), needle)


def test_sample_into_a_non_empty_folder_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert_one_line_error(cli("sample", TASK, "full", cwd=tmp_path), "not empty", "--force")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["keep.txt"]
    (tmp_path / "a-file").write_text("x")
    assert_one_line_error(cli("sample", TASK, "a-file", cwd=tmp_path), "not a directory")


def test_new_submission_into_a_non_empty_folder_or_nowhere(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "run.py").write_text("# mine\n")
    assert_one_line_error(cli("new-submission", "--task", TASK, "full", cwd=tmp_path), "not empty", "--force")
    assert (tmp_path / "full" / "run.py").read_text() == "# mine\n"
    (tmp_path / "a-file").write_text("x")
    assert_one_line_error(cli("new-submission", "--task", TASK, tmp_path / "a-file" / "sub", cwd=tmp_path))


def test_demo_out_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x")
    assert_one_line_error(cli("demo", "--task", TASK, "--output", "out", cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER}),
                          "--output out is a file")


# ---------------------------------------------------------------- Docker


@pytest.mark.docker
def test_image_not_found(docker_client, tmp_path: Path) -> None:
    proc = cli("run", "--task", TASK, "--image", "does-not-exist:1", cwd=tmp_path)
    assert_one_line_error(proc, "does-not-exist:1", "not available locally")
    # nothing ran, so nothing is left behind
    leftovers = [p for p in (tmp_path / "sharedtask-runs").rglob("*") if p.is_file() or p.name.startswith("does")] \
        if (tmp_path / "sharedtask-runs").exists() else []
    assert leftovers == []


@pytest.mark.docker
@pytest.mark.parametrize("option, value, needle", [
    ("--memory", "1k", "below Docker's minimum of 6 MiB"),
    ("--memory", f"{6 * 1024**2 - 1}", "below Docker's minimum of 6 MiB"),
    ("--cpus", "0.001", "below Docker's minimum of 0.01"),
    ("--cpus", str((os.cpu_count() or 1) + 62), f"more than the {os.cpu_count()} CPU(s) of the Docker host"),
])
def test_limits_docker_refuses_are_one_line_before_anything_is_made(option, value, needle, docker_client,
                                                                     base_image, tmp_path: Path) -> None:
    proc = cli("run", "--task", TASK, "--image", base_image, "--command", "true", option, value, cwd=tmp_path)
    assert_one_line_error(proc, option, needle)
    assert not (tmp_path / "sharedtask-runs").exists()  # no empty run folder


@pytest.mark.docker
def test_dockers_own_memory_minimum_is_the_one_refused(docker_client, base_image) -> None:
    """The bound above is Docker's: the daemon refuses a byte less than 6 MiB and takes 6 MiB."""
    import docker

    with pytest.raises(docker.errors.APIError, match="(?i)minimum memory"):
        docker_client.containers.create(base_image, "true", mem_limit=6 * 1024**2 - 1)
    container = docker_client.containers.create(base_image, "true", mem_limit=6 * 1024**2)
    container.remove(force=True)


@pytest.mark.docker
@pytest.mark.parametrize("image", ["Bad Image", "x:y:z", ""])
def test_invalid_image_reference(image: str, docker_client, tmp_path: Path) -> None:
    """Malformed references were a docker APIError traceback; nothing may be left behind either."""
    proc = cli("run", "--task", TASK, "--image", image, cwd=tmp_path)
    assert_one_line_error(proc, "invalid image reference", repr(image))
    runs = tmp_path / "sharedtask-runs"
    assert not runs.exists() or not [p for p in runs.rglob("*") if p.parent != runs]


@pytest.mark.docker
def test_demo_names_why_a_submission_did_not_run(docker_client, tmp_path: Path) -> None:
    """Missing or malformed submission images are failed entries with the reason, not a crash."""
    subs = _write(tmp_path / "subs.yml", _submissions(
        **{"team-typo": {"image": "Team/Ranker:1", "tasks": [TASK]},
           "team-missing": {"image": "sharedtask-test/never-built:1", "tasks": [TASK]}}))
    proc = cli("demo", "--task", TASK, "--submissions", subs, "--no-baselines", "--output", "demo", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    flat = _words(proc.stdout.replace("│", " "))
    assert "team-typo error: sandbox: invalid image reference 'Team/Ranker:1'" in flat
    assert "team-missing error: sandbox: image sharedtask-test/never-built:1 is not available locally" in flat
    assert (tmp_path / "demo" / "report.html").is_file()


@pytest.mark.docker
def test_baseline_run_through_the_console_script(docker_client, base_image, tmp_path: Path) -> None:
    """`baseline run` once ended in an ImportError traceback; now it runs, validates and records."""
    proc = cli("baseline", "run", "lucene-bm25", "--task", TASK, "--output", tmp_path / "bm25" / "output",
               cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:] + proc.stdout[-2000:]
    record = json.loads((tmp_path / "bm25" / "run-record.json").read_text())
    assert record["status"] == "success" and record["validation"]["status"] == "valid"
    assert record["command"] == "python -m lucene_baseline --model bm25"
    assert (tmp_path / "bm25" / "output" / "run.txt").stat().st_size > 0


@pytest.mark.parametrize("argv", [
    ["run", "--task", TASK, "--image", "sharedtask/base:latest"],
    ["demo", "--task", TASK, "--output", "demo"],
    ["baseline", "build", "lucene-bm25"],
    ["baseline", "run", "lucene-bm25", "--task", TASK],
], ids=lambda a: " ".join(a[:2]))
def test_docker_not_running_is_one_line(argv: list[str], tmp_path: Path) -> None:
    line = assert_one_line_error(cli(*argv, cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER}), "Docker", "docker-doctor")
    assert "not" in line  # "is not running" / "cannot reach"
    assert not (tmp_path / "demo").exists()


def test_docker_doctor_reports_a_missing_daemon(tmp_path: Path) -> None:
    proc = cli("docker-doctor", cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER})
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 1
    assert "docker daemon" in proc.stdout and "FAIL" in proc.stdout and "docker-doctor --fix" in proc.stdout
    proc = cli("docker-doctor", "--json", cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    assert checks["docker daemon"]["ok"] is False and "setup.sh" in checks["docker daemon"]["fix"]
    assert "base image" not in checks  # later checks are skipped, not crashed


# ---------------------------------------------------------------- manifests and submission lists


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _submissions(**entries: dict) -> str:
    return yaml.safe_dump({"version": 1, "submissions": entries})


MALFORMED = {
    "bad-yaml": ("version: 1\nsubmissions: [\n", ["invalid YAML", ":3:"]),
    "not-utf8": (b"version: 1\n\xff\xfe\x00submissions: {}\n", ["UTF-8"]),
    "a-list": ("- image: x:1\n", ["is not of type 'object'"]),
    "no-version": (yaml.safe_dump({"submissions": {}}), ["'version' is a required property"]),
    "no-image": (_submissions(team={"tasks": [TASK]}), ["submissions.team", "'image'"]),
    "unknown-key": (_submissions(team={"image": "x:1", "tasks": [TASK], "colour": "red"}), ["colour"]),
    "task-typo": (_submissions(team={"image": "x:1", "tasks": ["touche-2021-tsak1"]}),
                  ["submissions.team.tasks", "matches no task"]),
    "name-clash": (_submissions(**{"lucene-bm25": {"image": "x:1", "tasks": [TASK]}}), ["unique", "lucene-bm25"]),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_demo_malformed_submissions_file(case: str, tmp_path: Path) -> None:
    text, needles = MALFORMED[case]
    subs = _write(tmp_path / "subs.yml", text)
    proc = cli("demo", "--task", TASK, "--submissions", subs, "--output", "demo", cwd=tmp_path,
               env={"DOCKER_HOST": NO_DOCKER})  # the file is checked before Docker
    assert_one_line_error(proc, *needles)
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("case", ["bad-yaml", "not-utf8", "a-list", "no-version", "unknown-key"])
def test_demo_and_baseline_malformed_manifest(case: str, tmp_path: Path) -> None:
    text, needles = MALFORMED[case]
    manifest = _write(tmp_path / "tira.yml", text)
    assert_one_line_error(cli("demo", "--manifest", manifest, "--output", "demo", cwd=tmp_path), *needles)
    # --manifest before or after the baseline subcommand
    assert_one_line_error(cli("baseline", "--manifest", manifest, "list", cwd=tmp_path), *needles)
    assert_one_line_error(cli("baseline", "list", "--manifest", manifest, cwd=tmp_path), *needles)


def test_missing_manifest_and_submissions(tmp_path: Path) -> None:
    assert_one_line_error(cli("demo", "--manifest", tmp_path / "no.yml", cwd=tmp_path), "manifest not found")
    assert_one_line_error(cli("demo", "--submissions", tmp_path / "no.yml", cwd=tmp_path), "not found", "no.yml")
    assert_one_line_error(cli("baseline", "build", "--manifest", tmp_path / "no.yml", cwd=tmp_path), "not found")


def test_unknown_baseline_and_wrong_task_for_it(tmp_path: Path) -> None:
    assert_one_line_error(cli("baseline", "build", "lucene-bm26", cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER}),
                          "lucene-bm26", "lucene-bm25")
    assert_one_line_error(cli("baseline", "run", "lucene-bm26", "--task", TASK, cwd=tmp_path), "lucene-bm26")
    assert_one_line_error(cli("baseline", "run", "lucene-bm25", "--task", "arqmath-3-task2", cwd=tmp_path,
                              env={"DOCKER_HOST": NO_DOCKER}), "does not serve arqmath-3-task2")


def test_demo_unknown_dataset(tmp_path: Path) -> None:
    assert_one_line_error(cli("demo", "--task", TASK, "--dataset", "official", cwd=tmp_path,
                              env={"DOCKER_HOST": NO_DOCKER}), "no dataset 'official'")


# ---------------------------------------------------------------- argparse's own mistakes


def test_usage_errors(tmp_path: Path) -> None:
    assert_usage_error(cli("frobnicate", cwd=tmp_path), "invalid choice")
    assert_usage_error(cli("validate", "run.txt", cwd=tmp_path), "--task")
    assert_usage_error(cli("run", "--task", TASK, cwd=tmp_path), "--image")
    assert_usage_error(cli("tasks", "show", cwd=tmp_path), "ID")
    assert_usage_error(cli("evaluate", "r", "--task", TASK, "--json", "--csv", cwd=tmp_path), "not allowed")
    assert_usage_error(cli("run", "--task", TASK, "--image", "x", "--cpus", "many", cwd=tmp_path), "--cpus")


# ---------------------------------------------------------------- the field test's clumsy inputs (issue 40)

REPO = Path(__file__).resolve().parent.parent
T3_TRUTH = REPO / "tasks" / "samples" / "arqmath-task3" / "truth"
T1_TRUTH = REPO / "tasks" / "samples" / "arqmath-task1" / "truth"
T21_TRUTH = REPO / "tasks" / "samples" / "touche-2021" / "truth"


def _clumsy_files(folder: Path) -> None:
    """What a newcomer has at hand: a Task 3 run nobody judged and its map, a 4-column file,
    binary garbage, an empty file, a run on the sample (none of its posts is in the official
    qrels), a Touché run, a folder with the user's own file, a broken YAML file, a record that
    is not JSON, and a copy of the task catalogue with a broken spec and an unknown family."""
    (folder / "Team-task3-run.tsv").write_text("A.301\t1\t1\tx\t\tAnswer one.\nA.302\t1\t1\tx\t\tAnswer two.\n")
    (folder / "map.tsv").write_text("Team-task3-run\tA.301\tnot_judged_1\n")
    (folder / "four.tsv").write_text("A.301\t83\t1\t53.5\nA.301\t84\t2\t52.0\n")
    (folder / "garbage.bin").write_bytes(bytes(range(256)) * 12)
    (folder / "empty.txt").write_text("")
    shutil.copyfile(REPO / "baselines" / "reference-runs" / "arqmath-3-task1" / "lucene-bm25.txt", folder / "sample-run.tsv")
    shutil.copyfile(REPO / "baselines" / "reference-runs" / TASK / "lucene-bm25.txt", folder / "touche-run.txt")
    (folder / "in").mkdir()
    (folder / "full").mkdir()
    (folder / "full" / "keep.txt").write_text("mine")
    (folder / "grader.yml").write_text("grader: http\n  base_url: [\n")
    (folder / "record.json").write_text("{not json")
    catalogue = folder / "catalogue"  # SHAREDTASK_TASKS: an organizer's own copy of tasks/
    catalogue.mkdir()
    for entry in (REPO / "tasks").iterdir():
        (catalogue / entry.name).symlink_to(entry)
    spec = (REPO / "tasks" / f"{TASK}.yml").read_text()
    (catalogue / "bad-yaml.yml").write_text('id: bad-yaml\nextends: _base/touche.yml\ntitle: "Touché\nyear: 2021\n')
    (catalogue / "trek.yml").write_text((REPO / "tasks" / "_base" / "touche.yml").read_text()
                                        .replace("family: touche", "family: trek"))
    (catalogue / "new-family.yml").write_text(spec.replace(f"id: {TASK}", "id: new-family")
                                              .replace("extends: _base/touche.yml", "extends: trek.yml"))


NO_SERVER = "http://127.0.0.1:9"  # the discard port on loopback: nothing listens there
SPEC_ENV = {"SHAREDTASK_TASKS": "CATALOGUE"}

#: name -> (argv, text the one line must hold[, {"env": ..., "docker": True}]). Every case: exit 2,
#: one ``error:`` line on stderr (its hint in parentheses on the same line), nothing on stdout,
#: no traceback, and no file or folder made in the working directory. The 48 of the field test
#: (issue 40) and the ones found since; a case that failed was fixed in the command.
CLUMSY: dict[str, tuple] = {
    # evaluate: the participant's first score
    "task3 --json, nothing judged": (["evaluate", "Team-task3-run.tsv", "--task", "arqmath-3-task3", "--truth",
                                      str(T3_TRUTH), "--answer-map", "map.tsv", "--measures", "ar", "p1", "--json"],
                                     ("nothing scored", "AR and P@1 not computed")),
    "task3, nothing judged": (["evaluate", "Team-task3-run.tsv", "--task", "arqmath-3-task3", "--truth", str(T3_TRUTH),
                               "--answer-map", "map.tsv", "--measures", "ar", "p1"], ("nothing scored",)),
    "sample run on the official qrels": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1"],
                                         ("nothing scored: no result of the run is judged", "--truth")),
    "4-column run": (["evaluate", "four.tsv", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH)],
                     ("5 columns, found 4",)),
    "binary run": (["evaluate", "garbage.bin", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH)], ("not UTF-8",)),
    "empty run": (["evaluate", "empty.txt", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH)], ("the run is empty",)),
    "a folder without a run": (["evaluate", "in", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH)],
                               ("no run.txt or run.txt.gz",)),
    "a Touché run for ARQMath": (["evaluate", "touche-run.txt", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH)],
                                 ("this is a TREC run", "expects an ARQMath Task 1 run", "check --task")),
    "an ARQMath run for Touché": (["evaluate", "sample-run.tsv", "--task", TASK, "--truth", str(T21_TRUTH)],
                                  ("this is an ARQMath Task 1 run", "expects a TREC run")),
    "task id typo": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-tsak1", "--truth", str(T1_TRUTH)],
                     ("unknown task 'arqmath-3-tsak1'", "did you mean 'arqmath-3-task1'?")),
    "task id typo, --json": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-tsak1", "--json"],
                             ("unknown task", "did you mean 'arqmath-3-task1'?")),
    "unknown measure": (["evaluate", "four.tsv", "--task", "arqmath-3-task1", "--measures", "ndcg"],
                        ("has no measure 'ndcg'", "did you mean 'ndcg_prime'?")),
    "measure typo": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH), "--measures",
                      "ndgc_prime"], ("has no measure 'ndgc_prime'", "did you mean 'ndcg_prime'?")),
    "missing answer map": (["evaluate", "Team-task3-run.tsv", "--task", "arqmath-3-task3", "--truth", str(T3_TRUTH),
                            "--answer-map", "nomap.tsv"], ("nomap.tsv",)),
    "answer map off Task 3": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH),
                               "--answer-map", "map.tsv"], ("--answer-map", "drop --answer-map")),
    "dataset of another task": (["evaluate", "four.tsv", "--task", "arqmath-3-task1", "--dataset",
                                 "arqmath-3-task3/test"], ("belongs to task arqmath-3-task3",)),
    "a folder as evaluate --dataset": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--dataset",
                                        str(T1_TRUTH)], ("is a folder", "--truth")),
    "a file as --truth": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth", "four.tsv"],
                          ("--truth four.tsv is a file, not a folder", "--qrels four.tsv")),
    "a folder as --qrels": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--qrels", "in"],
                            ("Is a directory",)),
    "empty qrels": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--qrels", "empty.txt"],
                    ("the qrels file is empty",)),
    "no run at all": (["evaluate", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH)], ("no run given",)),
    "--prototext of two runs": (["evaluate", "sample-run.tsv", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth",
                                 str(T1_TRUTH), "--prototext"], ("--prototext writes one run's evaluation", "--json")),
    "--significance of one run": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH),
                                   "--significance"], ("--significance compares runs",)),
    "--alpha 2": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth", str(T1_TRUTH), "--alpha", "2"],
                  ("--alpha 2", "between 0 and 1")),
    "grader YAML with an unclosed bracket": (["evaluate", "sample-run.tsv", "--task", "arqmath-3-task1", "--truth",
                                              str(T1_TRUTH), "--grader", "grader.yml"], ("grader.yml:2:11: invalid YAML",)),
    # validate
    "--fix over an existing file": (["validate", "four.tsv", "--task", "arqmath-3-task1", "--fix", "map.tsv"],
                                    ("the file exists", "keeps that one")),
    "validate a missing run, --json": (["validate", "nope.tsv", "--task", TASK, "--json"], ("nope.tsv does not exist",)),
    "a folder as --topics": (["validate", "touche-run.txt", "--task", TASK, "--topics", "in"], ("topics file not found",)),
    "a stage without candidates": (["validate", "touche-run.txt", "--task", TASK, "--input-run", "in"],
                                   ("holds no rerank.jsonl.gz", "rerank-input")),
    "--examples -1": (["validate", "touche-run.txt", "--task", TASK, "--examples", "-1"], ("--examples -1",)),
    # run: limits Docker refuses, paths that cannot be what they should
    "--memory 1k": (["run", "--task", TASK, "--image", "sharedtask/base:latest", "--command", "true", "--memory", "1k"],
                    ("--memory", "below Docker's minimum of 6 MiB"), {"docker": True}),
    "--cpus 64": (["run", "--task", TASK, "--image", "sharedtask/base:latest", "--command", "true", "--cpus",
                   str((os.cpu_count() or 1) + 62)], ("--cpus", "CPU(s) of the Docker host"), {"docker": True}),
    "--cpus 0": (["run", "--task", TASK, "--image", "x:1", "--cpus", "0"], ("invalid --cpus 0", "must be positive")),
    "--cpus -1": (["run", "--task", TASK, "--image", "x:1", "--cpus", "-1"], ("must be positive",)),
    "--timeout 0": (["run", "--task", TASK, "--image", "x:1", "--timeout", "0"], ("invalid timeout",)),
    "--memory=-5m": (["run", "--task", TASK, "--image", "x:1", "--memory=-5m"], ("invalid memory limit",)),
    "--pids 0": (["run", "--task", TASK, "--image", "x:1", "--pids", "0"], ("invalid --pids 0",)),
    "--max-output 1x": (["run", "--task", TASK, "--image", "x:1", "--max-output", "1x"], ("invalid output limit",)),
    "unknown CPU profile": (["run", "--task", TASK, "--image", "x:1", "--cpu-profile", "pentium"],
                            ("unknown CPU profile 'pentium'", "nehalem")),
    "a file as --input": (["run", "--task", TASK, "--image", "x:1", "--input", "four.tsv"], ("is a file, not a folder",)),
    "a file as --output": (["run", "--task", TASK, "--image", "x:1", "--output", "four.tsv"], ("is a file, not a folder",)),
    "a full folder as --output": (["run", "--task", TASK, "--image", "x:1", "--output", "full"], ("is not empty",)),
    "a missing --input-run": (["run", "--task", TASK, "--image", "x:1", "--input-run", "nostage"],
                              ("input run nostage does not exist",)),
    "a folder as --dataset": (["run", "--task", TASK, "--image", "x", "--dataset", "in/"], ("is a folder", "--input")),
    "dataset typo": (["run", "--task", TASK, "--image", "x:1", "--dataset", f"{TASK}/tset"],
                     ("unknown dataset", f"did you mean '{TASK}/test'?")),
    # rerank-input, pool, qrels, agreement, compare: the second stage and the organizer's side
    "rerank --depth 0": (["rerank-input", "--task", TASK, "--run", "touche-run.txt", "--output", "stage", "--depth", "0"],
                         ("--depth 0: must be at least 1",)),
    "rerank --depth -3": (["rerank-input", "--task", TASK, "--run", "touche-run.txt", "--output", "stage", "--depth",
                           "-3"], ("--depth -3",)),
    "rerank a binary run": (["rerank-input", "--task", TASK, "--run", "garbage.bin", "--output", "stage"],
                            ("garbage.bin", "invalid UTF-8")),
    "rerank into a full folder": (["rerank-input", "--task", TASK, "--run", "touche-run.txt", "--output", "full"],
                                  ("--output full is not empty",)),
    "pool with no runs": (["pool", "--task", "arqmath-3-task1", "--output", "pool"], ("no runs to pool",)),
    "pool --depth primary=0": (["pool", "sample-run.tsv", "--task", "arqmath-3-task1", "--output", "pool", "--depth",
                                "primary=0"], ("N >= 1",)),
    "pool --depth deep": (["pool", "sample-run.tsv", "--task", "arqmath-3-task1", "--output", "pool", "--depth", "deep"],
                          ("expected primary=N",)),
    "pool a missing run": (["pool", "nope.tsv", "--task", "arqmath-3-task1", "--output", "pool"], ("no such run file",)),
    "pool a binary run": (["pool", "garbage.bin", "--task", "arqmath-3-task1", "--output", "pool"], ("invalid UTF-8",)),
    "pool into a file": (["pool", "sample-run.tsv", "--task", "arqmath-3-task1", "--output", "four.tsv"],
                         ("--output four.tsv is a file, not a folder",)),
    "qrels of a folder without judgments": (["qrels", "in", "--output", "q.tsv"], ("no pool.json here",)),
    "agreement with one file": (["agreement", "four.tsv", "--task", "arqmath-3-task1"], ("at least two",)),
    "agreement on empty files": (["agreement", "empty.txt", "empty.txt", "--task", "arqmath-3-task1"],
                                 ("no judgments",)),
    "agreement of another task's qrels": (["agreement", str(T21_TRUTH / "qrels.txt"), str(T21_TRUTH / "qrels.txt"),
                                           "--task", "arqmath-3-task1"], ("is a topic id of arqmath-3-task1", "--task")),
    "compare runs of two tasks": (["compare", "sample-run.tsv", "touche-run.txt", "--task", "arqmath-3-task1"],
                                  ("this is a TREC run",)),
    "compare --min-ktu 2": (["compare", "sample-run.tsv", "sample-run.tsv", "--task", "arqmath-3-task1", "--min-ktu",
                             "2"], ("--min-ktu 2: must be between -1 and 1",)),
    "compare --rbo-p 1.5": (["compare", "sample-run.tsv", "sample-run.tsv", "--task", "arqmath-3-task1", "--rbo-p",
                             "1.5"], ("between 0 and 1",)),
    # the service, seen from a team and from the organizer
    "empty team name": (["serve", "--new-team", "", "--data-dir", "svc"], ("invalid team name ''",)),
    "port 0": (["serve", "--port", "0"], ("--port 0",)),
    "port 70000": (["serve", "--port", "70000", "--data-dir", "svc"], ("--port 70000",)),
    "server URL with a page": (["submit", "--task", TASK, "--image", "x", "--token", "t",
                                "--server", f"{NO_SERVER}/openapi.json"], ("names a page", NO_SERVER)),
    "server URL of another scheme": (["status", "1", "--server", "ftp://host", "--token", "t"], ("invalid server URL",)),
    "server without a scheme": (["submit", "--task", TASK, "--image", "x", "--token", "t", "--server", "localhost:8000"],
                                ("invalid server URL 'localhost:8000'",)),
    "unreachable server": (["submit", "--task", TASK, "--image", "x", "--token", "t", "--server", NO_SERVER],
                           ("cannot reach the server", "sharedtask serve")),
    "no token": (["submit", "--task", TASK, "--image", "x", "--server", NO_SERVER, "--token", ""], ("no token given",)),
    "a pasted 'Bearer' token": (["submit", "--task", TASK, "--image", "x", "--server", NO_SERVER, "--token",
                                 "Bearer st_x"], ("invalid token: character 7 is ' '",)),
    "submission 0": (["status", "0", "--server", NO_SERVER, "--token", "t"], ("submission numbers start at 1",)),
    "broker not a URL (demo)": (["demo", "--task", TASK, "--broker", "notaurl", "--output", "demo"],
                                ("invalid --broker 'notaurl'", "redis://")),
    "broker not a URL (worker)": (["worker", "--broker", "notaurl"], ("invalid --broker 'notaurl'",)),
    "worker --max-memory 1x": (["worker", "--broker", "redis://127.0.0.1:1/0", "--max-memory", "1x"],
                               ("invalid --max-memory",)),
    # data, tasks, baselines, reproduction
    "mirror that is no URL": (["data", "fetch", "touche-2021-task1/test", "--mirror", "notaurl"], ("is not a URL",)),
    "unknown dataset": (["data", "show", "nope/test"], ("unknown dataset 'nope/test'",)),
    "dataset typo, --json": (["data", "show", f"{TASK}/tset", "--json"], (f"did you mean '{TASK}/test'?",)),
    "ir-layout of a folder without topics": (["data", "ir-layout", "in", "--task", TASK, "--output", "layout"],
                                             ("holds no topics file",)),
    "ir-layout of a file": (["data", "ir-layout", "four.tsv", "--task", TASK], ("is not a folder",)),
    "task typo": (["tasks", "show", "touche-2021-tsak1"], ("did you mean 'touche-2021-task1'?",)),
    "task in capitals": (["tasks", "show", TASK.upper()], ("unknown task", f"did you mean '{TASK}'?")),
    "sample of a task typo": (["sample", "touche-2021-tsak1", "t"], ("did you mean 'touche-2021-task1'?",)),
    "baseline typo": (["baseline", "run", "lucene-bm52", "--task", TASK], ("did you mean 'lucene-bm25'?",)),
    "reproduce --all with one record's options": (["reproduce", "--all", "--input", "in"], ("for one RECORD",)),
    "reproduce without what": (["reproduce"], ("give either RECORD or --all",)),
    "reproduce a record that is not JSON": (["reproduce", "record.json"], ("not a run record",)),
    "reproduce a folder without a record": (["reproduce", "in"], ("run-record.json does not exist",)),
    "reproduce --cpu-profile pentium": (["reproduce", "--all", "--cpu-profile", "pentium"], ("unknown CPU profile",)),
    "reproduce --min-rbo 7": (["reproduce", "--all", "--min-rbo", "7"], ("--min-rbo 7",)),
    "demo --edition --error-rate 2": (["demo", "--edition", "--runs", "sample-run.tsv", "--error-rate", "2",
                                       "--output", "demo"], ("between 0 and 1",)),
    "demo --parallel 0": (["demo", "--task", TASK, "--parallel", "0", "--output", "demo"], ("--parallel must be",)),
    "check-input of a missing folder": (["check-input", "--task", TASK, "nope"], ("dataset folder not found: nope",)),
    "check-input of a file": (["check-input", "--task", TASK, "four.tsv"], ("four.tsv",)),
    "new-submission into a file": (["new-submission", "--task", TASK, "four.tsv"], ("is not a directory",)),
    "new-submission into a full folder": (["new-submission", "--task", TASK, "full"], ("not empty", "--force")),
    "images-server of a missing folder": (["images-server", "--dir", "nowhere"], ("--dir nowhere is not a folder",),
                                          {"env": {"SHAREDTASK_IMAGES_TOKEN": "a-token-of-at-least-16-chars"}}),
    "images-server without its token": (["images-server", "--dir", "in"], ("SHAREDTASK_IMAGES_TOKEN",),
                                        {"env": {"SHAREDTASK_IMAGES_TOKEN": ""}}),
    # an organizer's own task catalogue
    "spec with an unclosed quote": (["tasks", "show", "bad-yaml"], ("bad-yaml.yml:5:1: invalid YAML",
                                                                    "quoted scalar at line 3, column 8"), {"env": SPEC_ENV}),
    "spec of an unknown family": (["tasks", "show", "new-family"], ("family: 'trek' is not one of",), {"env": SPEC_ENV}),
}


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_the_table_holds_the_field_tests_48_and_covers_every_command() -> None:
    assert len(CLUMSY) >= 48
    commands = {case[0][0] for case in CLUMSY.values()}
    # every command a user meets with input of their own (not the help-only or the long-running ones)
    assert commands >= {"evaluate", "validate", "run", "rerank-input", "pool", "qrels", "agreement", "compare", "serve",
                        "submit", "status", "worker", "data", "tasks", "sample", "baseline", "reproduce", "demo",
                        "check-input", "new-submission", "images-server"}


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("case", sorted(CLUMSY))
def test_clumsy_input_is_one_line(case: str, columns: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    argv, needles, *extra = CLUMSY[case]
    options = extra[0] if extra else {}
    if options.get("docker"):
        request.getfixturevalue("base_image")  # skipped without the daemon and its base image
    work = tmp_path / "work"
    work.mkdir()
    _clumsy_files(work)
    before = _tree(work)
    env = {"COLUMNS": columns, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           **{k: v.replace("CATALOGUE", str(work / "catalogue")) for k, v in options.get("env", {}).items()}}
    if not options.get("docker"):
        env["DOCKER_HOST"] = NO_DOCKER  # the user's mistake comes before Docker's absence
    proc = cli(*argv, cwd=work, env=env)
    assert_one_line_error(proc, *needles)
    assert proc.stdout == "", proc.stdout[-2000:]
    assert _tree(work) == before  # refused: nothing made (no empty output folder, no database)


@pytest.mark.parametrize("argv, needle", [(["--max-upload", "lots"], "invalid --max-upload"),
                                          (["--db", "notaurl"], "cannot open the database notaurl"),
                                          (["--daily-limit", "0"], "--daily-limit 0: must be at least 1")])
def test_serve_refusals_leave_no_data_folder(argv: list[str], needle: str, tmp_path: Path) -> None:
    proc = cli("serve", *argv, "--data-dir", "svc", cwd=tmp_path)
    assert_one_line_error(proc, needle)
    assert not (tmp_path / "svc").exists()  # refused before the data folder or a database is made


@pytest.mark.parametrize("name, first", [("four.tsv", "wrong layout: none of its 2 line(s) has the 5 columns"),
                                         ("garbage.bin", "not a text run: none of its")])
def test_validate_leads_with_the_layout_problem(name: str, first: str, tmp_path: Path) -> None:
    """Exit 1 (invalid), and the first finding names why no line is a result line."""
    _clumsy_files(tmp_path)
    proc = cli("validate", name, "--task", "arqmath-3-task1", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    findings = [ln for ln in proc.stdout.splitlines() if ln.startswith(("error ", "warning ", "info "))]
    assert findings[0].startswith("error RUN-EMPTY") and first in findings[0], proc.stdout


def test_old_option_names_still_work_and_say_the_new_one(tmp_path: Path) -> None:
    proc = cli("reproduce", "--all", "--dataset", "in", cwd=tmp_path)
    assert "--dataset is now --input" in proc.stderr  # then refused as --input would be
    assert_one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout,
                                                      proc.stderr.split("\n", 1)[1]), "for one RECORD")


def test_submit_refuses_a_server_that_is_not_sharedtask(tmp_path: Path) -> None:
    """Any web server answering 200 with JSON to every path (the field test's --server .../openapi.json
    used a quota slot): refused before the image is saved or sent."""
    import http.server
    import threading

    seen: list[str] = []

    class Any200(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append(f"GET {self.path}")
            body = b'{"openapi": "3.1.0"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Any200)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proc = cli("submit", "--task", TASK, "--image", "no-such-image:1", "--token", "t", "--server",
                   f"http://127.0.0.1:{server.server_address[1]}", cwd=tmp_path, env={"DOCKER_HOST": NO_DOCKER})
    finally:
        server.shutdown()
    assert_one_line_error(proc, "is not a sharedtask server")
    assert all(s.startswith("GET /api/tasks/") and "/submissions/preflight" in s for s in seen), seen  # nothing sent
