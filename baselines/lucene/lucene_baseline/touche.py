"""Touché Task 1 input -> Anserini documents and queries.

Documents: each args.me argument's conclusion followed by the text of its premises
(the official Touché Lucene baselines indexed the same text; docs/formats.md).
Queries: topic titles (the 2021 topics have nothing else).

Reading the JSON is most of the conversion, and debateorg.json is 87 % of the corpus,
so with workers the files are cut into ranges of whole arguments
(:func:`sharedtask.formats.argsme.split_argsme`) and each range is converted by a
process of its own into a JSONL file of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from sharedtask.formats.argsme import Argument, ArgsmeRange, argsme_files, read_argsme_dir, read_argsme_range, split_argsme
from sharedtask.formats.touche import read_touche_topics

from lucene_baseline.jsonl import ShardedJsonl, clean_query, json_line
from lucene_baseline.parallel import ordered_map

log = logging.getLogger("baseline")

PROGRESS_EVERY = 100_000


def argument_text(arg: Argument) -> str:
    return " ".join([arg.conclusion, *(p.text for p in arg.premises)]) if arg.premises else arg.conclusion


def convert_corpus(input_dir: Path, out: ShardedJsonl, workers: int = 0) -> int:
    """Write every argument; returns how many. ``workers`` processes (0: this one alone)."""
    if workers < 1:
        for arg in read_argsme_dir(input_dir):
            out.write(arg.id, argument_text(arg))
            if out.count % PROGRESS_EVERY == 0:
                log.info("converted %d arguments", out.count)
        return out.count
    ranges = [r for path in argsme_files(input_dir) for r in split_argsme(path, workers)]
    # largest first, so that the processes finish at about the same time
    ranges.sort(key=lambda r: (r.end or r.path.stat().st_size) - r.start, reverse=True)
    jobs = [(r, out.directory / f"part-{i:02d}.jsonl") for i, r in enumerate(ranges)]
    log.info("converting %d ranges of %d files in %d processes", len(jobs), len({r.path for r in ranges}), workers)
    for (r, _), count in zip(jobs, ordered_map(convert_range, jobs, workers)):
        out.adopt(count)
        span = "whole file" if r.start == 0 and r.end is None else \
            f"bytes {r.start:,} to {'the end' if r.end is None else f'{r.end:,}'}"
        log.info("converted %d arguments of %s (%s)", count, r.path.name, span)
    return out.count


def convert_range(job: tuple[ArgsmeRange, Path]) -> int:
    """One range into one JSONL file (runs in a worker process)."""
    part, target = job
    count = 0
    with open(target, "w", encoding="utf-8", buffering=1 << 20) as f:
        for arg in read_argsme_range(part):
            f.write(json_line(arg.id, argument_text(arg)))
            count += 1
    return count


def queries(input_dir: Path) -> Iterator[tuple[str, str]]:
    for topic in read_touche_topics(input_dir / "topics.xml"):
        yield topic.number, clean_query(topic.title)
