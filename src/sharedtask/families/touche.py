"""Touché argument retrieval (Task 1): a plain TREC run over args.me, scored as the
organizers' clef21/evaluate.py scores it, which sorts by rank (so ranks and scores must agree)."""

from __future__ import annotations

from sharedtask.families.base import Family, register

register(Family(
    name="touche",
    title="Touché Task 1",
    input="trec-run",
    evaluator="sharedtask.evaluate.api:score_trec_run",
    strict_ranks=True,
    rerank_queries="sharedtask.rerank.texts:touche_queries",
    rerank_documents="sharedtask.rerank.texts:touche_documents",
    corpus_documents="sharedtask.rerank.texts:touche_corpus",
    template="run_touche.py",
    approach="term overlap of each argument with the topic title, one streamed pass over args.me",
    assessment_topics="sharedtask.service.assessment.documents:touche_topics_html",
    assessment_items="sharedtask.service.assessment.documents:argument_items_html",
))
