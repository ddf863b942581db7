"""How much of a run the validator may hold in memory: a bound set by the task, not the file.

Why: the per-topic rules (ranking.py) need a topic's lines at once, and an interleaved run
needs every topic's lines until its end. Unbounded, a legal-sized 1000 MB run (one deep
topic, or interleaved) made the host validator peak at 11.5 GB RSS (issue 26). A run the
task can score never needs more than ``topics × depth`` result lines, so the pass keeps at
most that many (within a floor and a ceiling, below), plus as many distinct topic ids and
run tags. A run that needs more is refused with ``RUN-MEMORY-BOUND``, and the rest of the
file is not read (as for ``RUN-TOO-LARGE``).

The check runs once per chunk of lines (256 KB) or fast-path batch, so it costs nothing
per line and overshoots by at most one chunk or batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: A task with few topics or a depth of 1 (ARQMath Task 3, MathQA) still gets this many rows:
#: enough for any small test run, interleaved, to be checked as before.
FLOOR_ROWS = 100_000
#: The ceiling, whatever the task says: measured (benchmarks/validator_memory.py) to keep the
#: validator's peak RSS under 512 MB with the longest lines a run holds in practice.
CEILING_ROWS = 500_000
#: Text of kept lines (bytes read since the oldest kept topic began): bounds memory when
#: lines are long (a line may be up to output.max_line_bytes, 1 MiB by default).
MAX_KEPT_BYTES = 64 << 20
#: Topic count assumed when the topics are unknown (no topics file, no --input).
UNKNOWN_TOPICS = 1000


@dataclass(frozen=True)
class Budget:
    """The most rows, distinct topics, distinct tags and bytes of text one pass keeps."""

    rows: int
    kept_bytes: int
    topics: int | None  # the task's topic count, when known
    depth: int

    @classmethod
    def for_task(cls, task: Any, topics: set[str] | None) -> "Budget":
        depth = max(1, int(task.output.max_results_per_topic))
        n = len(topics) if topics is not None else UNKNOWN_TOPICS
        rows = min(CEILING_ROWS, max(FLOOR_ROWS, n * depth))
        return cls(rows=rows, kept_bytes=MAX_KEPT_BYTES, topics=len(topics) if topics is not None else None,
                   depth=depth)

    def origin(self) -> str:
        """Where the row bound comes from, for the finding's message."""
        if self.topics is None:
            return f"{self.rows:,} (the topics are unknown; the task's depth is {self.depth:,})"
        return f"{self.rows:,} (from {self.topics:,} topics × depth {self.depth:,}, at least {FLOOR_ROWS:,}, " \
               f"at most {CEILING_ROWS:,})"

    def over(self, *, rows: int, kept_bytes: int, topics: int, tags: int) -> str | None:
        """Why the pass cannot go on within the bound, or None while it can."""
        if rows > self.rows:
            return f"it would hold more than {self.origin()} result lines in memory"
        if kept_bytes > self.kept_bytes:
            return f"it would hold more than {self.kept_bytes >> 20} MiB of result lines in memory"
        if topics > self.rows:
            return f"it names more than {self.rows:,} distinct topics"
        if tags > self.rows:
            return f"it uses more than {self.rows:,} distinct run tags"
        return None
