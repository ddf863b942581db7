"""The run validator: rules that turn a run file into findings.

Public API::

    result = validate(run_path, task, topics=None, input_dir=None, file_name=None)
    result.valid, result.findings, result.stats, result.to_json()
    find_run_file(path)          # a run file, or run.txt / run.txt.gz in a TIRA output dir
    fix_run(run_path, task, out_path) -> FixReport

Severity rule (issue 3): what TIRA, trec_eval or the task's official scorer would
reject or silently misread is an error; legal but risky is a warning; facts worth
knowing (e.g. TIRA cannot check this layout) are info. Codes are stable:

structure (structure.py)
  E RUN-BOM RUN-CR (lone CR) RUN-CONTROL-CHAR RUN-ENCODING (not UTF-8, byte position)
    RUN-UNICODE-SPACE RUN-BLANK-LINE RUN-COMMENT RUN-COLUMNS RUN-SEPARATOR (ARQMath: tabs)
    RUN-SPACE-IN-FIELD RUN-EMPTY-FIELD RUN-GZIP RUN-EMPTY
  W RUN-CRLF RUN-TRAILING-WHITESPACE RUN-LEADING-WHITESPACE RUN-MIXED-SEPARATORS
    RUN-NO-FINAL-NEWLINE
fields (fields.py)
  E RUN-RANK (not an integer) RUN-SCORE RUN-SCORE-NONFINITE RUN-SCORE-FORMAT (1_0, non-ASCII
    digits: Python and C read them differently) RUN-SCORE-RANGE RUN-DOC-ID RUN-POST-ID RUN-TOPIC-ID
  W RUN-RANK-FORMAT (+1, 01) RUN-SCORE-SCIENTIFIC RUN-Q0 RUN-TAG RUN-TAG-MIXED
ranking, per topic (ranking.py)
  E RUN-DUPLICATE-DOC RUN-DEPTH RUN-UNKNOWN-TOPIC; Touché only: RUN-RANK-SCORE, RUN-RANK-DUPLICATE
  W RUN-TIE RUN-FLOAT32-TIE RUN-RANK-START RUN-RANK-GAP RUN-RANK-ORDER RUN-SCORE-ORDER
    RUN-MISSING-TOPICS RUN-INTERLEAVED; elsewhere: RUN-RANK-SCORE, RUN-RANK-DUPLICATE
TIRA's run.txt check (tira.check_format.RunFormat, tira 0.0.207)
  E RUN-TIRA-MIN-LINES (< 5) RUN-TIRA-MIN-TOPICS (< 3) RUN-TIRA-SIZE (> 75 MB)
  I RUN-TIRA-LAYOUT: the check needs exactly 6 whitespace-separated columns with an integer
    in column 4, so it can never accept ARQMath Task 1's official 5-column layout nor Task 3
    (answers hold spaces); Task 1's 6-column TREC variant (I RUN-LAYOUT-VARIANT) passes.
  W RUN-TIRA-DUPLICATE-POST: Task 2 may list several formulas of one post, but TIRA reads
    column 3 (the post id) as docno and rejects repeats.
  Everything else the validator accepts in a TREC 6-column layout passes TIRA's check
  (tests/test_validate_tira.py, tests/test_validate_fuzz.py).
ARQMath (arqmath.py, ranking.py)
  E RUN-NOT-ANSWER (Task 1, with --input) RUN-UNKNOWN-FORMULA (Task 2, with --input)
    RUN-ANSWER-COUNT RUN-ANSWER-LENGTH RUN-ANSWER-EMPTY (Task 3)
  W RUN-ANSWER-RANK RUN-ANSWER-DOLLAR (Task 3) RUN-FILE-NAME RUN-FILE-NAME-CASE
  I RUN-TOPICS-UNCHECKED

Memory: a run grouped by topic is validated with the current topic's lines plus the
set of topic ids seen (flat in the file size). An interleaved run is detected when a
topic reappears; the pass then restarts and keeps every topic's lines to the end:
correct, but memory grows with the run (~550 bytes per line: 550 MB peak RSS for a
1M-line interleaved args.me run; 666 MB before the rows were stored flat) and the lines
read before the interleaving was noticed are read twice. ``--fix`` streams the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sharedtask.validate import arqmath, engine
from sharedtask.validate.fix import FixReport, fix_run
from sharedtask.validate.model import Collector, RunStats, ValidationResult
from sharedtask.runfile import find_run_file
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
) -> ValidationResult:
    """Validate a run (file or TIRA output directory) against a task's output contract.

    ``topics`` defaults to the topics file of ``input_dir``; with ``input_dir`` ARQMath
    Task 1 post ids must be answers and Task 2 formula ids must be in the formula index.
    Raises SharedTaskError only when validation cannot run (missing file, bad input dir).
    """
    path = find_run_file(Path(run_path))
    if topics is None and input_dir is not None:
        topics = load_topics(task, input_dir=input_dir)
    answers = formulas = None
    if input_dir is not None:
        dataset = Path(input_dir)
        if task.family == "arqmath-task1":
            posts = task.input.file("posts")
            if posts is not None:
                answers = arqmath.answer_ids(arqmath.require(dataset, posts.path, "posts file")[0])
        elif task.family == "arqmath-task2":
            spec = task.input.file("formulas")
            if spec is not None:
                formulas = arqmath.formula_ids(arqmath.require(dataset, spec.path, "formula index"))
    return engine.run(
        path,
        task,
        topics=topics,
        answer_ids=answers,
        formula_ids=formulas,
        file_name=file_name,
        limit_per_code=limit_per_code,
    )


# Re-exported for the input checker and others that render findings the same way.
_ = Collector
