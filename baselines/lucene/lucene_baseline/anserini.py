"""Anserini's own command-line classes, run with ``java`` (no pyjnius, no torch).

Why the CLI and this version: the Anserini 1.7.1 fat jar (shipped inside the
pyserini 1.6.0 sdist, Lucene 9) indexes and searches fully offline, while the
one inside pyserini 2.4.0 dies at start-up under ``--network none``
(docker/README.md). Flags below were checked against
``java -cp anserini-1.7.1-fatjar.jar io.anserini.search.SearchCollection -options``.

Determinism (checked in the 1.7.1 bytecode and source): SearchCollection sorts
hits with ``Sort(FIELD_SCORE, SortField(id, STRING_VAL))`` — score descending,
ties broken by the external docid ascending, inside Lucene's collector, so the
same docs survive the ``-hits`` cut whatever the internal (thread-dependent)
Lucene doc numbers are. ``ScoreTiesAdjusterReranker`` then rounds scores to 1e-4
and subtracts 1e-6 per tied position, so the scores alone reproduce that order.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

JAR = Path(os.environ.get("ANSERINI_JAR", "/opt/anserini/anserini-fatjar.jar"))

log = logging.getLogger("baseline")


@dataclass(frozen=True)
class Model:
    """A ranking model and its parameters, as SearchCollection flags."""

    name: str  # "bm25" | "qld"
    k1: float = 0.9  # Anserini's defaults (SearchCollection -options)
    b: float = 0.4
    mu: float = 1000.0

    def flags(self) -> list[str]:
        if self.name == "bm25":
            return ["-bm25", "-bm25.k1", _num(self.k1), "-bm25.b", _num(self.b)]
        if self.name == "qld":
            return ["-qld", "-qld.mu", _num(self.mu)]
        raise ValueError(f"unknown model {self.name!r} (bm25 or qld)")

    def tag(self) -> str:
        return "bm25" if self.name == "bm25" else f"qld-mu{_num(self.mu)}"


def _num(value: float) -> str:
    return f"{value:g}"


class Hit(NamedTuple):
    topic: str
    docid: str
    rank: int
    score: str  # Anserini's printed score, kept verbatim (already rounded and tie-adjusted)


def cpu_count() -> int:
    """CPUs this process may use (respects docker --cpus via the affinity mask only)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _cgroup_memory_bytes() -> int | None:
    for path, unlimited in (("/sys/fs/cgroup/memory.max", "max"),
                            ("/sys/fs/cgroup/memory/memory.limit_in_bytes", None)):
        try:
            value = Path(path).read_text().strip()
        except OSError:
            continue
        if value == unlimited or not value.isdigit() or int(value) > 1 << 50:
            return None
        return int(value)
    return None


def heap_mb() -> int:
    """Java heap: ``$ANSERINI_HEAP_MB``, else half the container's memory limit (1-8 GB)."""
    if os.environ.get("ANSERINI_HEAP_MB"):
        return int(os.environ["ANSERINI_HEAP_MB"])
    limit = _cgroup_memory_bytes()
    if limit is None:
        return 4096
    return max(512, min(8192, limit // (2 << 20)))


def ensure_resolvable_hostname() -> None:
    """Make the container's host name resolvable, so log4j does not print a stack trace.

    Anserini's log4j looks the host name up at start-up; with ``--network none``
    and a random container name that fails noisily (docker/README.md).
    Harmless either way: when /etc/hosts is not writable we only say so.
    """
    name = socket.gethostname()
    try:
        socket.gethostbyname(name)
        return
    except OSError:
        pass
    try:
        with open("/etc/hosts", "a", encoding="utf-8") as hosts:
            hosts.write(f"\n127.0.0.1\t{name}\n")
    except OSError:
        log.info("host name %s does not resolve: log4j will print an UnknownHostException (harmless)", name)


def _java(main_class: str, args: list[str]) -> None:
    heap = heap_mb()
    cmd = ["java", f"-Xmx{heap}m", "-XX:+UseParallelGC", "-cp", str(JAR), main_class, *args]
    log.info("running %s", " ".join(cmd))
    # Anserini logs to stdout; our stdout is not the run, so both streams go to stderr.
    result = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{main_class} failed with exit code {result.returncode}")


def index(jsonl_dir: Path, index_dir: Path, threads: int, pretokenized: bool = False) -> None:
    """Index ``{"id", "contents"}`` JSONL files (Anserini's JsonCollection) without positions.

    BM25 and query likelihood need neither positions nor document vectors; leaving
    them out makes the index smaller and faster to write. The RAM buffer is a
    quarter of the heap (Anserini's default of 4 GB would not fit a sandbox).
    """
    args = ["-collection", "JsonCollection", "-input", str(jsonl_dir), "-index", str(index_dir),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads),
            "-memoryBuffer", str(max(64, heap_mb() // 4)), "-optimize"]
    if pretokenized:
        args.append("-pretokenized")
    _java("io.anserini.index.IndexCollection", args)


def search(index_dir: Path, topics_tsv: Path, run_file: Path, model: Model, hits: int,
           threads: int, run_tag: str, pretokenized: bool = False) -> None:
    """Batch retrieval for ``qid<TAB>query`` topics (TsvString reader) into a TREC run."""
    args = ["-index", str(index_dir), "-topics", str(topics_tsv), "-topicReader", "TsvString",
            "-output", str(run_file), "-hits", str(hits), "-threads", str(threads),
            "-runtag", run_tag, "-format", "trec", *model.flags()]
    if pretokenized:
        args.append("-pretokenized")
    _java("io.anserini.search.SearchCollection", args)


def read_run(run_file: Path) -> Iterator[Hit]:
    """Hits of Anserini's TREC output (``qid Q0 docid rank score tag``)."""
    with open(run_file, encoding="utf-8") as handle:
        for line in handle:
            qid, _q0, docid, rank, score, _tag = line.split()
            yield Hit(qid, docid, int(rank), score)
