"""The dashboard's data: studies in storage and their trials as pandas frames, read through ``tuners``.

Nothing here writes to storage. A ``TrialCache`` keeps one study's trials and refreshes them
incrementally through ``tuners.store.trial_store.TrialStore``: the first load reads every trial's record in
a few aggregated queries, and a refresh reads only trials that are new or were running (finished trials
never change), which keeps a live dashboard cheap on a study of 100,000 trials. Each record's knobs
(``knobs_of``) are worked out once and kept across refreshes.
"""

from __future__ import annotations

import datetime as dt
import gc
import itertools
import math
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState

from searchspace.study import MAXIMIZE, Objective
from tuners.fronts.objectives import (
    decoded_objectives,
    front_candidates,
    front_reference_point,
    hypervolume_over_trials,
    nondominated_records,
    nondominated_rows,
)
from tuners.fronts.seeds import SeedGroup, groups_of
from tuners.store import keys
from tuners.store.columns import LazyRecords, TrialColumns
from tuners.store.connection import open_storage
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord, record_of
from tuners.store.trial_store import TrialStore, collector_paused

from .live import LiveSets, LiveView

OPEN_STATES = (TrialState.RUNNING, TrialState.WAITING)
COST_METRICS = ("params", "madds", "memory", "latency", "latency_batch")
# shown beside a measured latency: its spread and what measured it (latencies of two machines do not compare)
LATENCY_DETAILS = ("latency_cv", "latency_batch_cv", "latency_device")
RECENT = 8  # newest trials whose times give a study's last update in the picker
FREEZE_AFTER = 1000  # trials read at once above which the collector stops tracking what exists (gc.freeze)


def connect(url: str) -> Any:
    """Open ``url`` for reading only: a missing SQLite file, or a database without Optuna's tables, is an error
    here (never a new empty database), and every connection refuses writes."""
    return open_storage(url, read_only=True)


def objectives_of(storage: Any, name: str, user_attrs: dict[str, Any], directions: list) -> tuple[Objective, ...]:
    """A study's objectives in Optuna's value order (its metric names are read only if it stores no objectives)."""
    return decoded_objectives(
        user_attrs, directions, lambda: optuna.load_study(study_name=name, storage=storage).metric_names
    )


def count_trials(storage: Any, study_id: int, at_least: int = 0) -> int:
    """Trials in a study without loading them: numbers are 0..n-1, so search for the first missing one."""

    def exists(number: int) -> bool:
        try:
            storage.get_trial_id_from_study_id_trial_number(study_id, number)
            return True
        except KeyError:
            return False

    low, step = at_least, 1  # every number below `low` exists
    while exists(low + step - 1):
        low, step = low + step, step * 2
    high = low + step - 1  # this one is missing
    while low < high:
        mid = (low + high) // 2
        low, high = (mid + 1, high) if exists(mid) else (low, mid)
    return low


def _last_time(trial: optuna.trial.FrozenTrial) -> dt.datetime | None:
    return trial.datetime_complete or trial.datetime_start


def study_state(storage: Any, study_id: int, n: int, running: list, recent: list) -> str:
    """``running`` (trials open), ``empty``, ``finished`` (a trial completed) or ``failed`` (none did:
    every trial failed, was pruned or was infeasible). Usually the recent trials decide it."""
    if running:
        return "running"
    if n == 0:
        return "empty"
    if any(record_of(t).outcome == Outcome.COMPLETE for t in recent):
        return "finished"
    done = storage.get_all_trials(study_id, deepcopy=False, states=(TrialState.COMPLETE,))
    return "finished" if any(record_of(t).outcome == Outcome.COMPLETE for t in done) else "failed"


