"""The trial store: one study's trials in an Optuna storage, behind one interface.

Every part of lwnas that reads or writes trials goes through ``TrialStore``: the sweep's driver plans a trial,
appends its epochs and sets its outcome (``tuners/driver/searcher.py``); ``lwnas status`` and ``lwnas export``
read records; the dashboard reads every trial once and then only what changed, and its first view of a large
study reads its columns in bulk; synthetic studies are written in bulk (``insert``).

A study stays a normal Optuna study (``optuna.load_study`` and optuna-dashboard open it): writes go through
Optuna's storage methods, one small attribute per call. Reads of an SQL storage whose table layout lwnas knows
(``tables.KNOWN_SCHEMAS``) take the fast paths of ``sql_reads.py``, a handful of queries each; any other
storage or schema (journal, in-memory, a newer Optuna) goes through Optuna's own methods with the same results.
The key names live in ``keys.py``, URL and password handling in ``urls.py``, opening a storage in
``connection.py``: none of them is part of this interface.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import func, insert, select

from tuners.store import keys
from tuners.store import tables as t
from tuners.store.columns import TrialColumns, columns_of_records
from tuners.store.outcomes import Outcome
from tuners.store.record import ReadTrial, TrialRecord, parent_of_attrs, planned_attrs, record_of
from tuners.store.sql_reads import (
    OPEN,
    ReadSince,
    collector_paused,
    read_columns,
    read_frozen,
    read_records,
    record_dialect,
)

INSERT_BATCH = 2000  # trials per transaction of ``insert``

__all__ = ["ReadTrial", "TrialStore", "collector_paused"]


class TrialStore:
    """The trials of study ``study_id`` in ``storage`` (an Optuna storage, as ``connection.open_storage`` opens it).

    Reads "since" continue from where the previous read of the same kind stopped: the first returns every
    trial, later ones the trials that are new or were open (running, waiting) and changed.
    """

    def __init__(self, storage: Any, study_id: int):
        self.storage, self.study_id = storage, study_id
        self.engine = t.bulk_engine(storage)  # None: Optuna's own methods
        self.sql = record_dialect(self.engine) if self.engine is not None else None
        self._ids: dict[int, int] = {}  # trial number -> the storage's trial id (it never changes)
        self._frozen_read: ReadSince[FrozenTrial] = ReadSince(lambda trial: trial.state.name in OPEN)
        self._record_read: ReadSince[ReadTrial] = ReadSince(lambda read: read.record.state in OPEN)

    @classmethod
    def of(cls, storage: Any, study_name: str) -> TrialStore:
        """The store of the study named ``study_name`` (KeyError: no such study)."""
        return cls(storage, storage.get_study_id_from_name(study_name))

    @property
    def bulk(self) -> bool:
        """Whether trials are read in bulk SQL (False: through Optuna's ``get_all_trials``)."""
        return self.engine is not None

    @property
    def bulk_records(self) -> bool:
        """Whether records (and columns) are read aggregated in SQL (False: from FrozenTrials, via ``record_of``)."""
        return self.sql is not None

    # ---- the driver's writes, by trial number ----------------------------------------------------------------
    def trial_id(self, number: int) -> int:
        """The storage's id of trial ``number`` (looked up once)."""
        if number not in self._ids:
            self._ids[number] = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, number)
        return self._ids[number]

    def forget(self, number: int) -> None:
        """Drop what the store keeps about trial ``number`` (a finished trial: the driver's memory stays flat)."""
        self._ids.pop(number, None)

    def set_attr(self, number: int, key: str, value: Any) -> None:
        """Set user attribute ``key`` of trial ``number`` (JSON-safe copy: ``keys.plain``)."""
        self.storage.set_trial_user_attr(self.trial_id(number), key, keys.plain(value))

    def plan(self, trial: optuna.trial.BaseTrial, record: TrialRecord) -> None:
        """Store the planned record of ``trial`` (just asked: ``record.planned_attrs``, one attribute, one write)."""
        for key, value in planned_attrs(record).items():
            trial.set_user_attr(key, value)

    def append_epoch(self, number: int, epoch: dict[str, Any]) -> None:
        """Record one epoch's metrics of trial ``number`` under a key of its own: one small write, never a rewrite."""
        self.set_attr(number, keys.epoch_key(epoch["epoch"]), epoch)

    def interrupt(self, number: int, failure: str) -> None:
        """Mark trial ``number`` interrupted (FAIL) because its driver stopped while it ran."""
        self.set_attr(number, keys.OUTCOME, Outcome.INTERRUPTED.value)
        self.set_attr(number, keys.FAILURE, failure)
        self.storage.set_trial_state_values(self.trial_id(number), TrialState.FAIL)

    # ---- reads -----------------------------------------------------------------------------------------------
    def trial(self, number: int) -> FrozenTrial:
        """Trial ``number`` as Optuna's FrozenTrial, read now."""
        return self.storage.get_trial(self.trial_id(number))

    def record(self, number: int) -> TrialRecord:
        """Trial ``number``'s record, read now."""
        return record_of(self.trial(number))

    def frozen_since(self) -> list[FrozenTrial]:
        """FrozenTrials new or changed since the last call (every trial at the first), in trial-id order."""
        if self.engine is not None:
            return self._frozen_read.changed(read_frozen(self.engine, self.study_id, self._frozen_read))
        # Optuna's own path: trial numbers stand in for ids (both grow with each new trial)
        since = self._frozen_read
        everything = self.storage.get_all_trials(self.study_id, deepcopy=False)
        # copies: an in-memory storage changes its own objects, and the read point keeps them to compare
        return since.changed(
            [
                (trial.number, copy.deepcopy(trial))
                for trial in everything
                if trial.number > since.max_trial_id or trial.number in since.open
            ]
        )

    def records_since(self) -> list[ReadTrial]:
        """Records (with their seed parents) new or changed since the last call (every trial at the first), in
        trial-number order."""
        if self.engine is None or self.sql is None:
            return [ReadTrial(record_of(tr), parent_of_attrs(tr.user_attrs, tr.number)) for tr in self.frozen_since()]
        with collector_paused():  # remembering 100,000 records is as many objects for the collector to walk
            return self._record_read.changed(read_records(self.engine, self.sql, self.study_id, self._record_read))

    def columns_since(self) -> TrialColumns:
        """``records_since`` as columns (``columns.TrialColumns``): the same trials from the same point, each
        record built only when asked for. ``parents()`` gives what ``ReadTrial.parent`` holds."""
        if self.engine is None or self.sql is None:
            return columns_of_records(self.records_since())
        since = self._record_read
        with collector_paused():
            columns = read_columns(self.engine, self.sql, self.study_id, since)
            parents = columns.parents()
            keep = since.changed_rows(
                columns.trial_ids,
                [state in OPEN for state in columns.states],
                lambda i: ReadTrial(columns.record(i), parents[i]),
            )
            return columns if len(keep) == len(columns) else columns.take(keep)

    def records(self) -> list[TrialRecord]:
        """Every trial's record, read now (in trial-number order; the ``since`` reads keep their points)."""
        if self.engine is None or self.sql is None:
            return [record_of(tr) for tr in self.storage.get_all_trials(self.study_id, deepcopy=False)]
        fresh: ReadSince[ReadTrial] = ReadSince(lambda read: read.record.state in OPEN)
        return [read.record for _, read in read_records(self.engine, self.sql, self.study_id, fresh)]

    # ---- bulk insert: synthetic studies only -----------------------------------------------------------------
    def insert(self, frozen: Sequence[FrozenTrial]) -> None:
        """Append finished trials (``optuna.trial.create_trial``) in batched INSERTs: for synthetic studies
        (``dashboards.sample``, benches) only.

        Optuna's ``Study.add_trials`` writes each trial in a transaction of its own (about 19 ms a trial on SQLite
        here: 100,000 trials would take half an hour); this writes the same rows, ``INSERT_BATCH`` trials per
        transaction. It numbers trials from the count at its start, so nothing else may add trials to the study
        while it runs: a live sweep never writes through here.
        """
        if self.engine is None:
            for trial in frozen:
                self.storage.create_new_trial(self.study_id, template_trial=trial)
            return
        for start in range(0, len(frozen), INSERT_BATCH):
            with self.engine.begin() as conn:
                _insert_batch(conn, self.study_id, frozen[start : start + INSERT_BATCH])


