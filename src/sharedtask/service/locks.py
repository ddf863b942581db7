"""Locks held in the database, so every server process on one database shares them
(``serve --processes N``, or several ``serve`` started apart on one ``--db``).

- PostgreSQL: a session-level advisory lock (``pg_advisory_lock``) on a connection of its own in
  autocommit mode. It is held with no transaction open (an image load may take minutes), a
  waiter sleeps in the server until it is released (no polling), and PostgreSQL releases it
  when the holder's connection ends: a SIGKILLed process frees its locks at once.
- SQLite (and any other database): a row of ``leases`` (name, owner, expires), taken by one
  atomic INSERT, or by a compare-and-swap UPDATE when its holder is gone. SQLite has no lock a
  connection keeps without an open transaction, and an open write transaction would stop every
  other writer for the whole load. The holder renews ``expires`` while it holds the row; a
  holder on this host whose process is gone is replaced at once (its process id is in
  ``owner``), one on another host when its lease ran out.

Inside one process a :class:`threading.Lock` per name comes first, so at most one thread of a
process waits in the database for a name (twenty uploads of one image hold one connection).
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import threading
import time
from contextlib import contextmanager
from typing import Callable, Hashable, Iterator

from sqlalchemy import create_engine, delete, insert, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.pool import NullPool

from sharedtask.service.db import IMMEDIATE
from sharedtask.service.models import Lease

log = logging.getLogger("sharedtask.service")

#: how long a lease row holds without renewal (a holder on another host that vanished)
LEASE_SECONDS = 60.0
#: the longest pause between two tries of a waiter on a lease row
MAX_PAUSE = 0.25

Release = Callable[[], None]


class LockBusy(TimeoutError):
    """Another holder kept the lock past the waiter's bound."""


def lock_name(key: Hashable) -> str:
    """The name of a key in the database: ``image:<sha>``, ``stage:<task>:<name>:<dataset>``."""
    name = ":".join(map(str, key)) if isinstance(key, tuple) else str(key)
    return name if len(name) <= 100 else "sha256:" + hashlib.sha256(name.encode()).hexdigest()


def advisory_key(name: str) -> int:
    """A signed 64-bit key for ``pg_advisory_lock`` (a hash: two names share one only by chance,
    and then they only wait for each other)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


_owners: dict[int, str] = {}


def owner() -> str:
    """This process as a lease's holder: ``host:pid:random`` (a forked child is a new owner)."""
    pid = os.getpid()
    if pid not in _owners:
        _owners[pid] = f"{socket.gethostname()}:{pid}:{secrets.token_hex(4)}"
    return _owners[pid]


