"""The mathlib4-search sample (semantic-search family): a statements corpus, informal
queries and graded qrels, rendered from ``themes/mathlib.yml`` (docs/formats.md,
"Semantic search")."""

from __future__ import annotations

import json

from sharedtask.samples.registry import register
from sharedtask.samples.themes import _load


def _line(obj: dict[str, str]) -> str:
    """One JSON Lines record: keys in a fixed order, non-ASCII kept (the corpus is UTF-8)."""
    return json.dumps(obj, ensure_ascii=False) + "\n"


@register("mathlib4-search")
def mathlib4_sample() -> dict[str, str]:
    """input/corpus.jsonl, input/queries.jsonl, truth/qrels.txt (0 irrelevant, 1 partial, 2 exact)."""
    theme = _load("mathlib")
    corpus = "".join(_line({"id": s["id"], "name": s["name"], "formal": s["formal"], "informal": s["informal"]})
                     for s in theme["statements"])
    queries = "".join(_line({"id": q["id"], "query": q["query"]}) for q in theme["queries"])
    known = {s["id"] for s in theme["statements"]}
    qrels = []
    for q in theme["queries"]:
        for doc, grade in q["judgments"].items():
            if doc not in known:
                raise ValueError(f"themes/mathlib.yml: query {q['id']} judges unknown statement {doc!r}")
            qrels.append(f"{q['id']} 0 {doc} {grade}\n")
    return {"input/corpus.jsonl": corpus, "input/queries.jsonl": queries, "truth/qrels.txt": "".join(qrels)}
