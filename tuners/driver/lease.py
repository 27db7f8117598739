"""One live driver per study: a lease row in the study's own SQL storage.

``lwnas sweep`` and ``lwnas resume`` take the lease of their study before they touch its trials
(re-queueing RUNNING trials would otherwise steal a live driver's work) and keep it fresh with a
heartbeat while Ray runs. The lease lives in a small table of its own (``lwnas_leases``) beside
Optuna's tables, reached through SQLAlchemy on the same URL, because taking it must be atomic:
an INSERT that only one driver can win, or an UPDATE conditioned on the old holder's token. A
holder counts as gone when its heartbeat is stale, or when it ran on this host, in this process
namespace, and its process no longer exists (a driver killed with ``kill -9`` is taken over at once
by the next resume). Heartbeats are stamped and judged by the database's clock, so drivers on
hosts whose clocks disagree never see a live holder as stale.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from searchspace.errors import LwnasError
from tuners.store.connection import StorageError, engine_kwargs, refuse_writes
from tuners.store.urls import first_line, masked, scrub, sqlite_path

HEARTBEAT_S = 10.0  # how often a driver renews its lease
STALE_S = 60.0  # a lease not renewed for this long belongs to a driver that is gone (another host, or hung)

_metadata = sa.MetaData()
LEASES = sa.Table(
    "lwnas_leases",
    _metadata,
    sa.Column("study_name", sa.String(512), primary_key=True),
    # this driver's identity (host and pid can repeat), then `@` and its process namespace (see Holder.gone)
    sa.Column("token", sa.String(64), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("since", sa.DateTime, nullable=False),  # UTC by the database's clock, naive (SQLite keeps no zone)
    sa.Column("heartbeat", sa.DateTime, nullable=False),
)


class LeaseHeld(LwnasError, RuntimeError):
    """Another live driver runs the study."""

    exit_code = 3


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    since: datetime
    heartbeat: datetime
    namespace: str = ""  # the holder's process namespace, from its token

    def gone(self, now: datetime) -> bool:
        """True when the holding driver can no longer be running."""
        if (now - self.heartbeat).total_seconds() > STALE_S:
            return True
        # containers on host networking share the host's name but not its pids: another namespace's pid
        # says nothing here, so such a holder is only gone once its heartbeat is stale
        return self.host == socket.gethostname() and self.namespace == _pid_namespace() and not _pid_alive(self.pid)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since:%Y-%m-%d %H:%M:%S} UTC"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _pid_namespace() -> str:
    """This process's pid namespace ('' where the system has none to name)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _db_now(con) -> datetime:
    """The database's clock in UTC, naive: one clock for every driver, whatever their hosts' clocks say."""
    now = con.execute(sa.select(sa.func.current_timestamp())).scalar()
    if isinstance(now, str):  # a driver that returns SQLite's text as it is
        now = datetime.fromisoformat(now)
    return now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now  # SQLite's is UTC already


WAIT_OR_RESUME = "wait for it to finish, or stop it and run `lwnas resume` again"  # what a refused resume is told