def list_studies(url: str) -> pd.DataFrame:
    """One row per study: name, trials, state, objectives, last update (a few queries per study)."""
    storage = connect(url)
    rows = []
    for frozen in storage.get_all_studies():
        sid = storage.get_study_id_from_name(frozen.study_name)
        n = count_trials(storage, sid)
        running = storage.get_all_trials(sid, deepcopy=False, states=OPEN_STATES)
        recent = [
            storage.get_trial(storage.get_trial_id_from_study_id_trial_number(sid, i))
            for i in range(max(0, n - RECENT), n)
        ]
        times = [t for t in map(_last_time, [*recent, *running]) if t is not None]
        objectives = objectives_of(storage, frozen.study_name, frozen.user_attrs, frozen.directions)
        rows.append(
            {
                "study": frozen.study_name,
                "trials": n,
                "state": study_state(storage, sid, n, running, recent),
                "objectives": ", ".join(f"{o.metric} {'↑' if o.direction == MAXIMIZE else '↓'}" for o in objectives),
                "last update": max(times) if times else None,
            }
        )
    return pd.DataFrame(rows, columns=["study", "trials", "state", "objectives", "last update"])


def plot_value(record: TrialRecord, index: int, metric: str) -> float:
    """What a trial shows on a metric's axis: its objective value, else its static cost, else the
    metric at its last trained epoch (pruned, failed); NaN where it has none (never trained)."""
    if record.values is not None and math.isfinite(record.values[index]):
        return float(record.values[index])
    if metric in record.costs:
        return float(record.costs[metric])
    for epoch in reversed(record.epochs):
        value = epoch.get(f"val_{metric}")
        if value is not None and math.isfinite(value):
            return float(value)
    return math.nan


# training settings a record holds that are the sweep's bookkeeping, not a knob a study searches
# (`epochs` is the study's budget; the table's own `epochs` column is the epochs a trial trained)
RUN_SETTINGS = ("seed", "epochs")


def knobs_of(record: TrialRecord) -> dict[str, Any]:
    """Every knob of a trial: the full configuration and training settings, with each sampled knob as the
    study file and the CLI write it (``layer_sharing: albert``, not the ``(0x2)`` it resolves to)."""
    training = record.training
    if any(k in training for k in RUN_SETTINGS):  # a copy less the settings, in C: a comprehension per record
        training = dict(training)  # was 0.45 s of a 100,000-trial first view
        for k in RUN_SETTINGS:
            training.pop(k, None)
    return {**record.config, **training, **record.params}


def kind_of(record: TrialRecord, knobs: dict[str, Any]) -> tuple[int, tuple[str, ...]]:
    """What orders the table's knob columns: the record's config length (negated) and its knobs' names."""
    return -len(record.config), tuple(knobs)


Shape = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]  # the names in a record's config, training, params


@dataclass
class KnobGroup:
    """The records whose config, training and params have the same names in the same order (a study has a few
    such shapes): their knobs are transposed together, without a merged ``knobs_of`` dict per record."""

    at: list[int] = field(default_factory=list)  # positions in the records grouped
    config: list[tuple] = field(default_factory=list)  # each record's config values, in ``shape[0]`` order
    training: list[tuple] = field(default_factory=list)
    params: list[tuple] = field(default_factory=list)

    @staticmethod
    def knobs(shape: Shape) -> dict[str, tuple[int, int]]:
        """``knobs_of``'s names for records of ``shape`` in its order, each with where its value comes from
        (0 config, 1 training, 2 params; and the index there): params over training over config."""
        config, training, params = shape
        out = {name: (0, i) for i, name in enumerate(config)}
        for source, names in ((1, training), (2, params)):
            for i, name in enumerate(names):
                if not (source == 1 and name in RUN_SETTINGS):
                    out[name] = (source, i)  # a name already there keeps its place, as in ``{**a, **b}``
        return out

    def columns(self, shape: Shape) -> dict[str, tuple]:
        """Each knob's cells over this group's records (``knobs`` order)."""
        sources = [
            list(zip(*values)) if values and values[0] else [] for values in (self.config, self.training, self.params)
        ]
        return {name: sources[source][i] for name, (source, i) in self.knobs(shape).items()}


Parts = tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]], Sequence[dict[str, Any]]]


def knob_parts(records: Sequence[TrialRecord]) -> Parts:
    """The configs, training settings and params of ``records``: what ``knobs_of`` merges."""
    return [r.config for r in records], [r.training for r in records], [r.params for r in records]


