"""The BM25F re-ranker of the dense baseline image, on candidates written by hand; every
expected score is worked out below from the formula (Robertson, Zaragoza and Taylor, CIKM
2004; Lucene's idf; k1 = 0.9, b = 0.4), not taken from the code."""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
for folder in ("lucene", "dense"):
    sys.path.insert(0, str(REPO / "baselines" / folder))

from dense_baseline.bm25f import bm25f_hits, terms  # noqa: E402


def stage(tmp_path: Path, rows: list[tuple[str, str, dict[str, str]]]) -> Path:
    path = tmp_path / "rerank.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for rank, (qid, doc, fields) in enumerate(rows, 1):
            handle.write(json.dumps({"qid": qid, "query": "", "docno": doc, "text": " ".join(fields.values()),
                                     "rank": rank, "score": 0.0, "fields": fields}) + "\n")
    return path


A = {"conclusion": "Cats", "premises": "dogs, dogs"}  # lengths 1 and 2
B = {"conclusion": "dogs", "premises": "the cats birds fish"}  # lengths 1 and 3 ("the" is a stopword)


def test_scores_by_hand(tmp_path: Path) -> None:
    path = stage(tmp_path, [("1", "A", A), ("1", "B", B), ("2", "A", A), ("2", "B", B), ("3", "A", A), ("3", "B", B)])
    got, count = bm25f_hits(path, [("1", "cats"), ("2", "dogs"), ("3", "fish cats")], 10, "touche")
    assert count == 6
    # pool: N = 2 documents; mean lengths: conclusion 1, premises 2.5
    idf2 = math.log(1 + (2 - 2 + 0.5) / (2 + 0.5))  # a term in both documents
    idf1 = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))  # a term in one
    norm_a, norm_b = 0.6 + 0.4 * 2 / 2.5, 0.6 + 0.4 * 3 / 2.5  # premises normalisation of A and B
    cats_a = 2.0 * 1 / 1.0  # conclusion weight 2, its length equals the mean
    cats_b = 1.0 * 1 / norm_b
    dogs_a = 1.0 * 2 / norm_a
    dogs_b = 2.0 * 1 / 1.0
    sat = lambda tf: tf / (0.9 + tf)  # noqa: E731
    assert got[0] == [("A", pytest.approx(idf2 * sat(cats_a), abs=1e-12)),
                      ("B", pytest.approx(idf2 * sat(cats_b), abs=1e-12))]
    assert got[1] == [("A", pytest.approx(idf2 * sat(dogs_a), abs=1e-12)),
                      ("B", pytest.approx(idf2 * sat(dogs_b), abs=1e-12))]
    fish_b = idf1 * sat(1.0 / norm_b)
    assert got[2] == [("B", pytest.approx(fish_b + idf2 * sat(cats_b), abs=1e-12)),
                      ("A", pytest.approx(idf2 * sat(cats_a), abs=1e-12))]


def test_ties_go_by_doc_id_descending_and_topics_without_candidates_stay_empty(tmp_path: Path) -> None:
    same = {"conclusion": "x", "premises": "y"}
    path = stage(tmp_path, [("1", "d1", same), ("1", "d3", same), ("1", "d2", same)])
    got, _ = bm25f_hits(path, [("1", "x"), ("9", "x")], 2, "touche")
    assert [doc for doc, _ in got[0]] == ["d3", "d2"] and got[1] == []


def test_terms() -> None:
    assert terms("The Prime-numbers ARE infinite, n≥2 x_1") == ["prime", "numbers", "infinite", "n", "2", "x", "1"]
