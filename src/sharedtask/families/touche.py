"""Touché argument retrieval (Task 1): a plain TREC run over args.me, scored as the
organizers' clef21/evaluate.py scores it, which sorts by rank (so ranks and scores must agree)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.families.base import Family, register

if TYPE_CHECKING:
    from sharedtask.rerank.texts import Document
    from sharedtask.spec import Task


def query_texts(task: Task, dataset: Path) -> dict[str, str]:
    """Topic id -> the topic's title."""
    from sharedtask.formats.touche import read_touche_topics
    from sharedtask.rerank.texts import dataset_files

    return {t.number: t.title for t in read_touche_topics(dataset_files(task, dataset, "topics")[0])}


def document_texts(task: Task, dataset: Path, want: Collection[str]) -> dict[str, Document]:
    """An argument's conclusion followed by its premises (the text the BM25 and dense baselines index)."""
    from sharedtask.formats.argsme import read_argsme
    from sharedtask.rerank.texts import Document, dataset_files

    out: dict[str, Document] = {}
    for path in dataset_files(task, dataset, "corpus"):
        for arg in read_argsme(path):
            if arg.id in want and arg.id not in out:
                premises = [p.text for p in arg.premises]
                out[arg.id] = Document(" ".join([arg.conclusion, *premises]),
                                       {"conclusion": arg.conclusion, "premises": " ".join(premises)})
    return out


register(Family(
    name="touche",
    title="Touché Task 1",
    input="trec-run",
    evaluator="sharedtask.evaluate.api:score_trec_run",
    strict_ranks=True,
    rerank_queries=f"{__name__}:query_texts",
    rerank_documents=f"{__name__}:document_texts",
    template="run_touche.py",
    approach="term overlap of each argument with the topic title, one streamed pass over args.me",
))