def column_parts(columns: TrialColumns) -> Parts:
    """``knob_parts`` of a read's columns, without a record (a plan stored before one: empty dicts)."""
    plans = columns.plans()
    empty: dict[str, Any] = {}
    return (
        [p.get(keys.CONFIG, empty) for p in plans],
        [p.get(keys.TRAINING, empty) for p in plans],
        columns.params,
    )


def knob_groups(parts: Parts) -> dict[Shape, KnobGroup]:
    """Rows grouped by shape (``KnobGroup``), in the order of each shape's first row."""
    groups: dict[Shape, KnobGroup] = {}
    for i, (config, training, params) in enumerate(zip(*parts)):
        shape = (tuple(config), tuple(training), tuple(params))
        group = groups.get(shape)
        if group is None:
            group = groups[shape] = KnobGroup()
        group.at.append(i)
        group.config.append(tuple(config.values()))
        group.training.append(tuple(training.values()))
        group.params.append(tuple(params.values()))
    return groups


def kinds_of(
    numbers: Sequence[int], parts: Parts, groups: dict[Shape, KnobGroup] | None = None
) -> dict[tuple[int, tuple[str, ...]], list[int]]:
    """Each kind (``kind_of``) among the rows of ``parts`` (grouped: ``groups``, if given) and the trial numbers
    of that kind, in the order of first row."""
    out: dict[tuple[int, tuple[str, ...]], list[int]] = {}
    for shape, group in (knob_groups(parts) if groups is None else groups).items():
        kind = (-len(shape[0]), tuple(KnobGroup.knobs(shape)))
        out.setdefault(kind, []).extend(numbers[i] for i in group.at)
    return out


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return str(list(value) if isinstance(value, tuple) else value)
    return value


def _record_fields(records: Sequence[TrialRecord]) -> dict[str, list[Any]]:
    """The table's per-trial fields of ``records`` (``values`` and ``costs`` as each record holds them)."""
    return {
        "trial": [r.number for r in records],
        "outcome": [r.outcome for r in records],
        "state": [r.state for r in records],
        "values": [r.values for r in records],
        "costs": [r.costs for r in records],
        "epochs": [len(r.epochs) for r in records],
        "wall_time": [r.wall_time for r in records],
        "host": [r.host for r in records],
        "failure": [r.failure for r in records],
        "started": [r.datetime_start for r in records],
        "completed": [r.datetime_complete for r in records],
    }


