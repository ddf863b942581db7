"""The query and document texts of a task's dataset, as a re-ranker receives them.

Each document comes as one text and by field (for re-rankers that weigh fields, such as
BM25F). One reading per task family, declared by the family (``sharedtask.families``: its
``rerank_queries`` and ``rerank_documents``), from the task's input contract (its ``topics``,
``corpus`` and ``posts`` files); the corpus is streamed once and only the texts of the
wanted documents are kept, so memory is bounded by the candidates, not the corpus.

- Touché: the topic's title; an argument's conclusion followed by its premises (the text
  the BM25 and dense baselines index).
- ARQMath Task 1: the topic's title and question; an answer's body, each as readable
  text with formulae in ``$…$``, preceded by its question's title (as the BM25 baseline
  indexes an answer). The titles take a second pass over Posts.xml, which ends as soon as
  every question asked for is found (the dumps list posts by id, questions before answers).
- semantic search (mathlib4): the query; a statement's name, informal text and formal
  statement.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from sharedtask import families
from sharedtask.errors import SharedTaskError
from sharedtask.families import Family
from sharedtask.spec import Task


def dataset_files(task: Task, dataset: Path, role: str) -> list[Path]:
    """The dataset's files of the input ``role`` (a one-line error when there are none)."""
    entries = task.input.all(role)
    found = [p for entry in entries for p in entry.matches(dataset)]
    if not found:
        wanted = ", ".join(e.path for e in entries) or role
        raise SharedTaskError(f"{dataset} holds no {role} file of task {task.id} ({wanted})",
                              hint="pass the task's dataset folder (the one mounted as $inputDataset)")
    return found


def supports(task: Task) -> bool:
    return families.get(task.family).reranks


def _family(task: Task) -> Family:
    family = families.get(task.family)
    if not family.reranks:
        titles = [f.title for f in families.rerankable()]
        raise SharedTaskError(f"task {task.id} ({task.family}) has no re-ranking input",
                              hint=f"re-ranking inputs exist for {', '.join(titles[:-1])} and {titles[-1]}")
    return family


def query_texts(task: Task, dataset: Path) -> dict[str, str]:
    """Topic id → the query text a re-ranker reads (the family's ``rerank_queries``)."""
    return families.resolve(_family(task).rerank_queries)(task, dataset)


class Document(NamedTuple):
    """A candidate's text as one string (what the baselines index) and by field, in order."""

    text: str
    fields: dict[str, str]


def document_texts(task: Task, dataset: Path, wanted: Collection[str]) -> dict[str, Document]:
    """Document id → its text and fields, for the ``wanted`` ids found in the corpus (missing ids
    are left out; the family's ``rerank_documents``)."""
    return families.resolve(_family(task).rerank_documents)(task, dataset, set(wanted))
