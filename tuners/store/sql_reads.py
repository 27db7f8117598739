"""The trial store's fast SQL reads (``tuners.store.trial_store.TrialStore`` is their one caller).

Optuna's ``RDBStorage`` reads a study as one ORM object per stored row; at 100,000 trials that takes
minutes. Here a study is read in a handful of queries on Optuna's own tables (``tables.py``), three ways:

* ``read_frozen``: Optuna's ``FrozenTrial``s, one query per table joined on the study's trials (equal to
  ``storage.get_all_trials``: ``tests/test_bulk_read.py``).
* ``read_records``: ``TrialRecord``s straight from storage, read as columns: one query per table, values and
  params as the numbers stored, each param name's distribution decoded once, each trial's other attributes
  concatenated by the database into one JSON text (``group_concat`` on SQLite, ``string_agg`` on PostgreSQL)
  and decoded with orjson, the record built by ``record.record_from`` (what ``record_of`` uses). A finished
  trial's epoch records are counted, not read, until one is needed (``EpochTexts``) (``tests/test_record_read.py``
  checks the records equal ``record_of`` over Optuna's view).

Every read is one short transaction (a reader never holds a lock a running sweep waits on) and reads only the
trials after a ``ReadSince`` point: Optuna never changes a finished trial and trial ids grow, so a reader that
remembers the largest trial id it read and the trials still open then (running, waiting) needs only those
next time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import orjson
from optuna.distributions import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
    json_to_distribution,
)
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import String, bindparam, or_, select, text

from tuners.store import keys
from tuners.store import tables as t
from tuners.store.columns import TrialColumns
from tuners.store.record import ReadTrial, StoredEpochs, constraints_of

OPEN = ("RUNNING", "WAITING")
CHUNK = 500  # trial ids per IN list (SQLite allows 32,766 bound values; PostgreSQL more)

T = TypeVar("T")


class ReadSince(Generic[T]):
    """The point a read continues from: the largest trial id read, and each trial open at the last read (by id)."""

    def __init__(self, is_open: Callable[[T], bool]):
        self.max_trial_id = -1  # trials above it are new at the next read
        self.open: dict[int, T] = {}  # trials running or waiting at the last read, by id
        self._is_open = is_open

    def open_chunks(self) -> list[list[int]]:
        """The open trials' ids, sorted, in lists of at most ``CHUNK`` (one SQL ``IN`` list each)."""
        ids = sorted(self.open)
        return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]

    def changed(self, pairs: list[tuple[int, T]]) -> list[T]:
        """Of ``(trial id, trial)`` just read, the new ones and the open ones that changed; remembers them."""
        changed = [trial for key, trial in pairs if self.open.get(key) != trial]  # an open trial may be as it was
        for key, trial in pairs:
            self.max_trial_id = max(self.max_trial_id, key)
            self.open.pop(key, None)
            if self._is_open(trial):
                self.open[key] = trial
        return changed

    def changed_rows(self, ids: list[int], open_rows: list[bool], trial_at: Callable[[int], T]) -> list[int]:
        """``changed`` for a read as columns: of rows with trial ``ids`` (``open_rows``: running or waiting
        now), the positions of the new ones and of the open ones that changed; ``trial_at(i)`` builds row
        ``i``'s trial, asked only for rows open now or at the last read (to compare and remember)."""
        keep = []
        for i, key in enumerate(ids):
            self.max_trial_id = max(self.max_trial_id, key)
            before = self.open.pop(key, None)
            if before is None and not open_rows[i]:
                keep.append(i)
                continue
            trial = trial_at(i)
            if before != trial:
                keep.append(i)
            if open_rows[i]:
                self.open[key] = trial
        return keep


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


# ---- FrozenTrials: one query per table ------------------------------------------------------------------
def read_frozen(engine: Any, study_id: int, since: ReadSince[FrozenTrial]) -> list[tuple[int, FrozenTrial]]:
    """(trial id, FrozenTrial) of the trials after ``since``, in trial-id order, as Optuna's RDBStorage builds them."""
    wanted = t.trials.c.trial_id > since.max_trial_id
    if since.open:
        wanted = or_(wanted, *(t.trials.c.trial_id.in_(ids) for ids in since.open_chunks()))
    scope = select(t.trials.c.trial_id).where(t.trials.c.study_id == study_id, wanted)
    with engine.connect() as conn, conn.begin():  # one short read transaction
        rows = conn.execute(select(t.trials).where(t.trials.c.trial_id.in_(scope)).order_by(t.trials.c.trial_id)).all()
        parts = {
            name: _grouped(conn.execute(select(*columns).where(columns[0].in_(scope))).all())
            for name, columns in _FROZEN_PARTS.items()
        }
    empty: list[tuple] = []
    return [
        (row.trial_id, _frozen(row, *(parts[name].get(row.trial_id, empty) for name in _FROZEN_PARTS))) for row in rows
    ]


