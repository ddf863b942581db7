"""Engine, sessions and migrations: SQLite in a file by default, PostgreSQL by URL.

The schema is only ever created by Alembic (``migrations/``), so a database made by
one version of sharedtask is upgraded in place by the next.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.errors import SharedTaskError


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


#: execution option of an engine whose SQLite transactions take the write lock at BEGIN
IMMEDIATE = "sharedtask_begin_immediate"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the pages read while a worker writes; the busy timeout waits for a
    # writer instead of failing with "database is locked" (sqlite.org/wal.html).
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    # We issue BEGIN ourselves (below), not the sqlite3 module (SQLAlchemy's documented recipe,
    # "Serializable isolation / Savepoints / Transactional DDL" for pysqlite).
    dbapi_connection.isolation_level = None


def _sqlite_begin(connection: Any) -> None:
    """``BEGIN IMMEDIATE`` for transactions that will write, plain ``BEGIN`` for the rest.

    Why: in WAL mode a deferred transaction that read first and then writes fails at once
    with SQLITE_BUSY_SNAPSHOT when another writer committed in between; the busy timeout is
    not even consulted (sqlite.org/rescode.html#busy_snapshot). A transaction that takes the
    write lock at its start waits its turn instead.
    """
    immediate = connection.get_execution_options().get(IMMEDIATE)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: str) -> Engine:
    """An engine for ``url``, or one line saying what is wrong with it."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
            event.listen(engine, "connect", _sqlite_pragmas)
            event.listen(engine, "begin", _sqlite_begin)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
        with engine.connect():
            pass
    except SharedTaskError:
        raise
    except Exception as exc:  # noqa: BLE001 - bad URL, missing driver, server down: all user-fixable
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise SharedTaskError(f"cannot open the database {_safe(url)}: {reason}",
                              hint="check --db (sqlite:///FILE or postgresql+psycopg://USER@HOST:PORT/DB)") from None
    return engine


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as given
        return url


def migrate(engine: Engine) -> None:
    """Bring the database to the newest schema (Alembic ``upgrade head``)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(files("sharedtask.service").joinpath("migrations")))
    from alembic.util.exc import CommandError

    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except CommandError as exc:  # a revision this version does not know: a newer sharedtask made it
        where = engine.url.render_as_string(hide_password=True)
        raise SharedTaskError(f"the service database {where} has a schema this sharedtask does not know "
                              f"({str(exc).splitlines()[0]})",
                              hint="it was made by a newer sharedtask: upgrade sharedtask, or use another --db"
                              ) from None


def sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def writer_sessions(readers: sessionmaker[Session]) -> sessionmaker[Session]:
    """Sessions for transactions that write: on SQLite they take the write lock at BEGIN.

    On PostgreSQL the transactions are ordinary ones: whatever must be serialised takes a
    row lock (``SELECT ... FOR UPDATE``) where it needs one.
    """
    engine = readers.kw["bind"]
    return sessionmaker(engine.execution_options(**{IMMEDIATE: True}), expire_on_commit=False)


def is_sqlite(session: Session) -> bool:
    bind = session.get_bind()
    return bind.dialect.name == "sqlite"
