"""The documents and queries of each task family, as (id, text) pairs.

Touché and ARQMath Task 1 reuse the Lucene baseline's converters (the same text BM25
indexes, so dense and BM25 rank the same documents); the mathlib4 statements are read
from their JSON Lines file here (name + informal restatement + formal statement).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from lucene_baseline import arqmath, touche
from lucene_baseline.jsonl import ShardedJsonl, clean_query, json_line


def detect_task(data: Path) -> str:
    """The task family from the dataset's files (no two families share a file name)."""
    if (data / "corpus.jsonl").is_file() and (data / "queries.jsonl").is_file():
        return "semantic-search"
    if (data / "Posts.xml").is_file() or (data / "Posts.xml.gz").is_file():
        return "arqmath-task1"
    if any((data / f"{name}.json{gz}").is_file() for name in ("debateorg", "parliamentary") for gz in ("", ".gz")):
        return "touche"
    raise SystemExit(f"error: {data} holds no mathlib4 corpus.jsonl, ARQMath Posts.xml or args.me corpus")


def _jsonl_lines(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8-sig") as handle:
        for lineno, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"error: {path}:{lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None


def statement_text(obj: dict) -> str:
    """What a statement is embedded and indexed as: the informal name and text, then the formal one."""
    # the empty fields are left out (an empty informal text left a double space), exactly as
    # sharedtask's re-ranking input joins them (rerank/texts.py): a re-ranked score is the full run's
    return " ".join(text for key in ("name", "informal", "formal") if (text := str(obj.get(key) or ""))).strip()


#: a Lean name or any word: letters, digits, ``_``, ``.``, ``'`` and the Unicode letters Lean allows
_NAME = re.compile(r"[^\W\d][\w.']*")
#: camelCase boundaries: ``isPrime`` -> is|Prime, ``HTTPServer`` -> HTTP|Server, ``two3`` -> two|3
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[^\W\d])(?=\d)|(?<=\d)(?=[^\W\d])")


def lean_words(text: str) -> str:
    """The words of each Lean name in ``text``, split at ``.``, ``_`` and camelCase:
    ``Nat.Prime.two_le`` -> ``Nat Prime two le``; ``IsLeftRegular.all`` -> ``Is Left Regular all``.

    Why: Lucene's StandardTokenizer keeps ``Nat.Prime.two_le`` whole (UAX #29 joins letters
    across ``.`` and ``_``), so a docstring's "prime" never met the name that states it. Only
    names that split are given (a plain word is indexed once, as before).
    """
    out: list[str] = []
    for name in _NAME.findall(text):
        parts = [w for piece in re.split(r"[._']+", name) for w in _CAMEL.split(piece) if w]
        if len(parts) > 1:
            out.extend(parts)
    return " ".join(out)


def bm25_text(text: str) -> str:
    """What BM25 indexes and searches for a mathlib4 statement or query: the text, then the words
    of its Lean names (the dense baseline embeds the text alone)."""
    words = lean_words(text)
    return f"{text} {words}" if words else text


def bm25_view(jsonl_dir: Path, out: ShardedJsonl) -> int:
    """The converted statements again, each with its names' words (:func:`bm25_text`), for BM25."""
    for doc, text in read_documents(jsonl_dir):
        out.write_line(json_line(doc, bm25_text(text)))
    return out.count


def convert(task: str, data: Path, out: ShardedJsonl, work: Path, workers: int) -> int:
    """Write every document as an Anserini JsonCollection line; returns the count."""
    if task == "semantic-search":
        for obj in _jsonl_lines(data / "corpus.jsonl"):
            out.write_line(json_line(str(obj["id"]), statement_text(obj)))
        return out.count
    if task == "touche":
        return touche.convert_corpus(data, out, workers=workers)
    return arqmath.convert_posts(arqmath.posts_file(data), out, work, workers=max(0, workers - 1))


def queries(task: str, data: Path) -> list[tuple[str, str]]:
    if task == "semantic-search":
        return [(str(q["id"]), clean_query(str(q["query"]))) for q in _jsonl_lines(data / "queries.jsonl")]
    if task == "touche":
        return list(touche.queries(data))
    return list(arqmath.queries(arqmath.read_topics(data)))


def read_documents(jsonl_dir: Path) -> Iterator[tuple[str, str]]:
    """(id, text) of the converted documents, shard by shard in name order (deterministic)."""
    for path in sorted(jsonl_dir.glob("*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                obj = json.loads(line)
                yield obj["id"], obj["contents"]