# per table: trial_id first, then the columns a FrozenTrial needs, in the order _frozen unpacks them
_FROZEN_PARTS = {
    "values": (
        t.trial_values.c.trial_id,
        t.trial_values.c.objective,
        t.trial_values.c.value,
        t.trial_values.c.value_type,
    ),
    "params": (
        t.trial_params.c.trial_id,
        t.trial_params.c.param_id,
        t.trial_params.c.param_name,
        t.trial_params.c.param_value,
        t.trial_params.c.distribution_json,
    ),
    "user": (t.trial_user_attributes.c.trial_id, t.trial_user_attributes.c.key, t.trial_user_attributes.c.value_json),
    "system": (
        t.trial_system_attributes.c.trial_id,
        t.trial_system_attributes.c.key,
        t.trial_system_attributes.c.value_json,
    ),
    "steps": (
        t.trial_intermediate_values.c.trial_id,
        t.trial_intermediate_values.c.step,
        t.trial_intermediate_values.c.intermediate_value,
        t.trial_intermediate_values.c.intermediate_value_type,
    ),
}


def _grouped(rows: list[Any]) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = defaultdict(list)
    for row in rows:
        out[row[0]].append(tuple(row)[1:])
    return out


def _frozen(row: Any, values: list, params: list, user: list, system: list, steps: list) -> FrozenTrial:
    """One FrozenTrial from its rows, built as Optuna's RDBStorage builds it."""
    objective_values = None
    if values:
        objective_values = [0.0] * len(values)
        for objective, value, kind in values:
            objective_values[objective] = t.value_of(value, kind)
    params = sorted(params)  # by param_id: the order Optuna suggested them in
    distributions = {name: _distribution(text_) for _, name, _, text_ in params}
    return FrozenTrial(
        number=row.number,
        state=TrialState[row.state],
        value=None,
        values=objective_values,
        datetime_start=t.to_local(row.datetime_start),
        datetime_complete=t.to_local(row.datetime_complete),
        params={name: distributions[name].to_external_repr(value) for _, name, value, _ in params},
        distributions=distributions,
        user_attrs={key: _json(text_) for key, text_ in user},
        system_attrs={key: _json(text_) for key, text_ in system},
        intermediate_values={step: t.value_of(value, kind) for step, value, kind in steps},
        trial_id=row.trial_id,
    )


# ---- records: each trial's rows of a table aggregated into one JSON text -----------------------------------
def record_dialect(engine: Any) -> dict[str, str] | None:
    """The SQL terms ``read_records`` uses on ``engine``'s database (SQLite, PostgreSQL); None for another."""
    return _SQL.get(engine.dialect.name)


def _scope(study_id: int, since: ReadSince) -> tuple[str, dict[str, Any]]:
    """SQL condition on ``trials AS t`` selecting the trials after ``since``, and its parameters."""
    where = ["t.trial_id > :after"]
    params: dict[str, Any] = {"sid": study_id, "after": since.max_trial_id}
    for i, ids in enumerate(since.open_chunks()):
        where.append(f"t.trial_id IN :open{i}")
        params[f"open{i}"] = ids
    return f"t.study_id = :sid AND ({' OR '.join(where)})", params


def read_columns(engine: Any, sql: dict[str, str], study_id: int, since: ReadSince) -> TrialColumns:
    """The trials after ``since`` as ``TrialColumns``, in trial-number order (``sql``: ``record_dialect``).

    One query per table, read as columns: values and params as the numbers stored (exact, no float text), each
    param name's distribution decoded once; each trial's other attributes as one JSON text. A finished trial's
    epoch records, most of a study's bytes, are not read here: only how many it has, and its records are read
    for every trial of this read at once when one of them is first needed (``EpochTexts``). An open trial's are
    read now, since they may grow. ``since`` is not moved (``ReadSince.changed_rows`` does that).
    """
    scope, params = _scope(study_id, since)
    terms = _terms(sql)
    queries = {name: query.format(scope=scope, **terms) for name, query in _QUERIES.items()}
    with collector_paused(), engine.connect() as conn:
        if engine.dialect.name == "postgresql":  # one snapshot for every query (its default reads each anew)
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():  # one short read transaction
            return _columns_of(conn, queries, params, engine, sql, study_id)


