"""ARQMath Task 1 input -> Anserini documents and queries.

Documents are answer posts, each indexed together with its question's title (the
official ARQMath text baselines did the same: an answer alone often does not
restate what is asked). Queries are a topic's title plus its question body.
Formulae become LaTeX tokens in both (:mod:`lucene_baseline.mathtext`).

Posts.xml is cut into byte ranges of whole rows, one per CPU
(:func:`sharedtask.formats.arqmath.split_posts`); each process parses its range with
lxml and converts its answers into a part file, keeping its question titles. An
answer whose question is in an earlier range waits in the part file until this
process, merging the parts in file order, knows every earlier title; the JSONL shards
are then written exactly as one pass over the file writes them (:func:`convert_posts_serial`,
the fallback: a file the range reader refuses is converted, or reported, by it).
Answers met before their question (not the case in the official dumps, which are
sorted by Id, but possible elsewhere) wait in a spill file and are written at the end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from sharedtask.errors import FormatError
from sharedtask.formats._ranges import ByteRange
from sharedtask.formats.arqmath import (
    Answer,
    ArqmathTopic,
    PostsFrame,
    posts_frame,
    read_arqmath_topics,
    read_post_rows,
    read_posts,
    split_posts,
)

from lucene_baseline import postsconv
from lucene_baseline.jsonl import ShardedJsonl, clean_query, json_line
from lucene_baseline.mathtext import html_to_index_text
from lucene_baseline.parallel import ordered_map

log = logging.getLogger("baseline")

PROGRESS_EVERY = 200_000
BATCH = 1_000  # answers per task sent to a worker: large enough to pay for the pickling
#: Ranges per process in convert_posts: the parent merges each finished range while the
#: later ones are converted, so that only the last one's merge is left at the end.
RANGES_PER_PROCESS = 4


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

    ``workers + 1`` processes (all CPUs) convert ranges of the file, RANGES_PER_PROCESS
    each, while this one merges the finished ones in file order; 0: one range, in this
    process. The JSONL is byte-identical to :func:`convert_posts_serial`'s, which takes
    over when the range reader refuses the file.
    """
    frame = posts_frame(posts)
    if frame is not None:
        postsconv.library()  # built (if it must be) once, before the workers fork
    processes = workers + 1 if workers > 0 else 1
    ranges = split_posts(posts, processes * RANGES_PER_PROCESS if processes > 1 else 1)
    jobs = [(part, frame, spill_dir / f"posts-part-{i:02d}.jsonl") for i, part in enumerate(ranges)]
    log.info("converting %d ranges of %s in %d processes", len(jobs), posts.name, processes)
    try:
        results = ordered_map(convert_range, jobs, processes if workers > 0 else 0)
        try:
            return _merge(results, [target for _, _, target in jobs], out, spill_dir)
        except ImportError as exc:  # an image without lxml
            log.warning("%s: converting in one pass with expat", exc)
        except FormatError as exc:
            log.info("%s: converting in one pass, which reports the exact error", exc)
        finally:
            results.close()  # the processes stop before anything else runs
        out.reset()  # what the ranges before the failing one wrote
        return convert_posts_serial(posts, out, spill_dir, workers)
    finally:
        for _, _, target in jobs:
            target.unlink(missing_ok=True)


def convert_range(job: tuple[ByteRange, PostsFrame | None, Path]) -> dict[str, str]:
    """One range into one part file (runs in a worker process); returns its question titles.

    A part line is a JSONL document, or, for an answer whose question is not in this
    range before it, a tab and ``[answer id, question id, body text]`` as JSON. The C
    converter (:mod:`lucene_baseline.postsconv`) writes the same file when it is available.
    """
    part, frame, target = job
    if frame is not None and postsconv.library() is not None:
        counts = postsconv.Counts()
        titles = postsconv.convert_range(part, frame, target, counts)
        log.info("bytes %s-%s: %d rows converted in C, %d in Python, %d stretches read by lxml",
                 part.start, part.end if part.end is not None else "end", counts.c_rows,
                 counts.python_rows, counts.lxml_windows)
        return titles
    titles = {}
    with open(target, "w", encoding="utf-8", buffering=1 << 20) as f:
        write = f.write
        for kind, ident, other, body in read_post_rows(part, frame):
            if kind == "1":
                titles[ident] = html_to_index_text(other)
                continue
            write(postsconv.part_line(ident, other, html_to_index_text(body), titles))
    return titles


def _merge(titles_of_parts: Iterable[dict[str, str]], parts: list[Path], out: ShardedJsonl, spill_dir: Path) -> int:
    """The part files into ``out`` in file order; deferred answers get the titles of earlier parts."""
    titles: dict[str, str] = {}
    spill_path = spill_dir / "answers-before-question.jsonl"
    spilled = 0
    try:
        next_report = PROGRESS_EVERY
        with open(spill_path, "w", encoding="utf-8") as spill:
            for part_titles, path in zip(titles_of_parts, parts):
                with open(path, encoding="utf-8", buffering=1 << 20) as f:
                    for line in f:
                        if line[0] != "\t":
                            out.write_line(line)
                            continue
                        answer_id, parent_id, text = json.loads(line)
                        title = titles.get(parent_id)
                        if title is None:
                            spill.write(line)
                            spilled += 1
                        else:
                            out.write_line(json_line(answer_id, f"{title} {text}"))
                titles.update(part_titles)  # after the part: its answers saw only what came before them
                path.unlink()  # scratch space: the parts are as large as the JSONL
                if out.count >= next_report:
                    log.info("converted %d answers", out.count)
                    next_report += PROGRESS_EVERY
        _add_spilled(spill_path, spilled, titles, out, words=str)  # texts already converted
        return out.count
    finally:
        spill_path.unlink(missing_ok=True)  # also when the input fails half-way


def _add_spilled(spill_path: Path, spilled: int, titles: dict[str, str], out: ShardedJsonl,
                 words: Callable[[str], str] = html_to_index_text) -> None:
    """The answers that came before their question (``[id, question id, text]`` lines), at the end."""
    if not spilled:
        return
    log.info("%d answers came before their question: adding them now", spilled)
    with open(spill_path, encoding="utf-8") as spill:
        for line in spill:
            answer_id, parent_id, text = json.loads(line)
            out.write(answer_id, f"{titles.get(parent_id, '')} {words(text)}".strip())


def convert_posts_serial(posts: Path, out: ShardedJsonl, spill_dir: Path, workers: int = 0) -> int:
    """One pass with expat (:func:`read_posts`); the conversion before the ranges, kept as fallback.

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

    try:
        next_report = PROGRESS_EVERY
        with open(spill_path, "w", encoding="utf-8") as spill:
            for lines in ordered_map(encode_answers, answer_batches(spill), workers):
                for line in lines:
                    out.write_line(line)
                if out.count >= next_report:
                    log.info("converted %d answers", out.count)
                    next_report += PROGRESS_EVERY
        _add_spilled(spill_path, spilled, titles, out)
        return out.count
    finally:
        spill_path.unlink(missing_ok=True)  # also when the input fails half-way


def topic_query(topic: ArqmathTopic) -> str:
    """Title + question body, formulae as tokens."""
    return clean_query(f"{html_to_index_text(topic.title)} {html_to_index_text(topic.question)}")


def read_topics(input_dir: Path) -> list[ArqmathTopic]:
    return read_arqmath_topics(input_dir / "topics.xml")


def queries(topics: list[ArqmathTopic]) -> Iterator[tuple[str, str]]:
    for topic in topics:
        yield topic.number, topic_query(topic)
