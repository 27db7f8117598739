"""The state of a sweep as plain data: trials by outcome, front, hypervolume, time per trial."""

from __future__ import annotations

from typing import Any

import optuna

from . import storage as keys
from .objectives import direction_names
from .pareto import hypervolume, pareto_front, reference_point
from .bulk_read import TrialReader
from .storage import TrialRecord, record_of


def read_records(ot_study: optuna.Study, storage: Any) -> list[TrialRecord]:
    """Every trial of ``ot_study`` in ``storage`` (the Optuna storage it was loaded from), read in bulk."""
    return [record_of(t) for t in TrialReader(storage, storage.get_study_id_from_name(ot_study.study_name)).read()]


def study_status(ot_study: optuna.Study, records: list[TrialRecord] | None = None) -> dict[str, Any]:
    """``lwnas status``'s figures, from ``records`` (``read_records``) or else Optuna's view of the study."""
    if records is None:
        records = [record_of(t) for t in ot_study.get_trials(deepcopy=False)]
    names = ot_study.metric_names or [f"objective_{i}" for i in range(len(ot_study.directions))]
    directions = direction_names(ot_study.directions)
    objectives = list(zip(names, directions))
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    ref = reference_point(records, objectives)
    timed = [r.wall_time for r in records if r.wall_time is not None]
    front = pareto_front(records, directions)
    return {"study": ot_study.study_name, "trials": len(records), "outcomes": outcomes, "objectives": names,
            "directions": directions, "reference_point": ref, "hypervolume": hypervolume(records, objectives, ref),
            "front": [{"trial": r.number, "values": r.values, "params": r.params} for r in front],
            "seconds_per_trial": sum(timed) / len(timed) if timed else None, "timed_trials": len(timed),
            "rejected": ot_study.user_attrs.get(keys.STUDY_REJECTED)}