def _insert_batch(conn: Any, study_id: int, batch: Sequence[FrozenTrial]) -> None:
    count = conn.execute(select(func.count()).select_from(t.trials).where(t.trials.c.study_id == study_id)).scalar()
    conn.execute(
        insert(t.trials),
        [
            {
                "number": count + i,
                "study_id": study_id,
                "state": tr.state.name,
                "datetime_start": t.to_utc(tr.datetime_start),
                "datetime_complete": t.to_utc(tr.datetime_complete),
            }
            for i, tr in enumerate(batch)
        ],
    )
    ids = dict(
        conn.execute(
            select(t.trials.c.number, t.trials.c.trial_id).where(
                t.trials.c.study_id == study_id, t.trials.c.number >= count
            )
        ).all()
    )
    tables = (t.trial_values, t.trial_params, t.trial_user_attributes, t.trial_system_attributes)
    rows: dict[Any, list[dict[str, Any]]] = {table: [] for table in (*tables, t.trial_intermediate_values)}
    for i, tr in enumerate(batch):
        trial_id = ids[count + i]
        for objective, value in enumerate(tr.values or ()):
            stored, kind = t.stored_value(value)
            rows[t.trial_values].append(
                {"trial_id": trial_id, "objective": objective, "value": stored, "value_type": kind}
            )
        for name, value in tr.params.items():
            dist = tr.distributions[name]
            rows[t.trial_params].append(
                {
                    "trial_id": trial_id,
                    "param_name": name,
                    "param_value": dist.to_internal_repr(value),
                    "distribution_json": distribution_to_json(dist),
                }
            )
        for table, attrs in ((t.trial_user_attributes, tr.user_attrs), (t.trial_system_attributes, tr.system_attrs)):
            rows[table] += [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in attrs.items()]
        for step, value in tr.intermediate_values.items():
            stored, kind = t.stored_value(value)
            rows[t.trial_intermediate_values].append(
                {"trial_id": trial_id, "step": step, "intermediate_value": stored, "intermediate_value_type": kind}
            )
    for table, values in rows.items():
        if values:
            conn.execute(insert(table), values)


def store_of(ot_study: optuna.Study, storage: Any) -> TrialStore:
    """The store of ``ot_study`` in ``storage`` (the Optuna storage lwnas opened it from)."""
    return TrialStore.of(storage, ot_study.study_name)
