"""Optuna's RDB table layout as SQLAlchemy Core tables, for reading and writing trials in bulk.

Optuna's ``RDBStorage`` reads a study's trials as one ORM object per row and writes a trial in a
transaction of its own; that is what makes a 100,000-trial study slow to open and to create. The
table layout itself is public and versioned: Optuna migrates it with alembic and
``RDBStorage.get_current_version()`` names the revision. lwnas declares here only the columns it
reads or writes, for the revisions it was checked against (``KNOWN_SCHEMAS``); any other revision,
or a storage that is not an ``RDBStorage`` (journal, in-memory), goes through Optuna's own methods.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from sqlalchemy import Column, DateTime, Enum, Float, Integer, MetaData, String, Table, Text

# alembic revisions whose tables are laid out as below (Optuna 3.2 to 5.0 all use v3.2.0.a)
KNOWN_SCHEMAS = frozenset({"v3.2.0.a"})

# Optuna's enums are stored by member name; on PostgreSQL they are native enum types of these names
STATE = Enum("RUNNING", "COMPLETE", "PRUNED", "FAIL", "WAITING", name="trialstate")
VALUE_TYPE = Enum("FINITE", "INF_POS", "INF_NEG", name="trialvaluetype")
STEP_VALUE_TYPE = Enum("FINITE", "INF_POS", "INF_NEG", "NAN", name="trialintermediatevaluetype")

metadata = MetaData()
trials = Table(
    "trials",
    metadata,
    Column("trial_id", Integer, primary_key=True),
    Column("number", Integer),
    Column("study_id", Integer),
    Column("state", STATE),
    Column("datetime_start", DateTime),
    Column("datetime_complete", DateTime),
)
trial_values = Table(
    "trial_values",
    metadata,
    Column("trial_value_id", Integer, primary_key=True),
    Column("trial_id", Integer),
    Column("objective", Integer),
    Column("value", Float),
    Column("value_type", VALUE_TYPE),
)
trial_params = Table(
    "trial_params",
    metadata,
    Column("param_id", Integer, primary_key=True),
    Column("trial_id", Integer),
    Column("param_name", String(512)),
    Column("param_value", Float),
    Column("distribution_json", Text),
)
trial_user_attributes = Table(
    "trial_user_attributes",
    metadata,
    Column("trial_user_attribute_id", Integer, primary_key=True),
    Column("trial_id", Integer),
    Column("key", String(512)),
    Column("value_json", Text),
)
trial_system_attributes = Table(
    "trial_system_attributes",
    metadata,
    Column("trial_system_attribute_id", Integer, primary_key=True),
    Column("trial_id", Integer),
    Column("key", String(512)),
    Column("value_json", Text),
)
trial_intermediate_values = Table(
    "trial_intermediate_values",
    metadata,
    Column("trial_intermediate_value_id", Integer, primary_key=True),
    Column("trial_id", Integer),
    Column("step", Integer),
    Column("intermediate_value", Float),
    Column("intermediate_value_type", STEP_VALUE_TYPE),
)

_SPECIAL = {"INF_POS": math.inf, "INF_NEG": -math.inf, "NAN": math.nan}


def bulk_engine(storage: Any) -> Any:
    """The SQLAlchemy engine of ``storage`` when its tables are a layout listed here, else None."""
    from optuna.storages import RDBStorage

    if not isinstance(storage, RDBStorage):
        return None
    try:
        version = storage.get_current_version()
    except Exception:  # noqa: BLE001 - no alembic table (a database Optuna never set up): Optuna's own path
        return None
    return storage.engine if version in KNOWN_SCHEMAS else None


def stored_value(value: float) -> tuple[float | None, str]:
    """(value, value_type) as Optuna stores an objective or intermediate value."""
    if math.isnan(value):
        return None, "NAN"
    if math.isinf(value):
        return None, "INF_POS" if value > 0 else "INF_NEG"
    return value, "FINITE"


def value_of(value: float | None, value_type: str) -> float:
    """The float a stored (value, value_type) pair means."""
    if value_type in _SPECIAL:
        return _SPECIAL[value_type]
    if value is None:
        raise ValueError(f"a stored {value_type} value without a number")
    return float(value)


def to_utc(moment: dt.datetime | None) -> dt.datetime | None:
    """A naive local datetime (a FrozenTrial's) as the naive UTC Optuna stores."""
    return None if moment is None else moment.astimezone(dt.UTC).replace(tzinfo=None)


def to_local(moment: dt.datetime | None) -> dt.datetime | None:
    """A stored naive UTC datetime as the naive local time Optuna's FrozenTrial carries."""
    return None if moment is None else moment.replace(tzinfo=dt.UTC).astimezone().replace(tzinfo=None)
