"""The studies of a storage at a glance (``lwnas status`` without a name): each one's trials by outcome and
its objectives, read in one grouped query (no trial is loaded), so a storage of large studies lists at once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import optuna
from sqlalchemy import text

from searchspace.study import Objective
from tuners.fronts.objectives import decoded_objectives
from tuners.store import keys
from tuners.store.outcomes import Outcome, outcome_of_state
from tuners.store.record import record_of
from tuners.store.tables import bulk_engine

# Optuna's state where a trial has no `outcome` attribute yet, as ``record_of`` reads it
# the order outcomes are shown in (any other comes after, by name)
ORDER = (*(o.value for o in Outcome), "running", "waiting")
COUNTS = text(
    "SELECT t.study_id, CAST(t.state AS TEXT), a.value_json, COUNT(*) FROM trials t "
    "LEFT JOIN trial_user_attributes a ON a.trial_id = t.trial_id AND a.key = :key "
    "GROUP BY t.study_id, CAST(t.state AS TEXT), a.value_json"
)


@dataclass(frozen=True)
class StudyLine:
    """One study of a storage: its name, trials by outcome and objectives."""

    name: str
    outcomes: dict[str, int]
    objectives: tuple[Objective, ...]

    @property
    def trials(self) -> int:
        return sum(self.outcomes.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "study": self.name,
            "trials": self.trials,
            "outcomes": self.outcomes,
            "objectives": [o.metric for o in self.objectives],
            "directions": [o.direction for o in self.objectives],
        }


def list_studies(storage: Any) -> list[StudyLine]:
    """Every study in ``storage`` (an Optuna storage, opened read-only by the caller), by name."""
    studies = sorted(storage.get_all_studies(), key=lambda s: s.study_name)
    ids = {s.study_name: storage.get_study_id_from_name(s.study_name) for s in studies}
    counts = _counts(storage, list(ids.values()))
    lines = []
    for s in studies:
        name = s.study_name
        objectives = decoded_objectives(
            s.user_attrs,
            s.directions,
            # a study lwnas did not make has no lwnas:objectives: Optuna's metric names, read only then (the
            # lambda is called inside this iteration, so it sees this study's name)
            lambda: optuna.load_study(study_name=name, storage=storage).metric_names,  # noqa: B023
        )
        lines.append(StudyLine(name, _ordered(counts.get(ids[name], {})), objectives))
    return lines


def _counts(storage: Any, study_ids: list[int]) -> dict[int, dict[str, int]]:
    """Trials by outcome of every study: grouped in SQL where the tables are Optuna's, else trial by trial."""
    engine = bulk_engine(storage)
    found: dict[int, dict[str, int]] = {}
    if engine is None:
        for sid in study_ids:
            for trial in storage.get_all_trials(sid, deepcopy=False):
                outcome = record_of(trial).outcome
                found.setdefault(sid, {})[outcome] = found.setdefault(sid, {}).get(outcome, 0) + 1
        return found
    with engine.connect() as conn:
        rows = conn.execute(COUNTS, {"key": keys.OUTCOME}).all()
    for sid, state, stored, n in rows:
        outcome = _outcome(state, stored)
        found.setdefault(sid, {})[outcome] = found.setdefault(sid, {}).get(outcome, 0) + n
    return found


def _outcome(state: str, stored: str | None) -> str:
    """A trial's outcome as ``record_of`` gives it: its ``outcome`` attribute, else one from Optuna's state."""
    if stored is not None:
        try:
            return str(json.loads(stored))
        except ValueError:
            pass
    return outcome_of_state(state)


def _ordered(outcomes: dict[str, int]) -> dict[str, int]:
    rank = {name: i for i, name in enumerate(ORDER)}
    return dict(sorted(outcomes.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))
