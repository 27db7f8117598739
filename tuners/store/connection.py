"""Opening a sweep's SQL storage: one Optuna ``RDBStorage`` per URL, with lwnas's engine settings and errors."""

from __future__ import annotations

import random
import time
from typing import Any

from searchspace.errors import LwnasError
from tuners.store.urls import first_line, masked, scrub, sqlite_path, sqlite_two_slashes

# tables every RDB storage has once Optuna has set it up; a database without them is not a sweep's storage
OPTUNA_TABLES = ("studies", "trials", "version_info", "alembic_version")
CREATE_TRIES = 8  # RDBStorage set-ups of one new database by several drivers at once (each retry sees more of it)


class StorageError(LwnasError, RuntimeError):
    """The storage cannot be reached or read; the message names the masked URL and the fix."""


def open_storage(url: str, *, create: bool = False, read_only: bool = False, flush_each_commit: bool = True):
    """An Optuna RDB storage for ``url``, with a clear error when it cannot be reached.

    Only ``lwnas sweep`` passes ``create=True``: every other command is given an existing storage, and one
    that is not there (a mistyped SQLite path, an empty file, another program's database) is told so
    before Optuna could create its tables in it. ``read_only=True`` (status, export, the dashboard) also
    makes every connection refuse writes. The sweep's driver passes ``flush_each_commit=False``
    (``skip_commit_flush``).
    """
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    fixed = sqlite_two_slashes(url)
    if fixed is not None:
        raise StorageError(
            f"storage {masked(url)} names no SQLite file (two slashes are followed by a host): write "
            f"{masked(fixed)} (three slashes, then a path from the working directory; four before an absolute path)"
        )
    path = sqlite_path(url)
    if path is not None and not create and not path.is_file():
        raise StorageError(
            f"no database at {masked(url)}: {path.resolve()} does not exist (is the path "
            f"mistyped? `lwnas sweep STUDY.yaml --storage URL` creates one)"
        )
    try:
        if not create:
            require_schema(url)
        storage = _rdb_storage(url, create)
    except (SQLAlchemyError, optuna.exceptions.StorageInternalError, ImportError, ValueError, OSError) as exc:
        reason = scrub(first_line(exc), url)
        raise StorageError(f"cannot open storage {masked(url)}: {reason}. {_hint(url, reason)}") from None
    if read_only:
        refuse_writes(storage.engine)
    elif path is not None:
        write_ahead_log(storage.engine)
    if not flush_each_commit:
        skip_commit_flush(storage.engine)
    return storage


def _rdb_storage(url: str, create: bool):
    """Optuna's storage over ``url``; with ``create``, its tables made (again, while another process makes them)."""
    import optuna

    for attempt in range(1, CREATE_TRIES + 1):
        try:
            # an existing storage is never set up: `require_schema` found Optuna's tables and version rows,
            # so the storage reads and writes nothing while it opens
            return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs(url), skip_table_creation=not create)
        except Exception as exc:
            if not (create and attempt < CREATE_TRIES and _created_meanwhile(exc)):
                raise
        # the other process goes on making its tables: the next try finds more of them made
        time.sleep(random.uniform(0.05, 0.25) * attempt)
    raise AssertionError("unreachable")


def _created_meanwhile(exc: BaseException) -> bool:
    """Whether ``exc`` says another process made the same table, type or row first (two new sweeps at once).

    SQLite says ``table studies already exists``; PostgreSQL reports a duplicate relation or type (a
    programming error) or a unique violation in its catalog; a second version row is a unique violation too.
    """
    from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

    seen = exc if isinstance(exc, SQLAlchemyError) else exc.__cause__  # Optuna wraps SQLAlchemy's error in its own
    if isinstance(seen, (IntegrityError, ProgrammingError)):
        return True
    return isinstance(seen, OperationalError) and "already exists" in str(seen.orig)


