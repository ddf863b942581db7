"""ARQMath Task 1 input -> Anserini documents and queries.

Documents are answer posts, each indexed together with its question's title (the
official ARQMath text baselines did the same: an answer alone often does not
restate what is asked). Queries are a topic's title plus its question body.
Formulae become LaTeX tokens in both (:mod:`lucene_baseline.mathtext`).

One streaming pass over Posts.xml keeps only a compact question-id -> title map
(answer bodies are converted in worker processes while the parser reads on);
answers met before their question (not the case in the official dumps, which are
sorted by Id, but possible elsewhere) wait in a spill file and are written at the end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from sharedtask.formats.arqmath import Answer, ArqmathTopic, read_arqmath_topics, read_posts

from lucene_baseline.jsonl import ShardedJsonl, clean_query, json_line
from lucene_baseline.mathtext import html_to_index_text
from lucene_baseline.parallel import ordered_map

log = logging.getLogger("baseline")

PROGRESS_EVERY = 200_000
BATCH = 1_000  # answers per task sent to a worker: large enough to pay for the pickling


def posts_file(input_dir: Path) -> Path:
    """The Posts XML of a dataset folder (``Posts.xml``, also gzipped)."""
    for name in ("Posts.xml", "Posts.xml.gz"):
        if (input_dir / name).is_file():
            return input_dir / name
    raise FileNotFoundError(f"no Posts.xml in {input_dir}")


def encode_answers(batch: list[tuple[str, str, str]]) -> list[str]:
    """``(answer id, converted question title, answer HTML)`` -> JsonCollection lines."""
    return [json_line(answer_id, f"{title} {html_to_index_text(body)}") for answer_id, title, body in batch]


def convert_posts(posts: Path, out: ShardedJsonl, spill_dir: Path, workers: int = 0) -> int:
    """Write every answer as ``title + body`` tokens; returns the number of answers.

    This process parses the XML and converts the (short) question titles; ``workers``
    other processes convert the answer bodies, the costly part (0: all in this one).
    """
    titles: dict[str, str] = {}
    spill_path = spill_dir / "answers-before-question.jsonl"
    spilled = 0

    def answer_batches(spill: IO[str]) -> Iterator[list[tuple[str, str, str]]]:
        nonlocal spilled
        batch: list[tuple[str, str, str]] = []
        for post in read_posts(posts):
            if isinstance(post, Answer):
                title = titles.get(post.parent_id)
                if title is None:
                    spill.write(json.dumps([post.id, post.parent_id, post.body]) + "\n")
                    spilled += 1
                    continue
                batch.append((post.id, title, post.body))
                if len(batch) == BATCH:
                    yield batch
                    batch = []
            else:
                titles[post.id] = html_to_index_text(post.title)
        if batch:
            yield batch

    next_report = PROGRESS_EVERY
    with open(spill_path, "w", encoding="utf-8") as spill:
        for lines in ordered_map(encode_answers, answer_batches(spill), workers):
            for line in lines:
                out.write_line(line)
            if out.count >= next_report:
                log.info("converted %d answers", out.count)
                next_report += PROGRESS_EVERY
    if spilled:
        log.info("%d answers came before their question: adding them now", spilled)
        with open(spill_path, encoding="utf-8") as spill:
            for line in spill:
                answer_id, parent_id, body = json.loads(line)
                title = titles.get(parent_id, "")
                out.write(answer_id, f"{title} {html_to_index_text(body)}".strip())
    spill_path.unlink()
    return out.count


def topic_query(topic: ArqmathTopic) -> str:
    """Title + question body, formulae as tokens."""
    return clean_query(f"{html_to_index_text(topic.title)} {html_to_index_text(topic.question)}")


def read_topics(input_dir: Path) -> list[ArqmathTopic]:
    return read_arqmath_topics(input_dir / "topics.xml")


def queries(topics: list[ArqmathTopic]) -> Iterator[tuple[str, str]]:
    for topic in topics:
        yield topic.number, topic_query(topic)
