"""Does a dataset folder satisfy a task's input contract?

Every contract entry must match its file(s); every matched file must parse with
its official reader from start to end (a full streaming pass, so a truncated
corpus is caught), and the topic ids must fit the task's topic pattern.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.findings.codes import finding
from sharedtask.findings import Finding, Severity
from sharedtask.spec import InputFile, Task


@dataclass
class FileCheck:
    """The verdict on one contract entry (one file or one glob)."""

    entry: InputFile
    files: list[Path] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    status: str = "ok"  # ok | missing | optional-missing | invalid
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.entry.path,
            "format": self.entry.format,
            "role": self.entry.role,
            "required": self.entry.required,
            "files": [str(p) for p in self.files],
            "records": self.records,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "status": self.status,
            "message": self.message,
        }


@dataclass
class InputReport:
    task: Task
    directory: Path
    checks: list[FileCheck]
    findings: list[Finding]
    topics: list[str]

    @property
    def valid(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task.id,
            "directory": str(self.directory),
            "valid": self.valid,
            "files": [c.to_json() for c in self.checks],
            "topics": len(self.topics),
            "findings": [f.to_json() for f in self.findings],
        }


def check_input(
    task: Task,
    directory: Path,
    *,
    on_file: Callable[[InputFile, Path], None] | None = None,
) -> InputReport:
    """Check ``directory`` against ``task.input``; ``on_file`` reports progress."""
    from sharedtask import formats

    if not directory.is_dir():
        raise SharedTaskError(f"dataset folder not found: {directory}", hint="give the folder that $inputDataset will point to")
    checks: list[FileCheck] = []
    findings: list[Finding] = []
    topics: list[str] = []
    layout_topics: dict[Path, list[str]] = {}  # TIRA's ir_datasets layout: its topics must be the task's
    for entry in task.input.files:
        check = FileCheck(entry, entry.matches(directory))
        checks.append(check)
        if not check.files:
            if entry.required:
                check.status = "missing"
                check.message = f"no file matches {entry.path}"
                findings.append(finding("INPUT-MISSING", f"required {entry.format} file {entry.path} is missing",
                                        path=str(directory / entry.path), hint=f"put the task's {entry.role} file at {entry.path} ({entry.description})"))
            else:
                check.status = "optional-missing"
                check.message = "optional, not present"
            continue
        started = time.perf_counter()
        for path in check.files:
            if on_file:
                on_file(entry, path)
            check.bytes += path.stat().st_size
            try:
                check.records += formats.count_records(entry.format, path)
                if entry.role == "topics":
                    topics.extend(formats.read_topic_ids(entry.format, path))
                elif entry.role == "ir-layout" and entry.format in formats.TOPIC_FORMATS:
                    layout_topics[path] = formats.read_topic_ids(entry.format, path)
            except FormatError as exc:
                check.status = "invalid"
                check.message = exc.detail
                loc = exc.location
                findings.append(finding("INPUT-FORMAT", exc.detail, path=loc.path, line=loc.line,
                                        column=loc.column, hint=exc.hint))
            except OSError as exc:
                check.status = "invalid"
                check.message = exc.strerror or str(exc)
                findings.append(finding("INPUT-UNREADABLE", f"cannot read: {check.message}", path=str(path)))
        check.seconds = time.perf_counter() - started
        if check.status == "ok" and check.records == 0:
            check.status = "invalid"
            check.message = "no records"
            findings.append(finding("INPUT-EMPTY", f"{entry.path} holds no records", path=str(check.files[0])))
    findings += _topic_findings(task, directory, topics)
    findings += _layout_findings(checks, topics, layout_topics)
    return InputReport(task, directory, checks, findings, topics)


def _layout_findings(checks: list[FileCheck], topics: list[str], layout_topics: dict[Path, list[str]]) -> list[Finding]:
    """TIRA's layout must hold the native files' topics (same ids, same order) and as many
    documents as the corpus: a stale or partial layout would give a TIRA-style run other input."""
    out: list[Finding] = []
    for path, ids in layout_topics.items():
        if ids != topics:
            extra = [t for t in ids if t not in set(topics)]
            lost = [t for t in topics if t not in set(ids)]
            what = (f"{len(extra)} topic(s) not in the task's topics file ({', '.join(extra[:3])})" if extra else
                    f"{len(lost)} of the task's topic(s) missing ({', '.join(lost[:3])})" if lost else
                    "the task's topics in another order")
            out.append(finding("INPUT-FORMAT", f"{path.name} (TIRA's layout) holds {what}", path=str(path),
                               hint="write the layout again from the native files (sharedtask data ir-layout)"))
    corpora = [c for c in checks if c.entry.role == "corpus" and c.files]
    if any(c.status != "ok" for c in corpora):  # already reported: its count means nothing
        return out
    corpus = sum(c.records for c in corpora)
    for c in checks:
        if c.entry.role == "ir-layout" and c.entry.format == "tira-documents-jsonl" and c.status == "ok" \
                and c.records != corpus:
            out.append(finding("INPUT-FORMAT", f"{c.entry.path} (TIRA's layout) holds {c.records} documents, "
                               f"the corpus {corpus}", path=str(c.files[0]),
                               hint="write the layout again from the native files (sharedtask data ir-layout)"))
    return out


def _topic_findings(task: Task, directory: Path, topics: list[str]) -> list[Finding]:
    entry = task.input.file("topics")
    where = str(directory / entry.path) if entry else None
    out: list[Finding] = []
    pattern = task.output.pattern("topic")
    bad = [t for t in topics if pattern and not pattern.fullmatch(t)]
    if bad:
        out.append(finding("INPUT-TOPIC-ID", f"{len(bad)} topic id(s) do not match {pattern.pattern}: {', '.join(bad[:5])}",
                           path=where, hint=f"is this the topics file of {task.id}?"))
    seen: set[str] = set()
    dupes = sorted({t for t in topics if t in seen or seen.add(t)})  # type: ignore[func-returns-value]
    if dupes:
        out.append(finding("INPUT-TOPIC-DUPLICATE", f"duplicate topic id(s): {', '.join(dupes[:5])}", path=where))
    return out