def read_records(
    engine: Any, sql: dict[str, str], study_id: int, since: ReadSince[ReadTrial]
) -> list[tuple[int, ReadTrial]]:
    """(trial id, ReadTrial) of the trials after ``since``, in trial-number order: ``read_columns``' records."""
    columns = read_columns(engine, sql, study_id, since)
    parents = columns.parents()
    return [(columns.trial_ids[i], ReadTrial(columns.record(i), parents[i])) for i in range(len(columns))]


def _columns_of(
    conn: Any, queries: dict[str, str], params: dict[str, Any], engine: Any, sql: dict[str, str], study_id: int
) -> TrialColumns:
    """``read_columns``' queries on ``conn`` and the columns they make."""

    def run(name: str) -> list:
        # the open trials' id lists this query names (the range scans name none)
        named = set(re.findall(r":(open\d+)\b", queries[name]))
        expanding: list[Any] = [bindparam(k, expanding=True) for k in params if k in named]
        if ":multi" in queries[name]:  # typed: PostgreSQL compares an empty list's placeholder with the names
            expanding.append(bindparam("multi", expanding=True, type_=String))
        result = conn.execute(text(queries[name]).bindparams(*expanding), params)
        try:  # the driver's own tuples: a SQLAlchemy Row per row cost a third of the time on 1.4 million params
            return list(result.cursor.fetchall())
        finally:
            result.close()

    rows = run("trials")
    if engine.dialect.name == "sqlite" and rows and _most_trials(conn, len(rows)):
        ids = [row[0] for row in rows]
        if max(ids) - min(ids) + 1 == len(ids):
            # the read's trials are exactly the ids from the least to the largest (ids are unique): a range
            # test per row instead of a lookup in the list of ids (0.6 s of the two scans at 100,000 trials)
            queries["params"], queries["distributions"] = queries["params_range"], queries["distributions_range"]
            params["lo"], params["hi"] = min(ids), max(ids)
        else:
            queries["params"], queries["distributions"] = queries["params_scan"], queries["distributions_scan"]
    single, params["multi"] = _distributions(run("distributions"))
    values, params_ = _values(run("values")), _params(run("params"), single)
    user, system = dict(run("user")), dict(run("system"))
    counts, open_epochs = dict(run("epoch_counts")), dict(run("open_epochs"))
    ids = [row[0] for row in rows]
    later = EpochTexts(engine, sql, study_id, [i for i in ids if i in counts and i not in open_epochs])
    no_params: dict[str, Any] = {}
    return TrialColumns(
        trial_ids=ids,
        numbers=[row[1] for row in rows],
        states=[row[2] for row in rows],
        values=[values.get(i) for i in ids],
        params=[params_.get(i, no_params) for i in ids],  # record_from copies them
        attrs=[_json(f"{{{user[i]}}}") if i in user else {} for i in ids],
        constraints=[constraints_of(_json(f"{{{system[i]}}}")) if i in system else {} for i in ids],
        starts=_moments([row[3] for row in rows]),
        completes=_moments([row[4] for row in rows]),
        # none numbered: the old list layout (``record.epochs_of`` reads it from attrs)
        epochs=[StoredEpochs(counts[i], open_epochs.get(i), later, i) if i in counts else None for i in ids],
    )


def _most_trials(conn: Any, read: int) -> bool:
    """Whether ``read`` trials are at least half of the database's (trial ids count every study's trials):
    then reading the params table in its stored order beats a lookup per trial through its index."""
    (largest,) = conn.exec_driver_sql("SELECT MAX(trial_id) FROM trials").one()
    return largest is not None and 2 * read >= largest


