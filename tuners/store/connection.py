"""Opening a sweep's SQL storage: one Optuna ``RDBStorage`` per URL, with lwnas's engine settings and errors."""

from __future__ import annotations

from typing import Any

from searchspace.errors import LwnasError
from tuners.store.urls import first_line, masked, scrub, sqlite_path


class StorageError(LwnasError, RuntimeError):
    """The storage cannot be reached or read; the message names the masked URL and the fix."""


def open_storage(url: str, *, create: bool = False, flush_each_commit: bool = True):
    """An Optuna RDB storage for ``url``, with a clear error when it cannot be reached.

    Only ``lwnas sweep`` passes ``create=True``: every other command reading a SQLite file that
    is not there (a mistyped path) is told so, instead of leaving an empty database behind.
    The sweep's driver also passes ``flush_each_commit=False`` (``skip_commit_flush``).
    """
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    path = sqlite_path(url)
    if path is not None and not create and not path.is_file():
        raise StorageError(
            f"no database at {masked(url)}: {path.resolve()} does not exist (is the path "
            f"mistyped? `lwnas sweep STUDY.yaml --storage URL` creates one)"
        )
    try:
        storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs(url))
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        raise StorageError(f"cannot open storage {masked(url)}: {scrub(first_line(exc), url)}. {_hint(url)}") from None
    if path is not None:
        write_ahead_log(storage.engine)
    if not flush_each_commit:
        skip_commit_flush(storage.engine)
    return storage


def write_ahead_log(engine: Any) -> None:
    """Put a SQLite file in WAL mode (it stays so): readers (dashboard, ``lwnas status``) then never block
    the sweep's writes, nor it their reads. WAL needs every process on one machine (no network file
    system); a file that cannot be changed (read-only) keeps its mode, and readers wait for locks."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    except SQLAlchemyError:
        pass


def skip_commit_flush(engine: Any) -> None:
    """Commits of ``engine``'s connections return before they are flushed to disk (the sweep's driver only).

    PostgreSQL: ``synchronous_commit`` off, set on each new connection (``SET``, not a connect option: a
    connect option would replace the ``options`` the user's URL may carry, a ``search_path`` for one, and
    poolers such as PgBouncer refuse it). A commit returns before its WAL record is on disk (a trial is ~27
    commits; with the one-key plan, the driver ran 1.3-2.1x faster: docs/performance.md, "Driver
    throughput"). A driver that dies loses nothing (the server has every commit). A server crash can lose the
    last ~0.6 s of commits (3 x ``wal_writer_delay``), always a suffix of the log; ``lwnas resume`` re-runs the
    trials left RUNNING. A driver that outlives such a crash is not covered: Optuna numbers trials by their
    count, so a lost trial's number is given again, and writes the driver addresses by that number could reach
    the new trial; stop the driver and resume after a database server crash.

    SQLite: ``synchronous=NORMAL`` on a file in WAL mode: a commit then skips the disk flush (it happens at
    checkpoints). SQLite documents this as safe in WAL mode: a crashed process loses no commit, a power cut
    may roll back the last ones but never corrupts the file. Outside WAL mode (a file that refused it)
    NORMAL is not that safe, so the file keeps FULL.
    """
    from sqlalchemy import event

    def relax(dbapi_conn: Any, _: Any) -> None:
        if engine.dialect.name == "postgresql":
            autocommit, dbapi_conn.autocommit = dbapi_conn.autocommit, True  # a SET in a rolled-back transaction
            try:  # would be undone
                cursor = dbapi_conn.cursor()
                cursor.execute("SET synchronous_commit TO off")
                cursor.close()
            finally:
                dbapi_conn.autocommit = autocommit
        # asked on each new connection: one opened before the switch to WAL may still report the old mode
        elif dbapi_conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    if engine.dialect.name in ("postgresql", "sqlite"):
        event.listen(engine, "connect", relax)
        engine.dispose()  # connections opened so far (Optuna's schema check) lack the setting


def engine_kwargs(url: str) -> dict[str, Any]:
    """SQLAlchemy engine options lwnas uses for ``url`` (Optuna's storage and the driver lease)."""
    if url.startswith("sqlite"):
        # several processes (sweep driver, dashboard, status) share one file: wait for locks
        return {"connect_args": {"timeout": 60}}
    return {"pool_pre_ping": True}


def _hint(url: str) -> str:
    if url.startswith("postgresql"):
        return (
            "Is the server running and reachable from this machine (and from every node of a Ray cluster)? "
            "Is the driver installed (pip install 'psycopg[binary]')?"
        )
    if url.startswith("sqlite"):
        return "Is the directory writable? A SQLite file only works where every reader shares its file system."
    return "Check the URL (sqlite:///file.db or postgresql://user@host/db)."
