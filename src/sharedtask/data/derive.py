"""Dataset files built from other files of the same dataset.

Why: the MathQA evaluation suite publishes only its JSON files (the truth); the task's input
(``problems.jsonl``: id, problem text, options) is the same problems without their answers.
Building it from the suite's file, once that file is placed and checked, gives the official
sets an input, so ``validate --input`` can read a run of one program per line against them.
The bytes are fixed (key order, separators, ASCII escapes), so the registry pins their sha256.
"""

from __future__ import annotations

import json
from pathlib import Path

from sharedtask.formats.mathqa import read_gold


def mathqa_problems(gold: Path, dest: Path) -> None:
    """``problems.jsonl`` from the suite's JSON: ids are 1-based positions, as the truth's."""
    with open(dest, "w", encoding="utf-8", newline="\n") as out:
        for p in read_gold(gold):
            out.write(json.dumps({"id": p.number, "problem": p.problem, "options": p.options}) + "\n")


BUILDERS = {"mathqa-problems-jsonl": mathqa_problems}