def gone(holder: str) -> bool:
    """Whether ``holder`` is a process of this host that no longer runs (or is a zombie)."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return holder != owner()  # this pid, an earlier process's (ids are reused)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's process: alive
        return False
    try:  # killed but not yet reaped by its parent: it holds nothing any more
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False


class Locks:
    """The database's locks for one engine; one object per process (made after a fork)."""

    def __init__(self, engine: Engine, lease: float = LEASE_SECONDS) -> None:
        self.engine, self.lease = engine, lease
        # SQLite: the write lock at BEGIN, so a write never meets SQLITE_BUSY_SNAPSHOT (db.py)
        self._writes = engine.execution_options(**{IMMEDIATE: True})
        self.postgres = engine.dialect.name == "postgresql"
        self._local: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._held: set[str] = set()  # lease rows this process holds (renewed)
        self._renewer: threading.Thread | None = None
        self._advisory: Engine | None = None

    @contextmanager
    def hold(self, key: Hashable, within: float | None = None) -> Iterator[None]:
        """Hold the lock of ``key`` across every process on the database; waits for it, at most
        ``within`` seconds when given (then :class:`LockBusy`)."""
        name = lock_name(key)
        deadline = None if within is None else time.monotonic() + within
        with self._guard:
            local = self._local.setdefault(name, threading.Lock())
        if not local.acquire(timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())):
            raise LockBusy(name)
        try:
            release = self.acquire(name, wait=True, deadline=deadline)
            if release is None:
                raise LockBusy(name)
            try:
                yield
            finally:
                release()
        finally:
            local.release()

    def acquire(self, name: str, *, wait: bool, deadline: float | None = None) -> Release | None:
        """Take the lock ``name``; its release, or None when another holds it and ``wait`` is False
        or the ``deadline`` (``time.monotonic()``) passed."""
        if self.postgres:
            return self._advisory_lock(name, wait, deadline)
        pause = 0.005
        while True:
            if self._take(name):
                return lambda: self._give_back(name)
            if not wait or (deadline is not None and time.monotonic() >= deadline):
                return None
            time.sleep(pause)  # a holder writes no event a waiter could sleep on: polled, with backoff
            pause = min(pause * 2, MAX_PAUSE)

    # --- PostgreSQL: advisory locks on connections of their own
    def _advisory_lock(self, name: str, wait: bool, deadline: float | None) -> Release | None:
        if self._advisory is None:
            with self._guard:
                if self._advisory is None:  # no pool: a held lock is a connection, returned by closing it
                    self._advisory = create_engine(self.engine.url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        connection = self._advisory.connect()
        key = advisory_key(name)
        try:
            if wait:
                if deadline is not None:  # lock_timeout bounds an advisory lock's wait too (SQLSTATE 55P03)
                    left = max(1, int(1000 * (deadline - time.monotonic())))
                    connection.execute(text(f"SET lock_timeout = {left}"))
                try:
                    connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
                except OperationalError as exc:
                    if getattr(exc.orig, "sqlstate", None) != "55P03":
                        raise
                    connection.close()
                    return None
            elif not connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar():
                connection.close()
                return None
        except BaseException:
            connection.close()
            raise
        return lambda: _unlock(connection, key)

    # --- SQLite and the rest: a lease row
    def _take(self, name: str) -> bool:
        me, now = owner(), time.time()
        try:
            with self._writes.begin() as connection:
                connection.execute(insert(Lease).values(name=name, owner=me, expires=now + self.lease))
        except IntegrityError:
            with self.engine.begin() as connection:
                row = connection.execute(select(Lease.owner, Lease.expires).where(Lease.name == name)).first()
            if row is None or not (row.expires < now or gone(row.owner)):
                return False
            with self._writes.begin() as connection:  # compare and swap: one of two takers wins
                taken = connection.execute(
                    update(Lease).where(Lease.name == name, Lease.owner == row.owner, Lease.expires == row.expires)
                    .values(owner=me, expires=now + self.lease)).rowcount == 1
            if not taken:
                return False
            log.warning("lock %s taken over from %s, which %s", name, row.owner,
                        "is gone" if gone(row.owner) else "let its lease run out")
        with self._guard:
            self._held.add(name)
            if self._renewer is None or not self._renewer.is_alive():
                self._renewer = threading.Thread(target=self._renew, name="sharedtask-leases", daemon=True)
                self._renewer.start()
        return True

    def _give_back(self, name: str) -> None:
        with self._guard:
            self._held.discard(name)
        with self._writes.begin() as connection:
            connection.execute(delete(Lease).where(Lease.name == name, Lease.owner == owner()))

    def _renew(self) -> None:
        while True:
            time.sleep(self.lease / 4)
            with self._guard:
                names = sorted(self._held)
            if not names:
                continue
            try:
                with self._writes.begin() as connection:
                    kept = connection.execute(update(Lease).where(Lease.name.in_(names), Lease.owner == owner())
                                              .values(expires=time.time() + self.lease)).rowcount
                if kept != len(names):
                    log.error("leases lost (this process was paused longer than %.0f s): %s", self.lease, names)
            except Exception:  # noqa: BLE001 - a busy database: renewed at the next turn
                log.exception("renewing the leases %s", names)


def _unlock(connection: Connection, key: int) -> None:
    try:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    except Exception:  # noqa: BLE001 - a broken connection: closing it releases the lock too
        pass
    finally:
        connection.close()

