"""ARQMath Task 1 input -> Anserini documents and queries.

Documents are answer posts, each indexed together with its question's title (the
official ARQMath text baselines did the same: an answer alone often does not
restate what is asked). Queries are a topic's title plus its question body.
Formulae become LaTeX tokens in both (:mod:`lucene_baseline.mathtext`).

One streaming pass over Posts.xml keeps only a compact question-id -> title map;
answers met before their question (not the case in the official dumps, which are
sorted by Id, but possible elsewhere) wait in a spill file and are written at the end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

from sharedtask.formats.arqmath import Answer, ArqmathTopic, read_arqmath_topics, read_posts

from lucene_baseline.jsonl import ShardedJsonl, clean_query
from lucene_baseline.mathtext import html_to_index_text

log = logging.getLogger("baseline")

PROGRESS_EVERY = 200_000


def posts_file(input_dir: Path) -> Path:
    """The Posts XML of a dataset folder (``Posts.xml``, also gzipped)."""
    for name in ("Posts.xml", "Posts.xml.gz"):
        if (input_dir / name).is_file():
            return input_dir / name
    raise FileNotFoundError(f"no Posts.xml in {input_dir}")


def convert_posts(posts: Path, out: ShardedJsonl, spill_dir: Path) -> int:
    """Write every answer as ``title + body`` tokens; returns the number of answers."""
    titles: dict[str, str] = {}
    spill_path = spill_dir / "answers-before-question.jsonl"
    spilled = 0
    with open(spill_path, "w", encoding="utf-8") as spill:
        for post in read_posts(posts):
            if isinstance(post, Answer):
                body = html_to_index_text(post.body)
                title = titles.get(post.parent_id)
                if title is None:
                    spill.write(json.dumps([post.id, post.parent_id, body]) + "\n")
                    spilled += 1
                else:
                    out.write(post.id, f"{title} {body}")
                if out.count and out.count % PROGRESS_EVERY == 0:
                    log.info("converted %d answers", out.count)
            else:
                titles[post.id] = html_to_index_text(post.title)
    if spilled:
        log.info("%d answers came before their question: adding them now", spilled)
        with open(spill_path, encoding="utf-8") as spill:
            for line in spill:
                answer_id, parent_id, body = json.loads(line)
                title = titles.get(parent_id, "")
                out.write(answer_id, f"{title} {body}".strip())
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