class EpochTexts:
    """The epoch records of a read's finished trials, read from storage (in one query per ``CHUNK`` trials) the
    first time any of them is needed: the dashboard's table of 100,000 trials needs only how many epochs each
    trained. A finished trial's epochs never change, so reading them later reads what they were."""

    def __init__(self, engine: Any, sql: dict[str, str], study_id: int, trial_ids: list[int]):
        self.engine, self.sql, self.study_id, self.trial_ids = engine, sql, study_id, trial_ids
        self._texts: dict[int, str] | None = None
        self._lock = threading.Lock()  # dashboard sessions are threads

    def text_of(self, trial_id: int) -> str:
        """The ``"epoch:NNNN": {...}`` members of trial ``trial_id``'s attributes, comma-joined."""
        with self._lock:
            if self._texts is None:
                query = text(_EPOCH_TEXTS.format(**_terms(self.sql))).bindparams(bindparam("ids", expanding=True))
                texts: dict[int, str] = {}
                with self.engine.connect() as conn:
                    for start in range(0, len(self.trial_ids), CHUNK):
                        chunk = self.trial_ids[start : start + CHUNK]
                        texts.update(conn.execute(query, {"sid": self.study_id, "ids": chunk}).all())
                self._texts = texts
            return self._texts.get(trial_id, "")


def _values(rows: list) -> dict[int, list[float]]:
    """Each trial's objective values in objective order."""
    by_trial: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for trial_id, objective, value, kind in rows:
        by_trial[trial_id].append((objective, t.value_of(value, kind)))
    return {trial_id: [value for _, value in sorted(pairs)] for trial_id, pairs in by_trial.items()}


def _params(rows: list, distributions: dict[str, str]) -> dict[int, dict[str, Any]]:
    """Each trial's params in suggestion order (rows come by param_id), as their distributions show them; a row
    carries its own distribution only where its name was stored with several."""
    external = {name: _external(_distribution(text_)) for name, text_ in distributions.items()}
    by_trial: dict[int, dict[str, Any]] = defaultdict(dict)
    last, current = None, {}  # a trial's rows mostly come together: one lookup per run of them, not per row
    for trial_id, name, value, own in rows:
        if trial_id != last:
            last, current = trial_id, by_trial[trial_id]
        decode = external[name] if own is None else _external(_distribution(own))
        current[name] = value if decode is None else decode(value)
    return by_trial


def _external(distribution: Any) -> Callable[[float], Any] | None:
    """``distribution.to_external_repr``, or None where it returns the stored number itself (a float
    distribution's: 1.1 million calls saved at 100,000 trials); an int distribution's is ``int``, a
    categorical one's its choice at the stored index (as Optuna's, without a method call per param)."""
    kind = type(distribution)
    if kind is FloatDistribution:
        return None
    if kind is IntDistribution:
        return int
    if kind is CategoricalDistribution:
        choices = distribution.choices
        return lambda value: choices[int(value)]
    return distribution.to_external_repr


