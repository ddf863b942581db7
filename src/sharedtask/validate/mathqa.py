"""Validation of MathQA program runs (``mathqa-programs``): the file reads as programs for
the dataset's problems; each program parses and has a value (findings, never exceptions)."""

from __future__ import annotations

from pathlib import Path

from sharedtask.answers import Unevaluable, problem_numbers, run_program
from sharedtask.answers.programs import parse_program
from sharedtask.errors import FormatError
from sharedtask.formats.mathqa import Problem, read_problems, read_programs
from sharedtask.validate.model import Collector, RunStats, ValidationResult


def validate_programs(path: Path, task, input_dir: Path | None, limit_per_code: int = 200) -> ValidationResult:
    out = Collector(str(path), limit_per_code)
    problems: list[Problem] = []
    spec = task.input.file("topics")
    if input_dir is not None and spec is not None:
        problems = read_problems(Path(input_dir) / spec.path)
    stats = RunStats(bytes=path.stat().st_size, layout=task.output.format)
    try:
        run = read_programs(path, [p.number for p in problems] if problems else None)
    except FormatError as exc:
        out.report("RUN-PROGRAM-FILE", exc.detail, line=exc.location.line, column=exc.location.column,
                   hint=exc.hint)
        return _result(path, task, out, stats)
    stats.lines, stats.data_lines, stats.topics = run.lines, len(run.programs), len(run.programs)
    by_id = {p.number: p for p in problems}
    for number, program in run.programs.items():
        where = f"problem {number}"
        if by_id and number not in by_id:
            out.report("RUN-PROGRAM-UNKNOWN", f"{where}: not a problem of the dataset")
            continue
        if not program.strip():
            out.report("RUN-PROGRAM-MISSING", f"{where}: no program")
            continue
        try:
            steps = parse_program(program)
        except Unevaluable as exc:
            out.report("RUN-PROGRAM-SYNTAX", f"{where}: {exc}")
            continue
        if number in by_id:
            try:
                run_program(steps, problem_numbers(by_id[number].problem))
            except Unevaluable as exc:
                out.report("RUN-PROGRAM-UNEVALUABLE", f"{where}: {exc}")
    missing = [p.number for p in problems if p.number not in run.programs]
    if missing:
        out.report("RUN-PROGRAM-MISSING", f"{len(missing)} problem(s) have no program: {', '.join(missing[:10])}")
    if problems:
        stats.topics_expected, stats.topics_missing = len(problems), len(missing)
    return _result(path, task, out, stats)


def _result(path: Path, task, out: Collector, stats: RunStats) -> ValidationResult:
    return ValidationResult(path=path, task_id=task.id, run_format=task.output.format, findings=list(out.findings),
                            omitted=dict(out.omitted), stats=stats, valid=not out.has_errors)
