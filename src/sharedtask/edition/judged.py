"""A judged pool folder: the pool plus one qrels file per assessor (docs/assessment.md).

Layout::

    DIR/pool.json, DIR/pool.tsv        written by `sharedtask pool`
    DIR/judgments/NAME.qrels           assessor NAME: `topic 0 item grade`, one line per judged item
    DIR/judgments/NAME.quality.qrels   the same assessor's quality grades (tasks judged for quality)

The file's modification time stands for when its judgments were given (the service records
each judgment's own time). Every judged item must be in the pool: a judgment of anything
else is an error naming the file and line.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from sharedtask.edition.agreement import read_grades
from sharedtask.edition.pooling import Pool, read_pool
from sharedtask.edition.qrels import Judgment
from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.formats.trec import read_qrels

JUDGMENTS = "judgments"


def assessor_files(folder: Path) -> dict[str, Path]:
    """{assessor: relevance qrels file} of a judged pool folder."""
    found = sorted((Path(folder) / JUDGMENTS).glob("*.qrels"))
    out = {p.name[:-len(".qrels")]: p for p in found if not p.name.endswith(".quality.qrels")}
    if not out:
        raise SharedTaskError(f"{folder}: no judgments/NAME.qrels files",
                              hint="one qrels file per assessor: judgments/NAME.qrels (topic 0 item grade)")
    return out


def read_judged_folder(folder: Path) -> tuple[Pool, list[Judgment]]:
    pool = read_pool(folder)
    judgments: list[Judgment] = []
    for name, path in assessor_files(folder).items():
        when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
        for row in read_qrels(path):
            if row.doc not in pool.topics.get(row.topic, {}):
                raise FormatError(path, f"item {row.doc} of topic {row.topic} is not in the pool", line=row.line,
                                  hint=f"judge the items of {folder / 'pool.tsv'}")
        grades = read_grades(path)
        quality_path = path.with_name(f"{name}.quality.qrels")
        quality = read_grades(quality_path) if quality_path.is_file() else {}
        for (topic, item), grade in grades.items():
            judgments.append(Judgment(topic, item, name, grade, quality.get((topic, item)), when))
    return pool, judgments
