"""Semantic search over a statements corpus (mathlib4-search): JSON Lines queries and
statements, a plain TREC run scored with graded trec_eval measures."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.families.base import Family, register

if TYPE_CHECKING:
    from sharedtask.rerank.texts import Document
    from sharedtask.spec import Task


def query_texts(task: Task, dataset: Path) -> dict[str, str]:
    """Query id -> the query."""
    from sharedtask.formats.jsonl import read_queries
    from sharedtask.rerank.texts import dataset_files

    return {q.number: q.query for q in read_queries(dataset_files(task, dataset, "topics")[0])}


def document_texts(task: Task, dataset: Path, want: Collection[str]) -> dict[str, Document]:
    """A statement's name, informal text and formal statement."""
    from sharedtask.formats.jsonl import read_statements
    from sharedtask.rerank.texts import Document, dataset_files

    out: dict[str, Document] = {}
    for path in dataset_files(task, dataset, "corpus"):
        for s in read_statements(path):
            if s.id in want:
                out[s.id] = Document(" ".join(x for x in (s.name, s.informal, s.formal) if x).strip(),
                                     {"name": s.name, "informal": s.informal, "formal": s.formal})
    return out


register(Family(
    name="semantic-search",
    title="mathlib4-search",
    input="trec-run",
    evaluator="sharedtask.evaluate.api:score_trec_run",
    rerank_queries=f"{__name__}:query_texts",
    rerank_documents=f"{__name__}:document_texts",
    template="run_semantic_search.py",
    approach="term overlap of each statement's informal text with the query",
))
