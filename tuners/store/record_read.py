"""Read a study's trials straight into ``TrialRecord``s: one row per trial per table, aggregated in SQL.

``TrialReader`` (``tuners/store/bulk_read.py``) returns Optuna's ``FrozenTrial``s; the dashboard and
``lwnas status`` only want ``record_of(trial)``. Profiling a 5,000-trial read showed the time spread
over one Python step per stored row (a trial has about 20 attribute rows and 10 param rows), one JSON
decode per attribute, and the FrozenTrial built in between. Here the database concatenates each
trial's rows of a table into one JSON text (``group_concat`` on SQLite, ``string_agg`` on PostgreSQL),
so Python decodes one text per trial and table with orjson and builds the record with
``storage.record_from``, the function ``record_of`` itself uses. Intermediate values are not read
(no record field uses them). ``tests/test_record_read.py`` checks the records equal ``record_of`` over
Optuna's own view on both backends.

Floats are the one trap: SQLite 3.40's text form of a REAL keeps 15 digits, so values and params go
through ``printf('%!.20e')``, which round-trips every double; the reader checks that on the live
connection before trusting it (and PostgreSQL's ``float8`` text is the shortest exact form since
version 12). Any other database, schema or storage goes through ``TrialReader`` and ``record_of``.
The incremental contract is ``TrialReader``'s, kept by the same ``read_since.ReadSince``: later reads return
only new trials and open ones (running, waiting) that changed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import json
import threading
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson
from optuna.distributions import json_to_distribution
from sqlalchemy import String, bindparam, text

from tuners.store import keys
from tuners.store import tables as t
from tuners.store.bulk_read import TrialReader
from tuners.store.read_since import OPEN, ReadSince
from tuners.store.record import StoredEpochs, TrialRecord, record_from, record_of

# per dialect: a JSON string of a text column, a float as exact JSON text, an aggregate joining texts with ","
_SQL = {
    "sqlite": {"quote": "json_quote({})", "float": "printf('%!.20e', {})", "join": "group_concat({}, ',')"},
    "postgresql": {"quote": "to_json({})::text", "float": "CAST({} AS TEXT)", "join": "string_agg({}, ',')"},
}
# doubles whose short text forms are inexact: the float form must give each back bit for bit
_CHECK_FLOATS = (0.1, 1 / 3, 2**-1074, 1.7976931348623157e308, 5e-324 * 3, 123456789.123456789e-300)


_PAUSE_LOCK = threading.Lock()
_pauses = 0  # readers inside collector_paused, across threads (the dashboard serves sessions in threads)
_was_enabled = False  # whether the collector ran before the first of them paused it


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while building many small objects that stay alive (a study's
    records): its full passes over them were 40% of a 5,000-trial first view. Reference counting still frees.

    The collector is process-wide: the first pause turns it off and the last one out turns it back on (if it
    was on), so overlapping pauses in several threads cannot leave it off for good."""
    global _pauses, _was_enabled
    with _PAUSE_LOCK:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


class ReadTrial(NamedTuple):
    """One trial as read: its record and its parent (the trial it repeats with another seed, else itself)."""

    record: TrialRecord
    parent: int


