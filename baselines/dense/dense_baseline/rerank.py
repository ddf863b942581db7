"""Dense re-ranking of a first stage: the candidates of ``$inputDataset/rerank.jsonl.gz``,
the re-rank dataset in TIREx's layout (one JSON object per line: qid, query, original_query,
docno, text, original_document, rank, score, fields; docs/pipelines.md), scored by the
cosine of their WordLlama vectors with the query's, exactly as the full dense run scores
them (quantised vectors, ties by doc id descending). No index is built and the corpus is
never read: the re-ranker sees only what the first stage handed over.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import NamedTuple

from lucene_baseline.arqmath import topic_query
from lucene_baseline.jsonl import clean_query
from sharedtask.formats.arqmath import ArqmathTopic

from dense_baseline import encode
from dense_baseline.search import Hits, TopK

RERANK_FILE = "rerank.jsonl.gz"
#: the task family by the fields of a candidate (rerank/texts.py in sharedtask writes them)
FAMILIES = {("conclusion", "premises"): "touche", ("body", "title"): "arqmath-task1",
            ("formal", "informal", "name"): "semantic-search"}


def stage_file(dataset: str | Path, input_run: str | None = None) -> Path:
    """The candidates: ``$inputDataset/rerank.jsonl.gz`` (TIREx's re-rank dataset), else
    ``$inputRun/rerank.jsonl.gz`` (a stage mounted alone, as sharedtask did before)."""
    folders = [Path(dataset), *(Path(f) for f in (input_run or os.environ.get("inputRun"),) if f)]
    for folder in folders:
        if (folder / RERANK_FILE).is_file():
            return folder / RERANK_FILE
    raise SystemExit(f"error: {folders[0] / RERANK_FILE} does not exist: run this mode as a re-ranker "
                     "(sharedtask run --input-run DIR; docs/pipelines.md)")


def family(path: Path) -> str:
    """The task family of a re-ranking input, from its first candidate's fields."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        first = handle.readline()
    try:
        keys = tuple(sorted(json.loads(first).get("fields") or {}))
    except (json.JSONDecodeError, AttributeError) as exc:
        raise SystemExit(f"error: {path}:1: not a re-ranking line ({exc})") from None
    if keys not in FAMILIES:
        raise SystemExit(f"error: {path}:1: fields {list(keys)} are not those of a known task family")
    return FAMILIES[keys]


def queries(path: Path, task: str) -> list[tuple[str, str]]:
    """(qid, query) in the file's order, as the full-rank run reads its topics file: the same
    query text, so that a candidate's score is its full-rank score."""
    out: dict[str, str] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            qid = str(obj["qid"])
            if qid in out:
                continue
            original = obj.get("original_query") or {}
            if task == "arqmath-task1" and "question" in original:
                topic = ArqmathTopic(qid, str(original["title"]), str(original["question"]),
                                     tuple(t for t in str(original.get("tags", "")).split(",") if t), None, None)
                out[qid] = topic_query(topic)
            else:
                out[qid] = clean_query(str(obj["query"]))
    return list(out.items())


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
