"""A read of a study's trials as columns: one list per field, in trial-number order, records built when asked for.

``tuners.store.sql_reads.read_columns`` fills one from a handful of queries (``TrialStore.columns_since``). A
first view of a large study needs the fields column by column (the dashboard's table, its front, the seeds of
each point) and few whole records (the front's members): building a ``TrialRecord`` for each of 100,000 trials
before the table was a second of the first view. ``record(i)`` builds the record of row ``i`` with
``record.record_from``, exactly what ``TrialStore.records_since`` returns for it, and keeps it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from tuners.store.keys import (
    CONFIG,
    COSTS,
    FAILURE,
    HOST,
    OUTCOME,
    PLAN,
    SEED,
    SEED_OF,
    TASK,
    TASK_OPTIONS,
    TRAINING,
    WALL_TIME,
    epochs_of,
)
from tuners.store.outcomes import Outcome, outcome_of_state
from tuners.store.record import TrialRecord, record_from


class TrialColumns:
    """Trials as parallel lists (row ``i`` of each is one trial), the parts ``record_from`` builds a record of."""

    def __init__(
        self,
        trial_ids: list[int],
        numbers: list[int],
        states: list[str],
        values: list[list[float] | None],
        params: list[dict[str, Any]],
        attrs: list[dict[str, Any]],
        constraints: list[dict[str, float]],
        starts: list[Any],
        completes: list[Any],
        epochs: Sequence[Sequence[dict[str, Any]] | None],
    ):
        self.trial_ids, self.numbers, self.states, self.values = trial_ids, numbers, states, values
        self.params, self.attrs, self.constraints = params, attrs, constraints
        self.starts, self.completes, self.epochs = starts, completes, epochs
        self._records: list[TrialRecord | None] = [None] * len(numbers)
        self._lock = threading.Lock()  # dashboard sessions are threads; a record is built once
        self._plans: list[dict[str, Any]] | None = None  # plans() and outcomes(), made once
        self._outcomes: list[str] | None = None

    def __len__(self) -> int:
        return len(self.numbers)

    def take(self, rows: Sequence[int]) -> TrialColumns:
        """The columns of ``rows`` only (records already built are kept)."""
        pick = lambda column: [column[i] for i in rows]  # noqa: E731
        out = TrialColumns(
            *(
                pick(c)
                for c in (
                    self.trial_ids,
                    self.numbers,
                    self.states,
                    self.values,
                    self.params,
                    self.attrs,
                    self.constraints,
                    self.starts,
                    self.completes,
                    self.epochs,
                )
            )
        )
        out._records = pick(self._records)
        return out

    # ---- whole records, when asked for ---------------------------------------------------------------------
    def record(self, i: int) -> TrialRecord:
        """Row ``i``'s record (built the first time, then kept)."""
        record = self._records[i]
        if record is None:
            with self._lock:
                record = self._records[i]
                if record is None:
                    record = self._records[i] = record_from(
                        self.numbers[i],
                        self.states[i],
                        self.values[i],
                        self.params[i],
                        self.attrs[i],
                        self.constraints[i],
                        self.starts[i],
                        self.completes[i],
                        epochs=self.epochs[i],
                    )
        return record

    def records(self) -> list[TrialRecord]:
        """Every row's record."""
        return [self.record(i) for i in range(len(self))]

    # ---- fields, column by column ----------------------------------------------------------------------------
    def parents(self) -> list[int]:
        """The trial each row repeats with another seed (itself if none), as ``record.parent_of_attrs``."""
        return [int(a[SEED_OF]) if SEED_OF in a else n for a, n in zip(self.attrs, self.numbers)]

    def outcomes(self) -> list[str]:
        """Each row's outcome as ``record_from`` reads it; made once (the table and the candidates read them)."""
        if self._outcomes is None:
            self._outcomes = [
                a[OUTCOME] if OUTCOME in a else outcome_of_state(s) for a, s in zip(self.attrs, self.states)
            ]
        return self._outcomes

    def plans(self) -> list[dict[str, Any]]:
        """Each row's planned record (``record_from``: one attribute now, each field alone before it); made once
        (the table's costs and knobs both read them)."""
        if self._plans is None:
            self._plans = [a.get(PLAN) or a for a in self.attrs]
        return self._plans

    def attr(self, key: str) -> list[Any]:
        """Each row's attribute ``key`` (None where it has none): ``WALL_TIME``, ``HOST``, ``FAILURE``."""
        assert key in (WALL_TIME, HOST, FAILURE)
        return [a.get(key) for a in self.attrs]

    def epoch_counts(self) -> list[int]:
        """How many epochs each row trained (``len(record.epochs)``, read without decoding them)."""
        return [len(e) if e is not None else len(epochs_of(a)) for e, a in zip(self.epochs, self.attrs)]

    def value_matrix(self, objectives: int) -> np.ndarray:
        """``(rows, objectives)`` objective values, NaN in rows without (or with another number of) values."""
        out = np.full((len(self), objectives), math.nan)
        rows = [i for i, v in enumerate(self.values) if v is not None and len(v) == objectives]
        if rows:
            out[rows] = np.array([self.values[i] for i in rows], dtype=float)
        return out

    def candidates(self) -> np.ndarray:
        """Rows that may be on a front, as ``objectives.front_candidates`` picks them: complete, feasible,
        finite values."""
        complete, finite = Outcome.COMPLETE.value, math.isfinite
        return np.fromiter(
            (
                s == "COMPLETE"
                and o == complete
                and all(x <= 0 for x in c.values())
                and v is not None
                and all(map(finite, v))
                for s, o, v, c in zip(self.states, self.outcomes(), self.values, self.constraints)
            ),
            dtype=bool,
            count=len(self),
        )