# per dialect: a JSON string of a text column, an aggregate joining texts with ",", whether a text is all digits
_SQL = {
    "sqlite": {
        "quote": "json_quote({})",
        "join": "group_concat({}, ',')",
        "digits": "(length({0}) > 6 AND substr({0}, 7) NOT GLOB '*[^0-9]*')",
    },
    "postgresql": {
        "quote": "to_json({})::text",
        "join": "string_agg({}, ',')",
        "digits": "substr({0}, 7) ~ '^[0-9]+$'",
    },
}
# substr, not LIKE: SQLite's LIKE ignores case, and record_of reads `epoch:` keys case-sensitively
EPOCH_ROWS = f"substr(a.key, 1, {len(keys.EPOCH_PREFIX)}) = '{keys.EPOCH_PREFIX}'"
_FROM = "FROM trials t JOIN {table} a ON a.trial_id = t.trial_id WHERE {{scope}}"
# grouped on the trials' side: SQLite then walks trials in id order and needs no temporary B-tree to group
_QUERIES = {
    "trials": (
        "SELECT t.trial_id, t.number, CAST(t.state AS TEXT), t.datetime_start, t.datetime_complete "
        "FROM trials t WHERE {scope} ORDER BY t.number"
    ),
    # A param's distribution is the same JSON text in nearly every trial, and repeating it in each param's row
    # was 128 MB of the 100,000-trial read: read each (name, distribution) once, and only names stored with
    # several distributions (a search space changed between trials) carry theirs per row
    "distributions": "SELECT DISTINCT a.param_name, a.distribution_json " + _FROM.format(table="trial_params"),
    "values": "SELECT a.trial_id, a.objective, a.value, CAST(a.value_type AS TEXT) "
    + _FROM.format(table="trial_values"),
    "params": "SELECT a.trial_id, a.param_name, a.param_value, "
    "CASE WHEN a.param_name IN :multi THEN a.distribution_json END "
    + _FROM.format(table="trial_params")
    + " ORDER BY a.param_id",
    # the same rows in the same order, the table scanned in param_id (its rowid) order on SQLite: no lookup per
    # trial and no sort (1.27 -> 0.89 s for 1.4 million rows; the distinct distributions 0.57 -> 0.30 s); read
    # when a read takes most of the database's trials (a first read), as a refresh would scan it all for a few
    "params_scan": "SELECT a.trial_id, a.param_name, a.param_value, "
    "CASE WHEN a.param_name IN :multi THEN a.distribution_json END FROM trial_params a "
    "WHERE +a.trial_id IN (SELECT t.trial_id FROM trials t WHERE {scope}) ORDER BY a.param_id",
    "distributions_scan": "SELECT DISTINCT a.param_name, a.distribution_json FROM trial_params a "
    "WHERE +a.trial_id IN (SELECT t.trial_id FROM trials t WHERE {scope})",
    # the same scans where the read's trial ids are all the ids between two (a study alone in its database)
    "params_range": "SELECT a.trial_id, a.param_name, a.param_value, "
    "CASE WHEN a.param_name IN :multi THEN a.distribution_json END FROM trial_params a "
    "WHERE +a.trial_id BETWEEN :lo AND :hi ORDER BY a.param_id",
    "distributions_range": "SELECT DISTINCT a.param_name, a.distribution_json FROM trial_params a "
    "WHERE +a.trial_id BETWEEN :lo AND :hi",
    "user": "SELECT t.trial_id, {attrs} "
    + _FROM.format(table="trial_user_attributes")
    + f" AND NOT {EPOCH_ROWS} GROUP BY t.trial_id",
    "system": "SELECT t.trial_id, {attrs} " + _FROM.format(table="trial_system_attributes") + " GROUP BY t.trial_id",
    # numbered epoch keys only (`epoch:0001`): what ``keys.epochs_of`` reads
    "epoch_counts": "SELECT t.trial_id, COUNT(*) "
    + _FROM.format(table="trial_user_attributes")
    + f" AND {EPOCH_ROWS} AND {{digits}} GROUP BY t.trial_id",
    "open_epochs": "SELECT t.trial_id, {attrs} "
    + _FROM.format(table="trial_user_attributes")
    + f" AND {EPOCH_ROWS} AND CAST(t.state AS TEXT) IN ('RUNNING', 'WAITING') GROUP BY t.trial_id",
}
_EPOCH_TEXTS = (
    "SELECT t.trial_id, {attrs} FROM trials t JOIN trial_user_attributes a ON a.trial_id = t.trial_id "
    f"WHERE t.study_id = :sid AND t.trial_id IN :ids AND {EPOCH_ROWS} GROUP BY t.trial_id"
)


def _terms(sql: dict[str, str]) -> dict[str, str]:
    """The dialect's terms the queries above name: a trial's attribute rows as one JSON object's members, and
    whether a key's text after ``epoch:`` is all digits."""
    return {
        "attrs": sql["join"].format(sql["quote"].format("a.key") + " || ':' || a.value_json"),
        "digits": sql["digits"].format("a.key"),
    }


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


_OFFSETS: dict[tuple[Any, ...], dict[Any, dt.timedelta]] = {}  # local zone -> (UTC minute -> the local offset then)


def _moments(values: list[Any]) -> list[dt.datetime | None]:
    """Stored datetimes (SQLite gives its ISO text, PostgreSQL a datetime) as FrozenTrial's local times.

    ``to_local`` asks the C library for the zone's offset at each moment (two per trial: 1 s of a 100,000-trial
    read); the offset is kept per UTC minute and zone instead, as zones change offset only on whole minutes
    (every offset has been whole minutes since 1972). SQLite's text names its minute in its first 16 characters.
    One call per column of a read: the zone is looked up once, not per value."""
    zone = (time.timezone, time.altzone, time.tzname)  # time.tzset() changes these with the zone
    offsets = _OFFSETS.setdefault(zone, {})
    if len(offsets) > 100_000:  # a long-lived dashboard: forget rather than grow
        offsets.clear()
    parse = dt.datetime.fromisoformat
    out: list[dt.datetime | None] = []
    for value in values:
        if value is None:
            out.append(None)
            continue
        if isinstance(value, str):
            minute_key: Any = value[:16]
            value = parse(value)
        else:
            minute_key = value.replace(second=0, microsecond=0)
        offset = offsets.get(minute_key)
        if offset is None:
            minute = value.replace(second=0, microsecond=0)
            offset = offsets[minute_key] = t.to_local(minute) - minute
        out.append(value + offset)
    return out