def _column_fields(columns: TrialColumns, costs: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """``_record_fields`` of a read's columns (``costs``: each row's planned costs), without a record."""
    return {
        "trial": columns.numbers,
        "outcome": columns.outcomes(),
        "state": columns.states,
        "values": columns.values,
        "costs": list(costs),
        "epochs": columns.epoch_counts(),
        "wall_time": columns.attr(keys.WALL_TIME),
        "host": columns.attr(keys.HOST),
        "failure": columns.attr(keys.FAILURE),
        "started": columns.starts,
        "completed": columns.completes,
    }


class RecordsByNumber(Mapping[int, TrialRecord]):
    """A read's records by trial number, each built when first asked for (``TrialColumns.record``)."""

    def __init__(self, columns: TrialColumns):
        self.columns = columns
        self._row = {n: i for i, n in enumerate(columns.numbers)}

    def __getitem__(self, number: int) -> TrialRecord:
        return self.columns.record(self._row[number])

    def __contains__(self, number: object) -> bool:
        return number in self._row

    def __iter__(self) -> Iterator[int]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


@dataclass
class StudyData:
    """One study as loaded at one moment: plain records plus a frame for tables and plots."""

    name: str
    objectives: tuple[Objective, ...]
    spec: dict[str, Any]
    rejected: dict[str, Any] | None
    records: Sequence[TrialRecord]  # a list, or LazyRecords over ``columns``
    version: int = 0  # grows with each change a TrialCache sees
    knobs: list[str] = field(default_factory=list)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)  # unique per load: a key for cached figures
    confirmations: list[dict[str, Any]] = field(default_factory=list)  # `lwnas confirm` runs (tuners.export.confirm)
    parents: dict[int, int] = field(default_factory=dict)  # trial -> the trial it repeats with another seed
    # each record's knobs (knobs_of), by trial number, built when first asked for (``knob_row``)
    knob_rows: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    _knob_cache: dict[str, list[Any]] = field(default_factory=dict, repr=False)  # knob_values' columns
    # the load this one refreshes and the trials that changed since: its table is reused (see ``frame``)
    previous: StudyData | None = field(default=None, repr=False, compare=False)
    changed: set[int] | None = field(default=None, repr=False, compare=False)
    frame_built: str = field(default="", repr=False, compare=False)  # "whole" or "spliced", once built
    # candidates, seed groups and fronts a TrialCache kept across refreshes (None: computed from the records)
    live: LiveView | None = field(default=None, repr=False, compare=False)
    _fronts: dict[tuple[str, ...], list[TrialRecord]] = field(default_factory=dict, repr=False)
    # the distinct kinds of record (kind_of) in the order of their first trial (a TrialCache keeps them)
    kinds: list[tuple[int, tuple[str, ...]]] | None = field(default=None, repr=False, compare=False)
    # a first load's read as columns (``records`` is then ``LazyRecords`` over them): the table, front and seeds
    # are built from the columns, and a record only where a view asks for one
    columns: TrialColumns | None = field(default=None, repr=False, compare=False)
    # ``columns``' rows by shape (``knob_groups``; a TrialCache passes those it grouped for the kinds)
    column_groups: dict[Shape, KnobGroup] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the fullest config gives the order; records with the same knobs add nothing, so look at each kind once
        if self.kinds is not None:
            kinds = self.kinds
        elif self.columns is not None:
            kinds = list(kinds_of(self.columns.numbers, self._column_parts, self._groups()))
        else:
            kinds = list(kinds_of([r.number for r in self.records], knob_parts(self.records)))
        seen: dict[str, None] = {}
        for _, knobs in sorted(kinds, key=lambda kind: kind[0]):  # stable: equal lengths keep trial order
            seen.update(dict.fromkeys(knobs))
        self.knobs = [k for k in seen if k not in self.metrics]

    @cached_property
    def _column_parts(self) -> Parts:
        """``column_parts`` of ``columns``, made once (three lists over every row)."""
        assert self.columns is not None
        return column_parts(self.columns)

    def _groups(self) -> dict[Shape, KnobGroup]:
        """``column_groups``, grouped now if not yet."""
        assert self.columns is not None
        if self.column_groups is None:
            self.column_groups = knob_groups(self._column_parts)
        return self.column_groups

    def knob_row(self, number: int) -> dict[str, Any]:
        """Trial ``number``'s knobs (``knobs_of``), kept once built."""
        row = self.knob_rows.get(number)
        if row is None:
            row = self.knob_rows[number] = knobs_of(self.by_number[number])
        return row

    @property
    def metrics(self) -> list[str]:
        return [o.metric for o in self.objectives]

    @property
    def running(self) -> int:
        states = self.columns.states if self.columns is not None else [r.state for r in self.records]
        return sum(state in ("RUNNING", "WAITING") for state in states)

    @cached_property
    def by_number(self) -> Mapping[int, TrialRecord]:
        if self.columns is not None:
            return RecordsByNumber(self.columns)
        return {r.number: r for r in self.records}

    @cached_property
    def _candidate_rows(self) -> np.ndarray:
        """Positions in ``columns`` of the front candidates (a first load's)."""
        assert self.columns is not None
        return np.flatnonzero(self.columns.candidates())

    @cached_property
    def candidates(self) -> list[TrialRecord]:
        """Trials that may be on a front (complete, feasible, finite values)."""
        if self.live:
            return self.live.candidates
        if self.columns is not None:
            return [self.columns.record(i) for i in self._candidate_rows]
        return front_candidates(self.records)

    @cached_property
    def seed_groups(self) -> list[SeedGroup]:
        """Complete, feasible trials grouped by point (``budget.front_seeds`` repeats with their parent)."""
        return self.live.seed_groups if self.live else groups_of(self.candidates, self.parents)

    @cached_property
    def seeds(self) -> dict[int, int]:
        """Trial -> how many seeds its point was trained with (complete, feasible trials only)."""
        if self.live:
            return self.live.seeds
        if self.columns is not None:  # each candidate's group size, counted over the candidates' parents
            rows = self._candidate_rows
            numbers = np.asarray(self.columns.numbers)[rows]
            parents = np.asarray([self.parents.get(int(n), int(n)) for n in numbers], dtype=np.int64)
            _, group, sizes = np.unique(parents, return_inverse=True, return_counts=True)
            return dict(zip(numbers.tolist(), sizes[group].tolist()))
        return {m.number: g.seeds for g in self.seed_groups for m in g.members}

    @cached_property
    def reference_point(self) -> list[float]:
        return front_reference_point(self.records, self.objectives)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """One row per trial: number, outcome, objectives, costs, knobs, seeds, time, host, failure.

        After a refresh only the changed trials' rows are built and spliced into the previous load's table
        (at 100,000 trials building every row takes seconds); ``frame_built`` says which way it was made.
        """
        if self.columns is not None:
            plans = self.columns.plans()
            all_costs: Sequence[dict[str, Any]] = [p.get(keys.COSTS, {}) for p in plans]
        else:
            all_costs = [r.costs for r in self.records]
        present = set(itertools.chain.from_iterable(all_costs))  # one pass, not one per cost
        costs = [c for c in COST_METRICS if c not in self.metrics and c in present]
        costs += [c for c in LATENCY_DETAILS if c in present]
        with collector_paused():
            # read once: another session building this shared table, or the cache's next load, may set
            # ``previous`` to None at any moment
            previous = self.previous
            spliced = self._spliced(previous, costs) if previous is not None else None
            self.frame_built = "spliced" if spliced is not None else "whole"
            if spliced is not None:
                frame = spliced
            elif self.columns is not None:
                fields = _column_fields(self.columns, all_costs)
                frame = self._table(fields, costs, self._column_parts, groups=self._groups())
            else:
                frame = self._rows(self.records, costs)
            frame["seeds"] = pd.Series([self.seeds.get(n) for n in frame["trial"]], index=frame.index)
        return frame

    def _rows(
        self, records: Sequence[TrialRecord], costs: list[str], text_knobs: frozenset = frozenset()
    ) -> pd.DataFrame:
        """The table's rows of ``records`` (seeds left empty: they depend on every trial); ``text_knobs`` are
        shown as text whatever these records hold (the whole table has them so)."""
        return self._table(_record_fields(records), costs, knob_parts(records), text_knobs)

    def _table(
        self,
        fields: dict[str, list[Any]],
        costs: list[str],
        parts: Parts,
        text_knobs: frozenset = frozenset(),
        groups: dict[Shape, KnobGroup] | None = None,
    ) -> pd.DataFrame:
        """The table from its fields (``_record_fields``, ``_column_fields``) and knob parts (``groups``: them
        grouped, if given).

        Built column by column: a frame from one dict per row spent seconds at 100,000 trials in pandas'
        per-row inference, a list per column takes one pass over the rows each."""
        nan = math.nan
        columns: dict[str, Any] = {name: fields[name] for name in ("trial", "outcome", "state")}
        row_values, row_costs = fields["values"], fields["costs"]
        for i, metric in enumerate(self.metrics):
            values = [v[i] if v is not None else nan for v in row_values]
            if metric in COST_METRICS:
                values = [float(c.get(metric, v)) for c, v in zip(row_costs, values)]
            # the worst value of an infeasible trial is not a measurement
            columns[metric] = pd.Series(values, dtype=float).replace([np.inf, -np.inf], np.nan)
        columns.update({c: [cost.get(c, nan) for cost in row_costs] for c in costs})
        # inferred together, as one frame: pandas infers a frame of text columns differently from each column
        knobs = pd.DataFrame(self._knob_columns(parts, text_knobs, groups), columns=self.knobs, dtype=object)
        columns.update((str(name), column) for name, column in knobs.infer_objects().items())
        columns["seeds"] = [None] * len(fields["trial"])
        columns.update(
            (name, fields[name]) for name in ("epochs", "wall_time", "host", "failure", "started", "completed")
        )
        for name, column in columns.items():  # pandas' own inference, as for a column of a frame built from rows
            if not isinstance(column, pd.Series):
                columns[name] = pd.Series(column, dtype=object if name == "seeds" else None)
        return pd.DataFrame(
            columns,
            columns=[
                "trial",
                "outcome",
                "state",
                *self.metrics,
                *costs,
                *self.knobs,
                "seeds",
                "epochs",
                "wall_time",
                "host",
                "failure",
                "started",
                "completed",
            ],
        )

    def _spliced(self, previous: StudyData, costs: list[str]) -> pd.DataFrame | None:
        """The previous table with the changed trials' rows replaced or added; None where a changed row
        would change a column's type or the columns themselves (then the whole table is built)."""
        old = previous.__dict__.get("frame")  # only a table the page actually built
        self.previous = None  # one step back at most: older loads are freed
        if old is None or self.changed is None:
            return None
        kept = old[~old["trial"].isin(self.changed)]
        text = frozenset(k for k in self.knobs if k in old and pd.api.types.is_string_dtype(old[k].dtype))
        for k in text:
            # A text column stays text in the whole table while every changed trial's cell keeps its type:
            # the column's cell types then only grow (new trials add theirs). A trial whose cell changed type
            # (a WAITING trial, config {}, that got planned) may have been what made the column text; then
            # only an unchanged row showing '—' keeps it so (an empty cell: text; the string '—': the column
            # holds text either way); otherwise build the whole table rather than keep stale text.
            retyped = any(
                type(_cell(previous.knob_row(n).get(k))) is not type(_cell(self.knob_row(n).get(k)))
                for n in self.changed
                if n in previous.by_number
            )
            if retyped and not kept[k].eq("—").any():
                return None
        part = self._rows([self.by_number[n] for n in sorted(self.changed)], costs, text)
        if list(part.columns) != list(old.columns):
            return None
        for column in part.columns:
            if column == "seeds" or part[column].dtype == old[column].dtype:
                continue
            if part[column].isna().all() and (
                old[column].dtype.kind in "fM" or pd.api.types.is_string_dtype(old[column].dtype)
            ):
                part[column] = part[column].astype(old[column].dtype)  # e.g. no end time yet: NaT
            else:
                return None
        return pd.concat([kept, part], ignore_index=True).sort_values("trial", kind="stable", ignore_index=True)

    def knob_values(self, knob: str) -> list[Any]:
        """A knob's value in every trial, one type per column: mixed or missing values become text."""
        if knob not in self._knob_cache:
            if self.columns is not None:
                self._knob_cache.update(self._knob_columns(self._column_parts, groups=self._groups()))
            else:
                self._knob_cache.update(self._knob_columns(knob_parts(self.records)))
        return self._knob_cache[knob]

    def _knob_columns(
        self, parts: Parts, as_text: frozenset = frozenset(), groups: dict[Shape, KnobGroup] | None = None
    ) -> dict[str, list[Any]]:
        """Each knob's cells over the rows of ``parts`` (``knob_parts``) as the table shows them (lists and
        dicts as text; a column of mixed or missing values all text, as are the knobs in ``as_text``).

        Column by column: records of the same shape (``knob_groups``: a study has a few) are transposed at
        once with ``zip``, then each column is checked once, instead of one lookup per cell (3.5 million at
        100,000 trials) or a merged ``knobs_of`` dict per record."""
        columns = {k: np.full(len(parts[0]), None, dtype=object) for k in self.knobs}
        for shape, group in (knob_groups(parts) if groups is None else groups).items():
            at = np.asarray(group.at)
            for knob, knob_cells in group.columns(shape).items():
                if knob in columns:
                    columns[knob][at] = np.fromiter(knob_cells, dtype=object, count=len(at))
        out = {}
        for knob, array in columns.items():
            cells: list[Any] = list(array)
            types = set(map(type, cells))
            if types & {list, tuple, dict}:
                cells = [_cell(v) for v in cells]
                types = set(map(type, cells))
            if knob in as_text or type(None) in types or len(types) > 1:
                cells = ["—" if v is None else str(v) for v in cells]
            out[knob] = cells
        return out

    @cached_property
    def varying_knobs(self) -> list[str]:
        """Knobs whose value differs between trials (the rest are the same in every trial)."""
        return [k for k in self.knobs if len(set(map(str, self.knob_values(k)))) > 1]

    def front(self, metrics: list[str] | None = None) -> list[TrialRecord]:
        """Non-dominated candidates over ``metrics`` (all objectives by default), sorted by the first."""
        return self._front(tuple(metrics or self.metrics))

    def _front(self, metrics: tuple[str, ...]) -> list[TrialRecord]:
        if metrics not in self._fronts:
            idx = [self.metrics.index(m) for m in metrics]

            def compute(records: list[TrialRecord]) -> list[TrialRecord]:
                return nondominated_records(records, self.objectives, idx)

            if self.live:
                front = self.live.memo.front(metrics, self.live.size, compute, lambda: self.candidates)
            elif self.columns is not None:  # on the candidates' value matrix; records for the members only
                rows = self._candidate_rows
                values = self.columns.value_matrix(len(self.objectives))[rows]
                front = [self.columns.record(rows[i]) for i in nondominated_rows(values, self.objectives, idx)]
            else:
                front = compute(self.candidates)
            self._fronts[metrics] = front
        return self._fronts[metrics]

    @cached_property
    def hypervolume_over_trials(self) -> pd.DataFrame:
        """Hypervolume of the trials up to each trial number (``tuners.fronts.objectives``, from this load's
        reference point and candidates)."""
        rows = hypervolume_over_trials(self.records, self.objectives, self.reference_point, self.candidates)
        return pd.DataFrame(rows, columns=["trial", "hypervolume"])