def require_schema(url: str) -> None:
    """Refuse, with one line, a database that holds no Optuna storage (an empty SQLite file, a database with
    no tables or another program's tables) before Optuna's ``RDBStorage`` would write its tables into it.

    Reads only: the connection refuses writes (``refuse_writes``).
    """
    import sqlalchemy as sa

    engine = sa.create_engine(url, **engine_kwargs(url))
    refuse_writes(engine)
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            missing = [t for t in OPTUNA_TABLES if t not in tables]
            # Optuna writes its version rows on open when they are missing
            unset = [] if missing else [t for t in OPTUNA_TABLES[2:] if _empty(conn, t)]
    finally:
        engine.dispose()
    if not missing and not unset:
        return
    where = f"{masked(url)} holds no lwnas storage"
    path = sqlite_path(url)
    start = f"`lwnas sweep STUDY.yaml --storage {masked(url)}` creates one there; commands that only read never do"
    if path is not None and path.stat().st_size == 0:
        raise StorageError(f"{where}: {path.resolve()} is an empty file (0 bytes); {start}")
    if not tables:
        raise StorageError(f"{where}: the database has no tables; {start}")
    if len(missing) == len(OPTUNA_TABLES):
        count = f"{len(tables)} table" + ("s" if len(tables) > 1 else "")
        raise StorageError(
            f"{where}: the database has {count} and none of Optuna's ({', '.join(OPTUNA_TABLES)}); "
            f"is it another program's database? Check the URL"
        )
    if missing:
        raise StorageError(
            f"{where}: the database lacks Optuna's {', '.join(missing)} (an incomplete storage); {start}"
        )
    raise StorageError(
        f"{where}: Optuna's table {unset[0]} is empty (a storage whose set-up was cut short); "
        f"`lwnas sweep STUDY.yaml --storage {masked(url)}` completes it"
    )


def _empty(conn: Any, table: str) -> bool:
    import sqlalchemy as sa

    return conn.execute(sa.select(sa.func.count()).select_from(sa.table(table))).scalar() == 0


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

    def relax(dbapi_conn: Any, _: Any) -> None:
        if engine.dialect.name == "postgresql":
            _pg_set(dbapi_conn, "SET synchronous_commit TO off")
        # asked on each new connection: one opened before the switch to WAL may still report the old mode
        elif dbapi_conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    _on_connect(engine, relax)


def refuse_writes(engine: Any) -> None:
    """Every connection of ``engine`` refuses to write: SQLite's ``query_only``, PostgreSQL's
    ``default_transaction_read_only`` (the commands that only read open their storage so).

    SQLite's ``mode=ro`` would refuse too, but it leaves the ``-wal`` and ``-shm`` files of a WAL database
    behind when it is the last connection to close; a ``query_only`` connection removes them as any other.
    """

    def read_only(dbapi_conn: Any, _: Any) -> None:
        if engine.dialect.name == "postgresql":
            _pg_set(dbapi_conn, "SET default_transaction_read_only TO on")
        else:
            dbapi_conn.execute("PRAGMA query_only = ON")

    _on_connect(engine, read_only)


def _on_connect(engine: Any, setup: Any) -> None:
    """Run ``setup`` on each new connection of a SQLite or PostgreSQL ``engine`` (from now on)."""
    from sqlalchemy import event

    if engine.dialect.name in ("postgresql", "sqlite"):
        event.listen(engine, "connect", setup)
        engine.dispose()  # connections opened so far (Optuna's schema check) lack the setting


def _pg_set(dbapi_conn: Any, statement: str) -> None:
    """A session setting on a new PostgreSQL connection (``SET``, not a connect option: a connect option would
    replace the ``options`` of the user's URL, and poolers such as PgBouncer refuse it)."""
    autocommit, dbapi_conn.autocommit = dbapi_conn.autocommit, True  # a SET in a rolled-back transaction
    try:  # would be undone
        cursor = dbapi_conn.cursor()
        cursor.execute(statement)
        cursor.close()
    finally:
        dbapi_conn.autocommit = autocommit


def engine_kwargs(url: str) -> dict[str, Any]:
    """SQLAlchemy engine options lwnas uses for ``url`` (Optuna's storage and the driver lease)."""
    if url.startswith("sqlite"):
        # several processes (sweep driver, dashboard, status) share one file: wait for locks
        return {"connect_args": {"timeout": 60}}
    return {"pool_pre_ping": True}


def _hint(url: str, reason: str) -> str:
    if url.startswith("postgresql"):
        return (
            "Is the server running and reachable from this machine (and from every node of a Ray cluster)? "
            "Is the driver installed (pip install 'psycopg[binary]')?"
        )
    if url.startswith("sqlite") and "not a database" in reason:
        return "Is the path that of a sweep's SQLite file?"
    if url.startswith("sqlite"):
        return "Is the directory writable? A SQLite file only works where every reader shares its file system."
    return "Check the URL (sqlite:///file.db or postgresql://user@host/db)."
