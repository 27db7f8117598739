"""Where sweeps keep their trials: an Optuna study in SQL storage, and how lwnas reads it back.

Each sweep is a normal Optuna study (``optuna.load_study`` and optuna-dashboard open it). lwnas adds
user attributes under fixed keys so the dashboard, ``lwnas status`` and ``lwnas export`` read the
same record (``TrialRecord``, ``tuners/record.py``): on the study, the study file and objective
metrics; on every trial, what the driver planned (one ``plan`` attribute: the adapted configuration, every
training setting, task, seed, static costs), one key per epoch's metrics, wall time, host and, on failure,
the reason.
Feasibility goes through Optuna's constraint API (``Trial.set_constraint``).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from searchspace.errors import LwnasError

from .outcomes import Outcome
from .record import TrialRecord

# study user attributes
STUDY_SPEC = "lwnas:study"  # the study file as a plain dict (name, task, objectives, space, ...)
STUDY_OBJECTIVES = "lwnas:objectives"  # [[metric, direction], ...] in Optuna's value order
STUDY_REJECTED = "lwnas:rejected"  # {"checked": n, "rejected": m, "reasons": {constraint: count}}
STUDY_VERSION = "lwnas:version"
# -- sweep budget and end (tuners/budget.py), confirmations (tuners/confirm.py), seed repeats --
STUDY_BUDGET = "lwnas:budget"  # the trial budget in force (the study file's, or as `--trials` set or raised it)
STUDY_BUDGET_CHANGES = "lwnas:budget_changes"  # [{"from": 20, "to": 40, "at": ISO time, "counted": 20}, ...]
STUDY_ENDED = "lwnas:ended"  # why the last driver ended: {"reason": ..., "detail": ..., "at": ..., "counted": n}
STUDY_SAMPLER_WINDOW = (
    "lwnas:sampler_window"  # finished trials tpe/gp learn from (null: all; tuners/windowed_sampler.py)
)
STUDY_CONFIRMATIONS = "lwnas:confirmations"  # `lwnas confirm` runs (tuners/confirm.py), by trial number
SEED_OF = "seed_of"  # trial attribute: the trial whose point this one retrains with another seed (tuners/seeds.py)
# -- end --
# trial user attributes
PLAN = "plan"  # the planned trial (tuners/record.py: what the worker trains) as one attribute: the keys below
# (the planned trial's fields; lwnas before the `plan` attribute wrote each as an attribute of its own, still read)
CONFIG = "config"  # the full ArchConfig as a dict, adapted to the task
TRAINING = "training"  # every training setting the trial runs with (seed, threads and epochs included)
TASK = "task"
TASK_OPTIONS = "task_options"
SEED = "seed"  # the trial's training seed (also in TRAINING)
COSTS = "costs"  # {"params": ..., "madds": ..., "memory": ...}
# (what happens to it)
EPOCH_PREFIX = "epoch:"  # epoch:0001, epoch:0002, ...: {"epoch": 1, "val_accuracy": ..., "wall_time": ...}
EPOCHS = "epochs"  # lwnas before per-epoch keys: the whole list, rewritten every epoch (still read)
WALL_TIME = "wall_time"
HOST = "host"
NODE = "node"  # the Ray node id the trial ran on
FAILURE = "failure"
OUTCOME = "outcome"  # an objectives.Outcome value: complete | infeasible | pruned | failed | interrupted
BUDGET_USED = "budget_used"  # epochs trained
SEED_CONFIG = "seed_config"  # name of the seed config the trial evaluates
REQUEUED_FROM = "requeued_from"  # number of the interrupted trial this one re-runs

DEFAULT_STORAGE = "sqlite:///lwnas.db"


# user:password@ up to the last @ before any query string (a password may hold @, / or : unescaped), else
# up to the last @ at all (a password holding ?); leading blanks and a mistyped `scheme:/` are masked too
_USERINFO = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9+.\-]*:/*[^:@/?]*):([^?]*|.*)@")
_QUERY_SECRET = re.compile(r"((?:password|passwd|pwd|sslpassword)=)([^&]*)", re.IGNORECASE)


def masked(url: str) -> str:
    """The storage URL with any password replaced by ***, by pattern, whether or not the URL parses."""
    text = _USERINFO.sub(r"\1:***@", url)
    return _QUERY_SECRET.sub(r"\1***", text)


def storage_arg(url: str) -> str:
    """``url`` as a shell word for a printed command; a URL with a password is left to LWNAS_STORAGE."""
    return '"$LWNAS_STORAGE"' if masked(url) != url else shlex.quote(url)


def secrets_of(url: str) -> list[str]:
    """The passwords written in ``url`` (what ``masked`` hides), longest first."""
    userinfo = _USERINFO.match(url)
    found = ([userinfo.group(2)] if userinfo else []) + [m.group(2) for m in _QUERY_SECRET.finditer(url)]
    # a driver that splits the URL elsewhere may echo a piece of the password (`pre@secret` -> `secret@host`)
    found += [unquote(s) for s in found]  # drivers decode %-escapes before they echo a password
    pieces = [piece for s in found for piece in re.split(r"[@:/]", s)]
    return sorted({s for s in found + pieces if s}, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's error message, say) with the URL masked and every password in it replaced."""
    text = text.replace(url, masked(url))
    for secret in secrets_of(url):
        text = text.replace(secret, "***")
    return text


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error (SQLAlchemy wraps it in ``orig`` and appends SQL and links)."""
    if isinstance(exc.__cause__, Exception):  # Optuna wraps the driver's error in a generic one of its own
        exc = exc.__cause__
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


class StorageError(LwnasError, RuntimeError):
    """The storage cannot be reached or read; the message names the masked URL and the fix."""


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and for SQLite in memory)."""
    if not url.startswith("sqlite:///") or ":memory:" in url:
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return Path(path) if path and not path.startswith("file:") else None


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