class StudyLease:
    """The lease of one study for this process; ``acquire`` raises LeaseHeld when a live driver has it.

    ``advice`` ends the line LeaseHeld prints: what the refused command can do instead.
    """

    def __init__(self, url: str, study_name: str, advice: str = WAIT_OR_RESUME):
        self.url, self.study_name, self.advice = url, study_name, advice
        self.token = f"{uuid.uuid4().hex}@{_pid_namespace()}"[:64]
        self.engine = sa.create_engine(url, **engine_kwargs(url))
        self.lost: str | None = None  # why the lease was lost mid-sweep (the driver then stops)
        self.storage_failed = False  # lost because the storage broke (not to another driver)
        self.taken_over: Holder | None = None  # the gone driver this one replaced
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file = sqlite_path(url)
        self._inode: int | None = None

    # ---- taking and giving back ----------------------------------------------------------------
    def acquire(self) -> None:
        """Take the lease (or take it over from a gone holder) and start the heartbeat."""
        try:
            self._create_table()
            self._take()
        except LeaseHeld:
            self.engine.dispose()
            raise
        except SQLAlchemyError as exc:
            self.engine.dispose()
            raise StorageError(
                f"cannot take the driver lease of study {self.study_name!r} in "
                f"{masked(self.url)}: {scrub(first_line(exc), self.url)}"
            ) from None
        if self._file is not None:
            self._inode = self._file.stat().st_ino
        self._thread = threading.Thread(target=self._beat, name="lwnas-lease", daemon=True)
        self._thread.start()

    def raise_if_held(self) -> None:
        """Raise LeaseHeld when a live driver holds this study's lease; reads only (nothing is made or taken)."""
        try:
            with self.engine.connect() as con:
                if not sa.inspect(con).has_table(LEASES.name):
                    return
                now = _db_now(con)
                current = (
                    con.execute(sa.select(LEASES).where(LEASES.c.study_name == self.study_name)).mappings().first()
                )
        except SQLAlchemyError as exc:
            raise StorageError(
                f"cannot read the driver lease of study {self.study_name!r} in "
                f"{masked(self.url)}: {scrub(first_line(exc), self.url)}"
            ) from None
        finally:
            self.engine.dispose()
        if current is not None and not _holder(current).gone(now):
            raise self._held(_holder(current), now)

    def _held(self, holder: Holder, now: datetime) -> LeaseHeld:
        return LeaseHeld(
            f"study {self.study_name!r} is being run by another driver ({holder.describe()}, "
            f"last heartbeat {(now - holder.heartbeat).total_seconds():.0f} s ago); {self.advice}"
        )

    def _create_table(self) -> None:
        try:
            _metadata.create_all(self.engine, checkfirst=True)
        except (IntegrityError, OperationalError, sa.exc.ProgrammingError):
            # two drivers created it at the same moment (PostgreSQL reports the loser's duplicate type)
            _metadata.create_all(self.engine, checkfirst=True)

    def _take(self) -> None:
        with self.engine.begin() as con:
            now = _db_now(con)
        row = dict(
            study_name=self.study_name,
            token=self.token,
            host=socket.gethostname(),
            pid=os.getpid(),
            since=now,
            heartbeat=now,
        )
        try:
            with self.engine.begin() as con:
                con.execute(LEASES.insert().values(**row))
            return
        except IntegrityError:
            pass  # someone holds (or held) it
        with self.engine.begin() as con:
            current = con.execute(sa.select(LEASES).where(LEASES.c.study_name == self.study_name)).mappings().first()
        if current is None:  # released between our insert and our read: try once more from the start
            return self._take()
        holder = _holder(current)
        if not holder.gone(now):
            raise self._held(holder, now)
        # compare-and-swap on the old token: of several drivers taking over, exactly one wins
        with self.engine.begin() as con:
            won = con.execute(
                LEASES.update()
                .where(LEASES.c.study_name == self.study_name, LEASES.c.token == current["token"])
                .values(**row)
            ).rowcount
        if won != 1:
            return self._take()
        self.taken_over = holder

    def release(self) -> None:
        """Stop the heartbeat and give the lease back (only if it is still ours)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=HEARTBEAT_S)
        if self._file is not None and self._inode != _inode(self._file):
            return  # a new connection would create an empty database where the deleted one was
        try:
            with self.engine.begin() as con:
                con.execute(LEASES.delete().where(LEASES.c.study_name == self.study_name, LEASES.c.token == self.token))
        except SQLAlchemyError:
            pass  # the storage is gone (the sweep already reports why); a stale lease is taken over later
        self.engine.dispose()

    # ---- heartbeat ----------------------------------------------------------------------------
    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.renew()
            if self.lost:
                return

    def renew(self) -> None:
        """Refresh the heartbeat; records in ``lost`` why when the lease is no longer ours."""
        if self._file is not None and self._inode != _inode(self._file):
            # open connections keep writing into a deleted file's inode, where nobody will ever read it
            self.lost, self.storage_failed = f"the SQLite file {self._file} was deleted or replaced", True
            return
        if self._file is not None and not os.access(self._file, os.W_OK):
            # in WAL mode (tuners.store.connection) commits go to the -wal file, so a read-only main file fails no write
            self.lost, self.storage_failed = f"the SQLite file {self._file} was made read-only", True
            return
        try:
            with self.engine.begin() as con:
                mine = con.execute(
                    LEASES.update()
                    .where(LEASES.c.study_name == self.study_name, LEASES.c.token == self.token)
                    .values(heartbeat=_db_now(con))
                ).rowcount
        except SQLAlchemyError as exc:
            self.lost = f"the storage stopped answering: {scrub(first_line(exc), self.url)}"
            self.storage_failed = True
            return
        if mine != 1:
            self.lost = "another driver took the study over (this driver's heartbeat was stale)"


def _holder(row) -> Holder:
    """The holder a lease row names."""
    return Holder(row["host"], row["pid"], row["since"], row["heartbeat"], row["token"].partition("@")[2])


def _inode(path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def live_driver(url: str, study_name: str) -> Holder | None:
    """The live driver of ``study_name`` (its lease is held and not gone), or None; reads only.

    ``lwnas status`` asks, so that trials still RUNNING in storage after their driver stopped (Ctrl-C,
    kill -9, a lost host) are told apart from trials that run. Without a lease table there is no driver.
    """
    engine = sa.create_engine(url, **engine_kwargs(url))
    refuse_writes(engine)
    try:
        with engine.connect() as con:
            if not sa.inspect(con).has_table(LEASES.name):
                return None
            now = _db_now(con)
            row = con.execute(sa.select(LEASES).where(LEASES.c.study_name == study_name)).mappings().first()
    except SQLAlchemyError as exc:
        raise StorageError(
            f"cannot read the driver lease of study {study_name!r} in {masked(url)}: {scrub(first_line(exc), url)}"
        ) from None
    finally:
        engine.dispose()
    if row is None or _holder(row).gone(now):
        return None
    return _holder(row)


def stale_outcomes(outcomes: dict[str, int], url: str, study_name: str) -> tuple[dict[str, int], Holder | None]:
    """``(outcomes, live driver)``: trial counts by outcome with ``running`` counted as ``stale`` when no live driver
    holds the study (storage keeps trials RUNNING after Ctrl-C or a killed driver, until a resume); reads only."""
    if not outcomes.get("running"):
        return outcomes, None
    holder = live_driver(url, study_name)
    if holder is not None:
        return outcomes, holder
    return {("stale" if k == "running" else k): v for k, v in outcomes.items()}, None
