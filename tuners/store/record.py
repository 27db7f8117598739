"""The trial record: what the driver decided for one trial, and what storage says about it since.

The driver resolves and costs a point once (``tuners/driver/searcher.py``) and the record it builds is the
only thing that crosses to the worker: the exact configuration (already adapted to the task), the
complete training settings (seed and threads included), the task and its options, and the static
costs. The worker (``tuners/driver/trainable.py``) trains exactly that; ``lwnas status``, ``lwnas export``
and the dashboard read the same type back from storage (``tuners.store.trial_store.TrialStore``).

Plain data only: this module imports neither torch nor Ray, so the dashboard and the CLI read it cheaply.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from tuners.store.keys import (
    CONFIG,
    COSTS,
    DEVICE,
    FAILURE,
    HOST,
    NODE,
    OUTCOME,
    PLAN,
    SEED,
    SEED_CONFIG,
    SEED_OF,
    TASK,
    TASK_OPTIONS,
    TRAINING,
    WALL_TIME,
    epochs_of,
    plain,
)
from tuners.store.outcomes import outcome_of_state


class StoredEpochs(Sequence):
    """A trial's per-epoch records as storage holds them, read and decoded the first time one is needed.

    ``tuners.store.sql_reads.read_records`` puts one in ``TrialRecord.epochs``: the dashboard's table of 100,000
    trials needs only how many epochs each trained (``len`` reads nothing), and epoch records are most of a
    study's bytes. ``text`` is the ``"epoch:NNNN": {...}`` members of the trial's attributes, comma-joined, or
    None while still in storage (``later.text_of(trial_id)`` reads it). It equals the list ``keys.epochs_of``
    gives (and compares equal to it).
    """

    __slots__ = ("_count", "_text", "_later", "_trial_id", "_items")

    def __init__(self, count: int, text: str | None, later: Any = None, trial_id: int = -1):
        self._count, self._text, self._later, self._trial_id = count, text, later, trial_id
        self._items: list[dict[str, Any]] | None = None

    def _decoded(self) -> list[dict[str, Any]]:
        if self._items is None:
            import orjson

            if self._text is None:
                self._text = self._later.text_of(self._trial_id)
                self._later = None
            text = "{" + self._text + "}"
            try:
                attrs = orjson.loads(text)
            except orjson.JSONDecodeError:  # NaN or Infinity, as Python's json.dumps stores them
                attrs = json.loads(text)
            self._items = epochs_of(attrs)
        return self._items

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        return self._decoded()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, StoredEpochs)):
            return self._decoded() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, like the list it stands for

    def __repr__(self) -> str:
        return repr(self._decoded())

    def __reduce__(self) -> tuple[type[list], tuple[list[dict[str, Any]]]]:
        return list, (self._decoded(),)  # a copy elsewhere (another process) holds the records themselves


# the fields the driver decides; exactly these travel to the worker
PLANNED = ("number", "config", "training", "task", "task_options", "seed", "costs")


@dataclass(frozen=True)
class TrialRecord:
    """One trial: the point the driver planned (first block) and its outcome as storage holds it.

    A study written by an earlier lwnas kept its training settings and task in the
    study only: there ``task`` and ``seed`` are None and ``training`` holds the sampled settings alone
    (``tuners.export.configs.trial_settings`` completes them from the study).
    """

    number: int
    config: dict[str, Any]  # the ArchConfig as a dict, adapted to the task: what the worker builds
    training: dict[str, Any]  # every training setting the trial runs with (TrainSettings.to_dict())
    task: str | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    # {"params": ..., "madds": ..., "memory": ...}, latency figures and the name of the device that timed them
    costs: dict[str, float | str] = field(default_factory=dict)
    # what storage adds while the trial runs and when it ends
    state: str = "RUNNING"  # Optuna's: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    outcome: str = "running"
    values: list[float] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    constraints: dict[str, float] = field(default_factory=dict)
    epochs: Sequence[dict[str, Any]] = field(default_factory=list)  # a list, or StoredEpochs read undecoded
    wall_time: float | None = None
    host: str | None = None
    node: str | None = None
    device: str | None = None  # the torch device it trained on (the plan's training.device says what was asked)
    failure: str | None = None
    seed_config: str | None = None
    datetime_start: Any = None
    datetime_complete: Any = None

    __hash__ = None  # type: ignore[assignment]  # dict fields: records compare by value but are not hashable

    @property
    def feasible(self) -> bool:
        return all(v <= 0 for v in self.constraints.values())

    @property
    def scores(self) -> list[float]:
        """The objective values of a trial that reported them: every candidate and every front member."""
        if self.values is None:
            raise ValueError(f"trial {self.number} reported no objective values (outcome: {self.outcome})")
        return self.values

    @property
    def planned(self) -> bool:
        """Whether the driver recorded the whole plan (studies from earlier versions did not)."""
        return self.task is not None and self.seed is not None

    def for_worker(self) -> dict[str, Any]:
        """The planned fields as plain data: what the Ray trial's config carries to the worker."""
        return {name: getattr(self, name) for name in PLANNED}

    @classmethod
    def from_worker(cls, data: dict[str, Any]) -> TrialRecord:
        """The record a worker received (``for_worker``'s output)."""
        missing = [name for name in PLANNED if name not in data]
        if missing:
            raise ValueError(f"a trial record needs {', '.join(missing)}; got keys {sorted(data)}")
        return cls(**{name: data[name] for name in PLANNED})


