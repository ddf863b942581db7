"""The run validator: rules that turn a run file into findings.

Public API::

    result = validate(run_path, task, topics=None, input_dir=None, file_name=None)
    result.valid, result.findings, result.stats, result.to_json()
    find_run_file(path)          # a run file, or run.txt / run.txt.gz in a TIRA output dir
    fix_run(run_path, task, out_path) -> FixReport

Every finding carries a stable code from the catalogue (``sharedtask.findings.codes``,
rendered as docs/findings.md), which also fixes its severity and hint. The rules live
in structure.py (bytes and lines), fields.py (ids, ranks, scores), ranking.py (per
topic: duplicates, depth, ties, rank/score order), arqmath.py (collection ids, file
names) and engine.py (the pass, TIRA's run check); fastpath.py and columnar.py check
plain blocks of large runs on columns with numpy and leave every finding to the rules
above (docs/architecture.md, "The validator's two engines"). Everything the validator accepts in
a TREC 6-column layout passes TIRA's check (tests/test_validate_tira.py,
tests/test_validate_fuzz.py).

Memory: a run grouped by topic is validated with the current topic's lines plus the
set of topic ids seen (flat in the file size). An interleaved run is detected when a
topic reappears; the pass then restarts and keeps every topic's lines to the end (the
lines read before the interleaving was noticed are read twice). Either way at most the
task's bound of lines is kept (budget.py: max(topics × depth, 100,000), at most 500,000,
~620 bytes each); a run that needs more is refused with RUN-MEMORY-BOUND. ``--fix``
streams the same way.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from sharedtask import families
from sharedtask.findings import has_errors

from sharedtask.validate import arqmath, engine
from sharedtask.validate.fix import FixReport, fix_run
from sharedtask.validate.model import Collector, RunStats, ValidationResult
from sharedtask.formats.runfile import find_run_file
from sharedtask.validate.topics import topic_ids

__all__ = [
    "FixReport",
    "RunStats",
    "ValidationResult",
    "find_run_file",
    "fix_run",
    "load_topics",
    "validate",
]


def load_topics(task: Any, *, topics_file: Path | None = None, input_dir: Path | None = None) -> set[str] | None:
    """Topic ids from an explicit topics file, else from the input dataset's topics file."""
    spec = task.input.file("topics")
    fmt = spec.format if spec is not None else "arqmath-topics-xml"
    if topics_file is not None:
        return topic_ids(Path(topics_file), fmt)
    if input_dir is not None and spec is not None:
        files = arqmath.require(Path(input_dir), spec.path, "topics file")
        return topic_ids(files[0], fmt)
    return None


def validate(
    run_path: Path,
    task: Any,
    *,
    topics: set[str] | None = None,
    input_dir: Path | None = None,
    file_name: str | None = None,
    limit_per_code: int = 200,
    input_run: Path | None = None,
) -> ValidationResult:
    """Validate a run (file or TIRA output directory) against a task's output contract.

    ``topics`` defaults to the topics file of ``input_dir``; with ``input_dir`` ARQMath
    Task 1 post ids must be answers and Task 2 formula ids must be in the formula index.
    ``input_run`` is the stage a re-ranker read (a folder with ``rerank.jsonl.gz``): each
    document must be one of its topic's candidates (:mod:`sharedtask.rerank.check`).
    Raises SharedTaskError only when validation cannot run (missing file, bad input dir).
    """
    path = find_run_file(Path(run_path))
    if task.output.format == "mathqa-programs":  # programs, not a ranking: validate/mathqa.py
        from sharedtask.validate.mathqa import validate_programs

        return validate_programs(path, task, input_dir, limit_per_code)
    if topics is None and input_dir is not None:
        topics = load_topics(task, input_dir=input_dir)
    known: dict[str, Any] = {}  # the ids a run may name, read from the dataset by the task's family
    if input_dir is not None:
        for keyword, hook in families.get(task.family).known_ids.items():
            known[keyword] = families.resolve(hook)(task, Path(input_dir))
    result = engine.run(
        path,
        task,
        topics=topics,
        **known,
        file_name=file_name,
        limit_per_code=limit_per_code,
    )
    return _against_stage(result, input_run)


#: Findings after which the validator stopped reading the run (its memory or byte bound, issue 26).
_READ_IN_PART = frozenset({"RUN-MEMORY-BOUND", "RUN-TOO-LARGE", "RUN-LINE-TOO-LONG", "RUN-GZIP"})


def _against_stage(result: ValidationResult, input_run: Path | None) -> ValidationResult:
    """Add the re-ranking findings when the run was made from a stage's candidates."""
    from sharedtask.rerank import RERANK_FILE, check_reranked

    if input_run is None or not (Path(input_run) / RERANK_FILE).is_file() or not result.path.is_file():
        return result
    if result.codes() & _READ_IN_PART:
        return result  # the run was not read to its end: reading it again here would not be bounded
    extra = check_reranked(result.path, Path(input_run))
    if not extra:
        return result
    findings = result.findings + extra
    return replace(result, findings=findings, valid=result.valid and not has_errors(extra))


# Re-exported for the input checker and others that render findings the same way.
_ = Collector
