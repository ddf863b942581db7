"""Render the scaffold templates for one task and write them into a folder."""

from __future__ import annotations

import os
import re
import string
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from sharedtask import families
from sharedtask.errors import SharedTaskError
from sharedtask.spec import Task, load_task

#: Spec run format -> layout name of sharedtask.formats.write_run.
_LAYOUTS = {
    "trec-run": "trec",
    "arqmath-task1-run": "arqmath-task1",
    "arqmath-task2-run": "arqmath-task2",
    "arqmath-task3-run": "arqmath-task3",
    "mathqa-programs": "mathqa-programs",  # one program per line, written by the template itself
}

# Output path in the submission -> template file.
_COMMON = {
    "Dockerfile": "Dockerfile",
    ".dockerignore": "dockerignore",
    "README.md": "README.md",
    "tests/test_submission.py": "test_submission.py",
}


class _Template(string.Template):
    delimiter = "%%"


@dataclass(frozen=True)
class Submission:
    """What a scaffold will contain: names derived from DIR/--name, and the rendered files."""

    task: Task
    name: str
    image: str
    run_tag: str
    files: dict[str, str]  # relative path -> content


def _template(name: str) -> str:
    return files("sharedtask.scaffold").joinpath("templates", f"{name}.tmpl").read_text(encoding="utf-8")


def image_name(name: str) -> str:
    """A valid docker repository name (lower case, [a-z0-9] with single . _ - between)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"{slug or 'submission'}:latest"


def run_tag(name: str, pattern: str | None) -> str:
    tag = re.sub(r"[^A-Za-z0-9_.+-]+", "-", name).strip("-")[:100] or "submission"
    if pattern and not re.fullmatch(pattern, tag):
        raise SharedTaskError(f"cannot make a valid run tag from the name {name!r}",
                              hint="pass --name with letters, digits, '-', '_' or '.'")
    return tag


def plan_submission(task: Task | str, name: str, *, rerank: bool = False) -> Submission:
    """Render every file of the scaffold (nothing is written); ``rerank``: a re-ranker of the
    task's first stage (docs/pipelines.md) instead of a full retrieval system."""
    if isinstance(task, str):
        task = load_task(task)
    if rerank and task.rerank is None:
        raise SharedTaskError(f"task {task.id} declares no re-ranking stage",
                              hint="re-rankers exist for tasks with rerank: in their spec (sharedtask tasks)")
    family = families.get(task.family)  # its run.py template and what that does
    layout = _LAYOUTS.get(task.output.format)
    if layout is None:
        raise SharedTaskError(f"no run writer for the output format {task.output.format!r} of {task.id}")
    tag = run_tag(name, task.output.patterns.get("tag"))
    image = image_name(name)
    notes = ""
    if task.output.file_name_pattern:
        notes = ("\n\nOutside TIRA, ARQMath runs are submitted as files named after the convention\n"
                 f"`{task.output.file_name_pattern}`\n(e.g. rename `run.txt` before sending it to the organizers).")
    values = {
        "name": name,
        "image": image,
        "run_tag": tag,
        "task_id": task.id,
        "task_title": task.title,
        "task_description": task.description,
        "edition": task.edition,
        "family": task.family,
        "run_format": task.output.format,
        "layout": layout,
        "depth": str(task.output.max_results_per_topic),
        "max_answer_chars": str(task.output.max_answer_chars or 0),
        "primary_measure": task.primary_measure.label,
        "approach": family.approach,
        "extra_notes": notes,
        "rerank_depth": str(task.rerank.depth) if task.rerank else "",
        "first_stage": (task.rerank.first_stages or ("lucene-bm25",))[0] if task.rerank else "",
    }
    if rerank:
        common = {**_COMMON, "README.md": "README_rerank.md", "tests/test_submission.py": "test_rerank_submission.py"}
        rendered = {"run.py": _Template(_template("run_rerank.py")).substitute(values)}
    else:
        common = _COMMON
        rendered = {"run.py": _Template(_template(family.template)).substitute(values)}
    for target, source in common.items():
        rendered[target] = _Template(_template(source)).substitute(values)
    return Submission(task, name, image, tag, rendered)


def _write_atomic(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_submission(task: Task | str, directory: Path, *, name: str | None = None,
                     force: bool = False, rerank: bool = False) -> Submission:
    """Write the scaffold into ``directory`` (created); a non-empty one needs ``force``.

    With ``force`` the scaffold's own files are overwritten and every other file is kept.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise SharedTaskError(f"{directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise SharedTaskError(f"{directory} is not empty; refusing to overwrite it",
                              hint="choose a new folder, or pass --force to overwrite the scaffold's files")
    submission = plan_submission(task, name or directory.resolve().name, rerank=rerank)
    for rel, text in submission.files.items():
        _write_atomic(directory / rel, text, 0o755 if rel == "run.py" else 0o644)
    return submission
