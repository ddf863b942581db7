"""Semantic search over a statements corpus (mathlib4-search): JSON Lines queries and
statements, a plain TREC run scored with graded trec_eval measures."""

from __future__ import annotations

from sharedtask.families.base import Family, register

register(Family(
    name="semantic-search",
    title="mathlib4-search",
    input="trec-run",
    evaluator="sharedtask.evaluate.api:score_trec_run",
    rerank_queries="sharedtask.rerank.texts:statement_queries",
    rerank_documents="sharedtask.rerank.texts:statement_documents",
    corpus_documents="sharedtask.rerank.texts:statement_corpus",
    template="run_semantic_search.py",
    approach="term overlap of each statement's informal text with the query",
))
