"""Pipelines: a re-ranker reads a previous stage's candidates instead of building its own index.

The flow (docs/pipelines.md): a first stage's valid run → its top ``depth`` per topic
(:mod:`.candidates`) → each candidate's text from the task's corpus (:mod:`.texts`) →
``rerank.jsonl.gz`` beside the run in the directory mounted as ``$inputRun``
(:mod:`.inputs`) → the re-ranker's run, checked against what it was handed (:mod:`.check`).
"""

from sharedtask.rerank.candidates import Candidate, top_candidates
from sharedtask.rerank.check import check_reranked
from sharedtask.rerank.inputs import (RERANK_FILE, RerankSummary, prepare_stage, read_rerank_input, stage_for,
                                      summarize, write_rerank_input)

__all__ = ["Candidate", "RERANK_FILE", "RerankSummary", "check_reranked", "prepare_stage", "read_rerank_input",
           "stage_for", "summarize", "top_candidates", "write_rerank_input"]