class TrialCache:
    """One study's trials, refreshed incrementally (thread-safe: Streamlit sessions share it)."""

    def __init__(self, url: str, name: str):
        self.url, self.name = url, name
        self._lock = threading.Lock()
        self._storage: Any = None
        self._study_id: int | None = None
        self._store: TrialStore | None = None
        self._records: dict[int, TrialRecord] = {}
        self._data: StudyData | None = None
        self._attrs: dict[str, Any] | None = None  # the study's user attributes at the last load
        self._parents: dict[int, int] = {}  # seed repeats (budget.front_seeds) -> their parent trial
        self._live = LiveSets()  # candidates, seed groups, fronts: updated from the changed trials
        # kind_of each record, and the trials of each kind: a refresh updates the changed trials' only
        self._kind_of: dict[int, tuple] = {}
        self._kind_trials: dict[tuple, set[int]] = {}
        self._pending: TrialColumns | None = None  # a first load's columns, until a refresh needs records

    @property
    def loaded(self) -> bool:
        return self._data is not None

    def load(self) -> StudyData:
        """The study as it is now (a full read the first time, then only what changed)."""
        with self._lock:
            storage = self._storage = self._storage or connect(self.url)
            study_id = storage.get_study_id_from_name(self.name)  # KeyError: no such study
            if study_id != self._study_id:  # first load, or the study was deleted and created again
                self._study_id, self._records, self._data, self._parents = study_id, {}, None, {}
                self._store = TrialStore(storage, study_id)
                self._live = LiveSets()
                self._kind_of, self._kind_trials = {}, {}
                self._pending = None
            assert self._store is not None  # set with the study id above
            # one pause around the read and what is built from it: the read's own pause ending in between
            # let the collector's next pass walk every object the read made (1.4 s at 100,000 trials)
            with collector_paused():
                attrs = storage.get_study_user_attrs(study_id)  # `lwnas confirm` changes these, not the trials
                if self._data is None:
                    read = self._first_load(storage, study_id, attrs)
                else:
                    read = self._refresh(storage, study_id, attrs)
                if read > FREEZE_AFTER:
                    # the records live as long as the dashboard: keep the collector's passes off them (at
                    # 100,000 trials each pass walks millions of objects); reference counting still frees them.
                    # Frozen before the pause ends, so no pass walks them even once
                    gc.freeze()
            assert self._data is not None
            return self._data

    def _first_load(self, storage: Any, study_id: int, attrs: dict[str, Any]) -> int:
        """Every trial, read as columns: the table, front and seeds come from them, and a record is built
        only where a view asks for one. The records and live sets a refresh works on wait for the first
        refresh (``_settle``). Returns how many trials were read."""
        assert self._store is not None
        columns = self._store.columns_since()  # bulk SQL: every trial
        parts = column_parts(columns)
        groups = knob_groups(parts)  # once: the kinds here, the table's knob columns later
        for kind, numbers in kinds_of(columns.numbers, parts, groups).items():
            self._kind_of.update(dict.fromkeys(numbers, kind))
            self._kind_trials.setdefault(kind, set()).update(numbers)
        self._parents = {n: p for n, p in zip(columns.numbers, columns.parents()) if n != p}
        self._pending = columns
        self._attrs = attrs
        self._data = self._study_data(storage, study_id, attrs, set(columns.numbers), None, columns, groups)
        return len(columns)

    def _settle(self) -> None:
        """Take the first load's trials into the records and live sets a refresh updates."""
        columns, self._pending = self._pending, None
        if columns is not None:
            parents = columns.parents()
            reads = [(columns.record(i), parents[i]) for i in range(len(columns))]
            self._records.update((record.number, record) for record, _ in reads)
            self._live.update(reads)
            if self._data is not None and self._data.columns is columns:
                # the fronts the first view computed are over these same candidates: the next ones start from them
                self._live.memo.keep(dict(self._data._fronts))  # a copy in one step: sessions may add fronts

    def _refresh(self, storage: Any, study_id: int, attrs: dict[str, Any]) -> int:
        """The trials new or changed since the last load; returns how many."""
        assert self._store is not None
        trials = self._store.records_since()  # bulk SQL: the new and changed trials
        if not trials and attrs == self._attrs:
            return 0
        self._settle()
        for record, parent in trials:
            self._records[record.number] = record
            self._count_kind(record)
            if parent != record.number:
                self._parents[record.number] = parent
        live = self._live.update([(read.record, read.parent) for read in trials])
        self._attrs = attrs
        self._data = self._study_data(storage, study_id, attrs, {read.record.number for read in trials}, live)
        return len(trials)

    def _count_kind(self, record: TrialRecord) -> None:
        old = self._kind_of.get(record.number)
        if old is not None:
            self._kind_trials[old].discard(record.number)
            if not self._kind_trials[old]:
                del self._kind_trials[old]
        kind = self._kind_of[record.number] = kind_of(record, knobs_of(record))
        self._kind_trials.setdefault(kind, set()).add(record.number)

    def _study_data(
        self,
        storage: Any,
        study_id: int,
        attrs: dict[str, Any],
        changed: set[int],
        live: LiveView | None,
        columns: TrialColumns | None = None,
        groups: dict[Shape, KnobGroup] | None = None,
    ) -> StudyData:
        objectives = objectives_of(storage, self.name, attrs, storage.get_study_directions(study_id))
        version = (self._data.version + 1) if self._data else 0
        previous = self._data
        if previous is not None and "frame" not in previous.__dict__ and previous.changed is not None:
            # the page never built that load's table: splice into the one before it, with both loads' changes
            older, changed = previous.previous, previous.changed | changed
            previous.previous = None  # no chain of old loads kept alive
            previous = older
        return StudyData(
            self.name,
            objectives,
            attrs.get(keys.STUDY_SPEC) or {},
            attrs.get(keys.STUDY_REJECTED),
            LazyRecords(columns) if columns is not None else [self._records[n] for n in sorted(self._records)],
            version,
            confirmations=list(attrs.get(keys.STUDY_CONFIRMATIONS, [])),
            parents=dict(self._parents),
            previous=previous,
            changed=changed,
            live=live,
            kinds=sorted(self._kind_trials, key=lambda kind: min(self._kind_trials[kind])),
            columns=columns,
            column_groups=groups,
        )


def export_records(url: str, name: str, numbers: list[int]) -> tuple[optuna.Study, list[TrialRecord]]:
    """The study and fresh records of trials ``numbers`` (read now, as ``lwnas export`` would)."""
    storage = connect(url)
    ot_study = optuna.load_study(study_name=name, storage=storage)
    store = TrialStore.of(storage, name)
    return ot_study, [store.record(n) for n in numbers]