class LazyRecords(Sequence[TrialRecord]):
    """The records of a ``TrialColumns`` as a sequence: each built when first read (``TrialColumns.record``)."""

    def __init__(self, columns: TrialColumns):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    @overload
    def __getitem__(self, index: int) -> TrialRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[TrialRecord]: ...

    def __getitem__(self, index: int | slice) -> TrialRecord | list[TrialRecord]:
        if isinstance(index, slice):
            return [self.columns.record(i) for i in range(len(self))[index]]
        return self.columns.record(range(len(self))[index])

    def __iter__(self) -> Iterator[TrialRecord]:
        return iter(self.columns.records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, LazyRecords)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, like the list it stands for

    def __repr__(self) -> str:
        return f"LazyRecords({len(self)} trials)"


def columns_of_records(reads: Sequence[Any]) -> TrialColumns:
    """Columns of records already built (``ReadTrial``s read through Optuna's own methods): each row's
    attributes are what ``record_from`` would read back into the same record, and the records are kept."""
    records = [read.record for read in reads]
    attrs = []
    for read, r in zip(reads, records):
        row: dict[str, Any] = {
            PLAN: {
                CONFIG: r.config,
                TRAINING: r.training,
                TASK: r.task,
                TASK_OPTIONS: r.task_options,
                SEED: r.seed,
                COSTS: r.costs,
            },
            OUTCOME: r.outcome,
        }
        row.update({k: v for k, v in ((WALL_TIME, r.wall_time), (HOST, r.host), (FAILURE, r.failure)) if v is not None})
        if read.parent != r.number:
            row[SEED_OF] = read.parent
        attrs.append(row)
    columns = TrialColumns(
        trial_ids=[r.number for r in records],  # Optuna's own path: numbers stand in for ids
        numbers=[r.number for r in records],
        states=[r.state for r in records],
        values=[r.values for r in records],
        params=[r.params for r in records],
        attrs=attrs,
        constraints=[r.constraints for r in records],
        starts=[r.datetime_start for r in records],
        completes=[r.datetime_complete for r in records],
        epochs=[r.epochs for r in records],
    )
    columns._records = list(records)
    return columns
