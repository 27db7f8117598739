"""Where sweeps keep their trials: an Optuna study in SQL storage, and how lwnas reads it back.

Each sweep is a normal Optuna study (``optuna.load_study`` and optuna-dashboard open it). lwnas adds
user attributes under fixed keys so the dashboard, ``lwnas status`` and ``lwnas export`` read the
same record: on the study, the study file and objective metrics; on every trial, the full
configuration, static costs, per-epoch metrics, wall time, host and, on failure, the reason.
Feasibility goes through Optuna's constraint API (``Trial.set_constraint``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from searchspace.errors import LwnasError

from .outcomes import Outcome

# study user attributes
STUDY_SPEC = "lwnas:study"  # the study file as a plain dict (name, task, objectives, space, ...)
STUDY_OBJECTIVES = "lwnas:objectives"  # [[metric, direction], ...] in Optuna's value order
STUDY_REJECTED = "lwnas:rejected"  # {"checked": n, "rejected": m, "reasons": {constraint: count}}
STUDY_VERSION = "lwnas:version"
# trial user attributes
CONFIG = "config"  # the full ArchConfig as a dict
TRAINING = "training"  # training settings used
COSTS = "costs"  # {"params": ..., "madds": ..., "memory": ...}
EPOCHS = "epochs"  # [{"epoch": 1, "accuracy": ..., "wall_time": ...}, ...]
WALL_TIME = "wall_time"
HOST = "host"
NODE = "node"  # the Ray node id the trial ran on
FAILURE = "failure"
OUTCOME = "outcome"  # an objectives.Outcome value: complete | infeasible | pruned | failed | interrupted
BUDGET_USED = "budget_used"  # epochs trained
SEED_CONFIG = "seed_config"  # name of the seed config the trial evaluates
REQUEUED_FROM = "requeued_from"  # number of the interrupted trial this one re-runs

DEFAULT_STORAGE = "sqlite:///lwnas.db"


def masked(url: str) -> str:
    """The storage URL with any password replaced by ***, for logs and messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not an SQLAlchemy URL (e.g. a journal file): nothing to hide
        return url


class StorageError(LwnasError, RuntimeError):
    """The storage cannot be reached or read; the message names the masked URL and the fix."""


def open_storage(url: str):
    """An Optuna RDB storage for ``url``, with a clear error when it cannot be reached."""
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=_engine_kwargs(url))
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StorageError(f"cannot open storage {masked(url)}: {_scrub(reason, url)}. "
                           f"{_hint(url)}") from None


def _engine_kwargs(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        # several processes (sweep driver, dashboard, status) share one file: wait for locks
        return {"connect_args": {"timeout": 60}}
    return {"pool_pre_ping": True}


def _hint(url: str) -> str:
    if url.startswith("postgresql"):
        return ("Is the server running and reachable from this machine (and from every node of a Ray cluster)? "
                "Is the driver installed (pip install 'psycopg[binary]')?")
    if url.startswith("sqlite"):
        return "Is the directory writable? A SQLite file only works where every reader shares its file system."
    return "Check the URL (sqlite:///file.db or postgresql://user@host/db)."


def _scrub(text: str, url: str) -> str:
    """Remove a password that a driver may echo in its error message."""
    try:
        from sqlalchemy.engine import make_url

        password = make_url(url).password
    except Exception:
        return text
    return text.replace(password, "***") if password else text


@dataclass
class TrialRecord:
    """One trial as lwnas reads it back from storage (plain data for status, export, dashboard)."""

    number: int
    state: str  # Optuna's: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    outcome: str
    values: list[float] | None
    params: dict[str, Any]
    config: dict[str, Any]
    training: dict[str, Any]
    costs: dict[str, float]
    constraints: dict[str, float]
    epochs: list[dict[str, Any]] = field(default_factory=list)
    wall_time: float | None = None
    host: str | None = None
    node: str | None = None
    failure: str | None = None
    seed_config: str | None = None
    datetime_start: Any = None
    datetime_complete: Any = None

    @property
    def feasible(self) -> bool:
        return all(v <= 0 for v in self.constraints.values())


def record_of(trial: Any) -> TrialRecord:
    """A TrialRecord from an Optuna FrozenTrial."""
    attrs = trial.user_attrs
    state = trial.state.name
    default_outcome = {"COMPLETE": Outcome.COMPLETE, "PRUNED": Outcome.PRUNED, "FAIL": Outcome.FAILED}.get(state)
    default_outcome = default_outcome.value if default_outcome else state.lower()  # running, waiting
    return TrialRecord(
        number=trial.number, state=state, outcome=attrs.get(OUTCOME, default_outcome),
        values=list(trial.values) if trial.values is not None else None, params=dict(trial.params),
        config=attrs.get(CONFIG, {}), training=attrs.get(TRAINING, {}), costs=attrs.get(COSTS, {}),
        constraints=dict(trial.constraints), epochs=attrs.get(EPOCHS, []), wall_time=attrs.get(WALL_TIME),
        host=attrs.get(HOST), node=attrs.get(NODE), failure=attrs.get(FAILURE), seed_config=attrs.get(SEED_CONFIG),
        datetime_start=trial.datetime_start, datetime_complete=trial.datetime_complete)


def plain(value: Any) -> Any:
    """JSON-safe copy (user attributes must be JSON serialisable)."""
    return json.loads(json.dumps(value, default=lambda o: list(o) if isinstance(o, tuple) else str(o)))