def epoch_key(epoch: int) -> str:
    """The user attribute holding one epoch's metrics: one small write per epoch, never a rewrite."""
    return f"{EPOCH_PREFIX}{epoch:04d}"


def epochs_of(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """A trial's per-epoch metrics in epoch order, from either layout (one key per epoch, or the old list)."""
    keyed = sorted(
        (int(k[len(EPOCH_PREFIX) :]), v)
        for k, v in attrs.items()
        if k.startswith(EPOCH_PREFIX) and k[len(EPOCH_PREFIX) :].isdigit()
    )
    return [v for _, v in keyed] if keyed else list(attrs.get(EPOCHS, []))


def record_of(trial: Any) -> TrialRecord:
    """A TrialRecord from an Optuna FrozenTrial (written by this lwnas or an earlier one)."""
    return record_from(
        trial.number,
        trial.state.name,
        trial.values,
        trial.params,
        trial.user_attrs,
        trial.constraints,
        trial.datetime_start,
        trial.datetime_complete,
    )


def record_from(
    number: int,
    state: str,
    values: Any,
    params: dict[str, Any],
    attrs: dict[str, Any],
    constraints: dict[str, float],
    datetime_start: Any = None,
    datetime_complete: Any = None,
    epochs: Any = None,
) -> TrialRecord:
    """A TrialRecord from a trial's parts: ``record_of``'s work, shared with ``tuners.record_read``, which
    builds records straight from storage rows without a FrozenTrial in between (and passes ``epochs``
    still undecoded, a ``record.StoredEpochs``, instead of the ``epoch:`` keys in ``attrs``)."""
    plan = attrs.get(PLAN) or attrs  # one attribute now; studies from before it hold each field alone
    default_outcome = {"COMPLETE": Outcome.COMPLETE, "PRUNED": Outcome.PRUNED, "FAIL": Outcome.FAILED}.get(state)
    default_outcome = default_outcome.value if default_outcome else state.lower()  # running, waiting
    return TrialRecord(
        number=number,
        config=plan.get(CONFIG, {}),
        training=plan.get(TRAINING, {}),
        task=plan.get(TASK),
        task_options=plan.get(TASK_OPTIONS, {}),
        seed=plan.get(SEED),
        costs=plan.get(COSTS, {}),
        state=state,
        outcome=attrs.get(OUTCOME, default_outcome),
        values=list(values) if values is not None else None,
        params=dict(params),
        constraints=dict(constraints),
        epochs=epochs_of(attrs) if epochs is None else epochs,
        wall_time=attrs.get(WALL_TIME),
        host=attrs.get(HOST),
        node=attrs.get(NODE),
        failure=attrs.get(FAILURE),
        seed_config=attrs.get(SEED_CONFIG),
        datetime_start=datetime_start,
        datetime_complete=datetime_complete,
    )


def planned_attrs(record: TrialRecord) -> dict[str, Any]:
    """The user attributes the driver writes for a planned trial (``record_of`` reads them back).

    One attribute, not one per field: each attribute is a transaction of its own through Optuna's storage
    API (read the trial, write, commit), so six keys cost five more transactions per trial than one."""
    return {
        PLAN: plain(
            {
                CONFIG: record.config,
                TRAINING: record.training,
                TASK: record.task,
                TASK_OPTIONS: record.task_options,
                SEED: record.seed,
                COSTS: record.costs,
            }
        )
    }


def plain(value: Any) -> Any:
    """JSON-safe copy (user attributes must be JSON serialisable)."""
    return json.loads(json.dumps(value, default=lambda o: list(o) if isinstance(o, tuple) else str(o)))