class RecordReader:
    """All trials of one study as records, then only what changed since the previous ``read``."""

    def __init__(self, storage: Any, study_id: int):
        self.storage, self.study_id = storage, study_id
        self.engine = t.bulk_engine(storage)
        self.sql = _SQL.get(self.engine.dialect.name) if self.engine is not None else None
        if self.sql is not None and not self._floats_exact():
            self.sql = None
        self.fallback = None if self.sql else TrialReader(storage, study_id)
        self.since: ReadSince[ReadTrial] = ReadSince(lambda read: read.record.state in OPEN)

    @property
    def bulk(self) -> bool:
        """Whether reads aggregate in SQL (False: ``TrialReader`` then ``record_of``)."""
        return self.sql is not None

    def read(self) -> list[ReadTrial]:
        """Trials new or changed since the last call (every trial at the first), in trial-number order."""
        if not self.bulk:
            return [ReadTrial(record_of(tr), _parent(tr.user_attrs, tr.number)) for tr in self.fallback.read()]
        with collector_paused():
            pairs = self._read_sql()
        return self.since.changed(pairs)

    def _floats_exact(self) -> bool:
        query = text("SELECT " + self.sql["float"].format(":x"))
        with self.engine.connect() as conn:
            return all(float(conn.execute(query, {"x": x}).scalar()) == x for x in _CHECK_FLOATS)

    def _scope(self) -> tuple[str, dict[str, Any]]:
        """SQL condition on ``trials AS t`` selecting the trials to read now, and its parameters."""
        where, params = ["t.trial_id > :after"], {"sid": self.study_id, "after": self.since.max_trial_id}
        for i, ids in enumerate(self.since.open_chunks()):
            where.append(f"t.trial_id IN :open{i}")
            params[f"open{i}"] = ids
        return f"t.study_id = :sid AND ({' OR '.join(where)})", params

    def _read_sql(self) -> list[tuple[int, ReadTrial]]:
        scope, params = self._scope()
        queries = {name: _aggregate(self.sql, scope, *part) for name, part in _PARTS.items()}
        trials_sql = (
            "SELECT t.trial_id, t.number, CAST(t.state AS TEXT), t.datetime_start, t.datetime_complete "
            f"FROM trials t WHERE {scope} ORDER BY t.number"
        )
        with self.engine.connect() as conn, conn.begin():  # one short read transaction

            def run(sql: str) -> list:
                expanding = [bindparam(k, expanding=True) for k in params if k.startswith("open")]
                if ":multi" in sql:  # typed: PostgreSQL compares an empty list's placeholder with the names
                    expanding.append(bindparam("multi", expanding=True, type_=String))
                return conn.execute(text(sql).bindparams(*expanding), params).all()

            rows = run(trials_sql)
            single, params["multi"] = _distributions(run(DISTRIBUTIONS.format(scope=scope)))
            parts = {name: {row[0]: row[1:] for row in run(sql)} for name, sql in queries.items()}
        return [
            (row[0], _read_trial(row, *(parts[name].get(row[0], _NONE) for name in _PARTS), single)) for row in rows
        ]


# substr, not LIKE: SQLite's LIKE ignores case, and record_of reads `epoch:` keys case-sensitively
EPOCH_ROWS = f"substr(a.key, 1, {len(keys.EPOCH_PREFIX)}) = '{keys.EPOCH_PREFIX}'"
# per part: its table, which rows, and the JSON text of each row's items, in a dialect's terms ({quote}, {float});
# epoch records (most of the bytes) come apart from the other attributes, with their keys to count them undecoded
_PARTS = {
    "values": (
        "trial_values",
        "",
        (
            "'[' || objective || ',' || CASE WHEN a.value IS NULL THEN 'null' ELSE "
            "{float_value} END || ',\"' || CAST(value_type AS TEXT) || '\"]'",
        ),
    ),
    "params": (
        "trial_params",
        "",
        (
            "'[' || param_id || ',' || {quote_name} || ',' || {float_param} || CASE WHEN "
            "a.param_name IN :multi THEN ',' || {quote_distribution} ELSE '' END || ']'",
        ),
    ),
    "user": ("trial_user_attributes", f"NOT {EPOCH_ROWS}", ("{quote_key} || ':' || value_json",)),
    "epochs": ("trial_user_attributes", EPOCH_ROWS, ("{quote_key} || ':' || value_json", "{quote_key}")),
    "system": ("trial_system_attributes", "", ("{quote_key} || ':' || value_json",)),
}
_NONE = (None, None)
# A param's distribution is the same JSON text in nearly every trial, and repeating it in each param's row was
# 128 MB of the 100,000-trial read (its slowest query): read each (name, distribution) once, and only names
# stored with several distributions (a search space changed between trials) carry theirs per row
DISTRIBUTIONS = (
    "SELECT DISTINCT a.param_name, a.distribution_json FROM trials t "
    "JOIN trial_params a ON a.trial_id = t.trial_id WHERE {scope}"
)


def _aggregate(sql: dict[str, str], scope: str, table: str, rows: str, items: tuple[str, ...]) -> str:
    """One row per trial in scope: trial_id, then per item its rows' texts joined with commas."""
    terms = dict(
        float_value=sql["float"].format("a.value"),
        float_param=sql["float"].format("a.param_value"),
        quote_name=sql["quote"].format("a.param_name"),
        quote_key=sql["quote"].format("a.key"),
        quote_distribution=sql["quote"].format("a.distribution_json"),
    )
    joined = ", ".join(sql["join"].format(item.format(**terms)) for item in items)
    # grouped on the trials' side: SQLite then walks trials in id order and needs no temporary B-tree to group
    return (
        f"SELECT t.trial_id, {joined} FROM trials t JOIN {table} a ON a.trial_id = t.trial_id "
        f"WHERE {scope}{' AND ' + rows if rows else ''} GROUP BY t.trial_id"
    )