def trial_seed(study_seed: int, number: int) -> int:
    """The training seed of trial ``number``: distinct per trial, reproducible from the study."""
    return study_seed + number


def trial_training(study: Any, point_training: dict[str, Any], seed: int, cpus: float) -> dict[str, Any]:
    """The training settings of a trial before defaults: threads, the study's, the point's, epochs and seed.

    Threads default to the trial's Ray CPU reservation: on CPU the thread count can change the order of
    floating-point sums, and with it the last digits of the result.
    """
    return {
        "threads": max(1, int(cpus)),
        **study.training,
        **point_training,
        "epochs": study.budget.epochs,
        "seed": seed,
    }


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
    """A TrialRecord from a trial's parts: ``record_of``'s work, shared with ``tuners.store.sql_reads``, which
    builds records straight from storage rows without a FrozenTrial in between (and passes ``epochs``
    still undecoded, a ``record.StoredEpochs``, instead of the ``epoch:`` keys in ``attrs``)."""
    plan = attrs.get(PLAN) or attrs  # one attribute now; studies from before it hold each field alone
    # Every field set at once: the frozen dataclass's __init__ sets its 20 fields one ``object.__setattr__``
    # call each (4.8 us a record, half a second of a 100,000-trial read); the same fields, the same record
    record = _new(TrialRecord)
    _set(
        record,
        "__dict__",
        {
            "number": number,
            "config": plan.get(CONFIG, {}),
            "training": plan.get(TRAINING, {}),
            "task": plan.get(TASK),
            "task_options": plan.get(TASK_OPTIONS, {}),
            "seed": plan.get(SEED),
            "costs": plan.get(COSTS, {}),
            "state": state,
            "outcome": attrs[OUTCOME] if OUTCOME in attrs else outcome_of_state(state),
            "values": list(values) if values is not None else None,
            "params": dict(params),
            "constraints": dict(constraints),
            "epochs": epochs_of(attrs) if epochs is None else epochs,
            "wall_time": attrs.get(WALL_TIME),
            "host": attrs.get(HOST),
            "node": attrs.get(NODE),
            "device": attrs.get(DEVICE),
            "failure": attrs.get(FAILURE),
            "seed_config": attrs.get(SEED_CONFIG),
            "datetime_start": datetime_start,
            "datetime_complete": datetime_complete,
        },
    )
    return record


_new, _set = object.__new__, object.__setattr__
RECORD_FIELDS = tuple(f.name for f in fields(TrialRecord))  # what ``record_from`` sets (a test holds them equal)


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


class ReadTrial(NamedTuple):
    """One trial as the store reads it: its record and its parent (the trial it repeats with another seed, else
    itself)."""

    record: TrialRecord
    parent: int


def parent_of_attrs(user_attrs: dict[str, Any], number: int) -> int:
    """The trial whose point trial ``number`` repeats with another seed (itself if none); as
    ``tuners.fronts.seeds.parent_of``."""
    return int(user_attrs.get(SEED_OF, number))


def constraints_of(system_attrs: dict[str, Any]) -> dict[str, float]:
    """Constraint values as ``FrozenTrial.constraints`` reads them from system attributes: Optuna's old
    list under ``constraints`` (named "0", "1", ...), then one ``constraints:NAME`` key per constraint."""
    listed = system_attrs.get("constraints")
    out = {str(i): c for i, c in enumerate(listed)} if listed else {}
    for key, value in system_attrs.items():  # a loop, not two comprehensions: called once per trial of a read
        if key.startswith("constraints:"):
            out[key[len("constraints:") :]] = value
    return out
