"""One declaration per task family, registered once (the pattern of ir_measures'
``register``: a measure module declares and registers at its foot; of ir_datasets: a
family is registered once and built from the format readers).

A family is what tasks of one kind share (``family:`` in tasks/*.yml): what its measures
score, how its run is scored, which ids of the dataset a run may name, what a re-ranker
reads, and the participant's scaffold. Code elsewhere asks the family (``get(task.family)``)
instead of switching on its name, so adding a family is one module here.

Hooks are "module:function" strings, imported on first use: the spec loader consults this
registry on every load, and the machinery behind a hook (readers, trec_eval, numpy) must not
load with it (tests/test_startup.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable

from sharedtask.measures import INPUTS

def resolve(ref: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` hook names (imported on first use)."""
    module, _, name = ref.partition(":")
    return getattr(import_module(module), name)


@dataclass(frozen=True)
class Family:
    """What tasks of one family share.

    - ``input``: what its measures score (``sharedtask.measures.INPUTS``); ``extra_inputs``:
      further inputs it provides (EXAM on Task 1 runs);
    - ``evaluator``: scores one run, ``(sharedtask.evaluate.api.Scoring) -> None``; ``qrels``:
      scored against relevance qrels (MathQA: against the suite's files);
    - ``strict_ranks``: the official scorer sorts by rank, so a rank/score disagreement or a
      repeated document is an error, not a warning (the validator's ranking rules);
    - ``known_ids``: the validator's keyword -> hook ``(task, dataset folder) -> ids | None``,
      the ids a run may name, read from the dataset (``validate --input``);
    - ``rerank_queries`` ``(task, topics file) -> {topic: Topic}`` and ``rerank_documents``
      ``(task, dataset folder, wanted ids) -> {id: Document}``: what a re-ranker reads;
    - ``corpus_documents`` ``(task, dataset folder) -> iterator of (id, Document)``: the whole
      corpus streamed, for TIRA's ir_datasets layout (``documents.jsonl``), where it exists;
    - ``assessment_topics`` ``(task, dataset folder) -> {topic: HTML}`` and ``assessment_items``
      ``(task, dataset folder, wanted ids) -> {item: HTML}``: what an assessor sees (the service);
    - ``template`` / ``approach``: the scaffold's run.py template and what it does.
    """

    name: str
    title: str
    input: str
    evaluator: str
    template: str
    approach: str
    extra_inputs: tuple[str, ...] = ()
    qrels: bool = True
    strict_ranks: bool = False
    known_ids: dict[str, str] = field(default_factory=dict)
    rerank_queries: str | None = None
    rerank_documents: str | None = None
    corpus_documents: str | None = None
    assessment_topics: str | None = None
    assessment_items: str | None = None

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every input its measures can score."""
        return (self.input, *self.extra_inputs)

    @property
    def reranks(self) -> bool:
        """Whether a re-ranker can read this family's texts."""
        return self.rerank_queries is not None and self.rerank_documents is not None


REGISTRY: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Declare a family (once per name)."""
    if family.name in REGISTRY:
        raise ValueError(f"family {family.name!r} is registered twice")
    unknown = [i for i in family.inputs if i not in INPUTS]
    if unknown:
        raise ValueError(f"family {family.name!r}: input must be one of {', '.join(INPUTS)}, not {unknown[0]!r}")
    if (family.rerank_queries is None) != (family.rerank_documents is None):
        raise ValueError(f"family {family.name!r}: give both rerank_queries= and rerank_documents=, or neither")
    REGISTRY[family.name] = family
    return family


def get(name: str) -> Family:
    """The family ``name`` (a KeyError naming the registered ones otherwise)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; registered: {', '.join(sorted(REGISTRY))}") from None
