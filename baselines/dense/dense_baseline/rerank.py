"""Dense re-ranking of a first stage: the candidates of ``$inputRun/rerank.jsonl.gz``
(one JSON object per line: qid, query, docno, text, rank, score; docs/formats.md),
scored by the cosine of their WordLlama vectors with the query's, exactly as the full
dense run scores them (quantised vectors, ties by doc id descending). No index is built
and the corpus is never read: the re-ranker sees only what the first stage handed over.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import NamedTuple

from dense_baseline import encode
from dense_baseline.search import Hits, TopK

RERANK_FILE = "rerank.jsonl.gz"


def stage_file(input_run: str | None) -> Path:
    folder = input_run or os.environ.get("inputRun")
    if not folder:
        raise SystemExit("error: --mode rerank needs the first stage at $inputRun (sharedtask run --input-run DIR)")
    path = Path(folder) / RERANK_FILE
    if not path.is_file():
        raise SystemExit(f"error: {path} does not exist: $inputRun must be a re-ranking stage (docs/pipelines.md)")
    return path


class Candidate(NamedTuple):
    query: str
    docno: str
    text: str
    fields: dict[str, str]  # the text by field; {"text": text} when the line has none


def read_candidates(path: Path) -> dict[str, list[Candidate]]:
    """qid -> its candidates in the file's order (the first stage's rank order)."""
    out: dict[str, list[Candidate]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            try:
                obj = json.loads(line)
                fields = obj.get("fields") or {"text": obj["text"]}
                out.setdefault(str(obj["qid"]), []).append(Candidate(
                    str(obj["query"]), str(obj["docno"]), str(obj["text"]),
                    {str(k): str(v) for k, v in fields.items()}))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise SystemExit(f"error: {path}:{lineno}: not a re-ranking line ({exc})") from None
    return out


def rerank_hits(path: Path, queries: list[tuple[str, str]], hits: int) -> tuple[list[Hits], int]:
    """Each query's candidates re-scored (queries without candidates get none); and the count."""
    candidates = read_candidates(path)
    model = encode.load()
    out: list[Hits] = []
    count = 0
    for qid, query in queries:
        rows = candidates.get(qid, [])
        if not rows:
            out.append([])
            continue
        top = TopK(encode.embed(model, [query or rows[0].query]), hits)
        top.add(encode.embed(model, [c.text for c in rows]), [c.docno for c in rows])
        out.append(top.hits()[0])
        count += len(rows)
    return out, count