def _json(text_: str) -> Any:
    """Decode with orjson; Python's json for the NaN and Infinity orjson rejects (stored by ``json.dumps``)."""
    try:
        return orjson.loads(text_)
    except orjson.JSONDecodeError:
        return json.loads(text_)


_DISTRIBUTIONS: dict[str, Any] = {}  # a study has few distinct distributions: parse each JSON once


def _distributions(rows: list) -> tuple[dict[str, str], list[str]]:
    """The distribution JSON of each param name stored with one, and the names stored with several."""
    found: dict[str, set[str]] = {}
    for name, distribution in rows:
        found.setdefault(name, set()).add(distribution)
    return (
        {name: next(iter(texts)) for name, texts in found.items() if len(texts) == 1},
        sorted(name for name, texts in found.items() if len(texts) > 1),
    )


def _distribution(text_: str) -> Any:
    if text_ not in _DISTRIBUTIONS:
        _DISTRIBUTIONS[text_] = json_to_distribution(text_)
    return _DISTRIBUTIONS[text_]


_OFFSETS: dict[tuple, dt.timedelta] = {}  # (UTC minute, local zone) -> the local offset then


def _moment(value: Any) -> dt.datetime | None:
    """A stored datetime (SQLite gives its ISO text, PostgreSQL a datetime) as FrozenTrial's local time.

    ``to_local`` asks the C library for the zone's offset at each moment (two per trial: 1 s of a 100,000-trial
    read); the offset is kept per UTC minute and zone instead, as zones change offset only on whole minutes
    (every offset has been whole minutes since 1972)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    minute = value.replace(second=0, microsecond=0)
    key = (minute, time.timezone, time.altzone, time.tzname)  # time.tzset() changes these with the zone
    offset = _OFFSETS.get(key)
    if offset is None:
        if len(_OFFSETS) > 100_000:  # a long-lived dashboard: forget rather than grow
            _OFFSETS.clear()
        offset = _OFFSETS[key] = t.to_local(minute) - minute
    return value + offset


def _parent(user_attrs: dict[str, Any], number: int) -> int:
    return int(user_attrs.get(keys.SEED_OF, number))  # as tuners.fronts.seeds.parent_of


def constraints_of(system_attrs: dict[str, Any]) -> dict[str, float]:
    """Constraint values as ``FrozenTrial.constraints`` reads them from system attributes: Optuna's old
    list under ``constraints`` (named "0", "1", ...), then one ``constraints:NAME`` key per constraint."""
    out = {str(i): c for i, c in enumerate(system_attrs.get("constraints") or [])}
    out.update({k[len("constraints:") :]: v for k, v in system_attrs.items() if k.startswith("constraints:")})
    return out


def _read_trial(
    row: Any, values: tuple, params: tuple, user: tuple, epochs: tuple, system: tuple, distributions: dict[str, str]
) -> ReadTrial:
    """A trial's record from its row and its parts' texts (each a tuple of the part's joined items); a param
    whose row carries no distribution has the one of ``distributions``."""
    (values,), (params,), (user,), (system,) = values[:1], params[:1], user[:1], system[:1]
    trial_id, number, state, start, complete = row
    objective_values = None
    if values:
        pairs = sorted(orjson.loads(f"[{values}]"))
        objective_values = [t.value_of(value, kind) for _, value, kind in pairs]
    params_ = {}
    for _, name, value, *own in sorted(orjson.loads(f"[{params}]")) if params else ():
        distribution = own[0] if own else distributions[name]
        params_[name] = _distribution(distribution).to_external_repr(value)  # in suggestion (param_id) order
    attrs = _json(f"{{{user}}}") if user else {}
    constraints = constraints_of(_json(f"{{{system}}}")) if system else {}
    stored = None
    if epochs[0]:
        count = sum(key[len(keys.EPOCH_PREFIX) :].isdigit() for key in orjson.loads(f"[{epochs[1]}]"))
        stored = StoredEpochs(epochs[0], count) if count else None  # none numbered: the old list layout
    record = record_from(
        number, state, objective_values, params_, attrs, constraints, _moment(start), _moment(complete), epochs=stored
    )
    return ReadTrial(record, _parent(attrs, number))
