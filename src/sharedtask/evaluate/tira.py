"""TIRA evaluator mode: ``$inputRun`` (a run directory) + ``$inputDataset`` (the truth)
-> ``$outputDir/evaluation.prototext``, so that the same code runs as TIRA's evaluator.

The TIRA contract (docs/task-contract.md, "The execution contract"):
the software's output folder holds ``run.txt`` (or ``run.txt.gz``) at its top and may
also hold hidden files such as ``.tracking-results.yml``, which we ignore.
"""

from __future__ import annotations

import os
from pathlib import Path

from sharedtask.errors import SharedTaskError
from sharedtask.formats.runfile import find_run_file
from sharedtask.evaluate.api import evaluate
from sharedtask.evaluate.prototext import write_prototext
from sharedtask.evaluate.result import EvaluationResult

#: Where each path comes from when not given: TIRA's placeholders, then its TIRA_* variables.
ENVIRONMENT = {
    "input_run": ("inputRun",),
    "input_dataset": ("inputDataset", "TIRA_INPUT_DATASET"),
    "output_dir": ("outputDir", "TIRA_OUTPUT_DIR"),
}


def from_environment(name: str) -> Path | None:
    for variable in ENVIRONMENT[name]:
        value = os.environ.get(variable)
        if value:
            return Path(value)
    return None


def evaluate_tira(task, input_run: Path | None = None, input_dataset: Path | None = None,
                  output_dir: Path | None = None) -> tuple[EvaluationResult, Path]:
    """Evaluate a TIRA run directory against the truth dataset; write the prototext."""
    input_run = input_run or from_environment("input_run")
    input_dataset = input_dataset or from_environment("input_dataset")
    output_dir = output_dir or from_environment("output_dir")
    missing = [n for n, v in (("$inputRun", input_run), ("$inputDataset", input_dataset),
                              ("$outputDir", output_dir)) if v is None]
    if missing:
        raise SharedTaskError(f"TIRA evaluator mode needs {', '.join(missing)}",
                              hint="set the variables or give --input-run/--input-dataset/--output-dir")
    if isinstance(task, str):
        from sharedtask.spec import load_task

        task = load_task(task)
    run_file = find_run_file(input_run, task.output.file, any_single_file=True)
    # The truth folder holds the qrels and whatever the task needs (formulas/ for Task 2).
    result = evaluate(run_file, task, truth_dir=input_dataset, input_dir=input_dataset, per_topic=False,
                      run_name=Path(input_run).name)
    return result, write_prototext(result, output_dir)
