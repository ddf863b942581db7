"""Write TIRA's ir_datasets layout of a dataset folder from its native files.

Why: code written for TIRA reads ``$TIRA_INPUT_DATASET`` through
``tira.third_party_integrations.ir_datasets`` (``documents.jsonl[.gz]``, ``queries.jsonl``,
``queries.xml``), not args.me JSON or a statements corpus. A task that declares the layout
in its input contract (entries of role ``ir-layout``) gets it beside its native files,
with the same texts the baselines index and re-rankers receive (:mod:`sharedtask.rerank.texts`).
The writers are byte-stable (:mod:`sharedtask.formats.tira_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sharedtask.errors import SharedTaskError
from sharedtask.folders import output_folder
from sharedtask.formats.tira_layout import QUERIES_JSONL, write_documents, write_queries
from sharedtask.spec import Task

ROLE = "ir-layout"


@dataclass(frozen=True)
class LayoutSummary:
    folder: Path
    documents: int
    queries: int

    def to_json(self) -> dict[str, object]:
        return {"folder": str(self.folder), "documents": self.documents, "queries": self.queries}


def declares_layout(task: Task) -> bool:
    return bool(task.input.all(ROLE))


def write_ir_layout(task: Task, dataset: Path, out: Path | None = None) -> LayoutSummary:
    """Write the layout of ``dataset`` (a folder in the task's native layout) into ``out``
    (default: the dataset folder itself). A ``queries.jsonl`` that is also the task's native
    topics file keeps its ``id`` beside TIRA's ``qid``."""
    if not declares_layout(task):
        raise SharedTaskError(f"task {task.id} does not declare TIRA's ir_datasets layout",
                              hint="Touché Task 1 and mathlib4-search declare it (entries of role ir-layout)")
    from sharedtask.rerank.texts import iter_documents, topics

    folder = out or dataset
    topic_file = task.input.file("topics")
    native = topic_file is not None and topic_file.path == QUERIES_JSONL
    read = topics(task, dataset)  # read whole before queries.jsonl may be replaced
    with output_folder(folder):  # a new --output folder is removed again if the documents are refused
        queries = write_queries(folder, ((qid, t.text, t.original) for qid, t in read.items()), with_id=native)
        documents = write_documents(folder, ((doc_id, d.text, d.fields) for doc_id, d in iter_documents(task, dataset)))
    return LayoutSummary(folder, documents, queries)
