"""Touché Task 1 input -> Anserini documents and queries.

Documents: each args.me argument's conclusion followed by the text of its premises
(the official Touché Lucene baselines indexed the same text; reference/tasks-and-formats.md).
Queries: topic titles (the 2021 topics have nothing else).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from sharedtask.formats.argsme import read_argsme_dir
from sharedtask.formats.touche import read_touche_topics

from lucene_baseline.jsonl import ShardedJsonl, clean_query

log = logging.getLogger("baseline")

PROGRESS_EVERY = 100_000


def convert_corpus(input_dir: Path, out: ShardedJsonl) -> int:
    """Write every argument; returns how many."""
    for arg in read_argsme_dir(input_dir):
        if arg.premises:
            text = " ".join([arg.conclusion, *(p.text for p in arg.premises)])
        else:
            text = arg.conclusion
        out.write(arg.id, text)
        if out.count % PROGRESS_EVERY == 0:
            log.info("converted %d arguments", out.count)
    return out.count


def queries(input_dir: Path) -> Iterator[tuple[str, str]]:
    for topic in read_touche_topics(input_dir / "topics.xml"):
        yield topic.number, clean_query(topic.title)
