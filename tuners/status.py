"""The state of a sweep as plain data: trials by outcome, front, hypervolume, time per trial."""

from __future__ import annotations

from typing import Any

import optuna

from . import storage as keys
from .objectives import direction_names
from .pareto import hypervolume, pareto_front, reference_point
from .storage import record_of


def study_status(ot_study: optuna.Study) -> dict[str, Any]:
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
            "front": [{"trial": r.number, "values": r.values, "params": r.params,
                       **({"latency_device": r.costs["latency_device"]} if "latency_device" in r.costs else {})}
                      for r in front],
            "latency_devices": latency_devices(records),
            "seconds_per_trial": sum(timed) / len(timed) if timed else None, "timed_trials": len(timed),
            "rejected": ot_study.user_attrs.get(keys.STUDY_REJECTED)}


def latency_devices(records: list) -> dict[str, list[int]]:
    """Which device and machine measured the latencies of which trials (more than one: not comparable)."""
    out: dict[str, list[int]] = {}
    for r in records:
        if "latency_device" in r.costs:
            out.setdefault(str(r.costs["latency_device"]), []).append(r.number)
    return out
