"""Answers of the hot GETs (leaderboard, a team's submissions, the task list), kept until the database changes.

Why: under a crowd most requests ask for the same leaderboard and lists between two
commits; building each answer again was most of the server's work (benchmarks/service.py).

An answer is kept under the database's *change stamp*, read before the answer is built,
and served again only while the stamp is the same. Any commit by anyone — this process,
another server process, the command line, a compute worker — changes the stamp, so a kept
answer can never be older than the last commit:

- SQLite: ``PRAGMA data_version`` on a connection of our own that never writes. Its value
  changes whenever another connection, in this process or another, has committed
  (sqlite.org/pragma.html#pragma_data_version).
- PostgreSQL: ``pg_current_snapshot()``. A snapshot (xmin, xmax, the transactions in
  progress) decides which rows a query sees; two equal snapshots see the same committed
  data, and any commit (or abort) changes xmax or the in-progress list
  (postgresql.org/docs/current/functions-info.html, "Snapshot Information Functions").
- Any other backend, or SQLite in memory: nothing is kept.

A stamp read before a commit and an answer built after it are kept together: harmless,
the next request reads a new stamp and builds the answer again. The key of an answer holds
canonical values only (a known task, a validated zone, who asks as a class: anyone, a team,
the organizer; ``web.common.kept``), never raw input.

Bounded (issue 39): at most ``max_entries`` answers and ``max_bytes`` of them, the least
recently used dropped first. Before, each request with a random token kept one more copy of
the public board until the next commit.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

from sqlalchemy.engine import Engine


#: bounds of the kept answers: entries, and bytes (answers and keys)
MAX_ENTRIES = 1024
MAX_BYTES = 64 * 1024 * 1024


def _size(key: Hashable, answer: bytes) -> int:
    """What an entry holds: its answer's bytes and its key's (a tuple of short values)."""
    return len(answer) + sys.getsizeof(key) + sum(sys.getsizeof(part) for part in key) \
        if isinstance(key, tuple) else len(answer) + sys.getsizeof(key)


class Answers:
    """Rendered answers (bytes) by key, valid for one change stamp and until an optional time;
    all are dropped when the stamp changes."""

    def __init__(self, stamp: Callable[[], Hashable] | None, max_entries: int = MAX_ENTRIES,
                 max_bytes: int = MAX_BYTES) -> None:
        self._read_stamp = stamp
        self._lock = threading.Lock()
        self._stamp: Hashable = None
        self._kept: OrderedDict[Hashable, tuple[bytes, Any]] = OrderedDict()  # least recently used first
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._bytes = 0
        self._boundary: tuple[Hashable, Any, Any] | None = None  # (stamp, computed at, the boundary)

    @property
    def enabled(self) -> bool:
        return self._read_stamp is not None

    def stamp(self) -> Hashable:
        """The database's change stamp now (None when nothing is kept); read it before building an answer."""
        return self._read_stamp() if self._read_stamp is not None else None

    def get(self, key: Hashable, stamp: Hashable, now: Any = None) -> bytes | None:
        """The answer kept for ``key`` under ``stamp``, unless its time (``until``) has come by ``now``."""
        if stamp is None:
            return None
        with self._lock:
            if stamp != self._stamp:
                self._stamp, self._kept, self._bytes = stamp, OrderedDict(), 0
                return None
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is None:
            return None
        answer, until = kept
        return None if until is not None and now is not None and now >= until else answer

    def put(self, key: Hashable, stamp: Hashable, answer: bytes, until: Any = None) -> None:
        """Keep ``answer``, built after ``stamp`` was read, unless the stamp has moved on meanwhile;
        ``until``: the time after which it may be out of date without any commit (a date passing)."""
        if stamp is None:
            return
        size = _size(key, answer)
        if size > self.max_bytes or self.max_entries < 1:
            return
        with self._lock:
            if stamp != self._stamp:
                return
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= _size(key, old[0])
            self._kept[key] = (answer, until)
            self._bytes += size
            while len(self._kept) > self.max_entries or self._bytes > self.max_bytes:
                dropped, (body, _) = self._kept.popitem(last=False)
                self._bytes -= _size(dropped, body)

    def held(self) -> tuple[int, int]:
        """(entries, bytes) kept now: what a test or a benchmark reads instead of the process's RSS."""
        with self._lock:
            return len(self._kept), self._bytes

    def boundary(self, stamp: Hashable, now: Any, compute: Callable[[], Any]) -> Any:
        """The next date after ``now`` at which kept answers expire (``compute()``), computed once
        per stamp: it changes only with a commit, or when ``now`` reaches it.

        Why: computed for every answer built, its four queries were a sixth of the server's
        time under a crowd that commits all the time (benchmarks/service.py)."""
        with self._lock:
            kept = self._boundary
        if (stamp is not None and kept is not None and kept[0] == stamp and kept[1] <= now
                and (kept[2] is None or now < kept[2])):
            return kept[2]
        until = compute()
        if stamp is not None:
            with self._lock:
                self._boundary = (stamp, now, until)
        return until


def answers_for(engine: Engine) -> Answers:
    """The cache for this database, with the stamp its backend offers (see the module's docstring)."""
    name = engine.dialect.name
    if name == "sqlite":
        path = engine.url.database
        if not path or path == ":memory:" or path.startswith("file:"):
            return Answers(None)
        return Answers(_sqlite_stamp(path))
    if name == "postgresql":
        return Answers(_postgresql_stamp(engine))
    return Answers(None)


def _sqlite_stamp(path: str) -> Callable[[], Hashable]:
    # autocommit (isolation_level=None): the connection never holds a read transaction open;
    # it only ever runs this pragma, so every change it sees was committed by someone else
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    lock = threading.Lock()

    def stamp() -> Hashable:
        with lock:
            return connection.execute("PRAGMA data_version").fetchone()[0]

    return stamp


def _postgresql_stamp(engine: Engine) -> Callable[[], Hashable]:
    def stamp() -> Hashable:
        with engine.connect() as connection:
            value: Any = connection.exec_driver_sql("SELECT pg_current_snapshot()::text").scalar()
            return value

    return stamp
