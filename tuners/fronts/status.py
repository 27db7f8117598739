"""The state of a sweep as plain data: trials by outcome, front, hypervolume, time per trial."""

from __future__ import annotations

from typing import Any

import optuna

from searchspace.study import Budget
from tuners.fronts.objectives import front_hypervolume, front_reference_point, study_objectives
from tuners.fronts.seeds import front_entry, groups_of, parent_of, pareto_front_groups
from tuners.store import keys
from tuners.store.budget import ended
from tuners.store.record import record_of
from tuners.store.trial_store import ReadTrial, TrialStore, collector_paused


def read_trials(ot_study: optuna.Study, storage: Any) -> list[ReadTrial]:
    """Every trial of ``ot_study`` in ``storage`` (the Optuna storage it was loaded from) as (record, parent),
    read in bulk: no FrozenTrial is built."""
    return TrialStore.of(storage, ot_study.study_name).records_since()


def study_status(ot_study: optuna.Study, trials: list[ReadTrial] | None = None) -> dict[str, Any]:
    """``lwnas status``'s figures, from ``trials`` (``read_trials``) or else Optuna's view of the study."""
    # the collector's full passes over 100,000 trials' records cost 3x the figures themselves (2 s of 3)
    with collector_paused():
        return _figures(ot_study, trials)


def _figures(ot_study: optuna.Study, trials: list[ReadTrial] | None) -> dict[str, Any]:
    if trials is None:
        trials = [ReadTrial(record_of(t), parent_of(t)) for t in ot_study.get_trials(deepcopy=False)]
    records = [t.record for t in trials]
    objectives = study_objectives(ot_study)
    names = [o.metric for o in objectives]
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    # the front and hypervolume of the seed means (one point per trial where no trial was repeated)
    groups = groups_of(records, {t.record.number: t.parent for t in trials})
    means = [g.record for g in groups]
    ref = front_reference_point(means, objectives)
    timed = [r.wall_time for r in records if r.wall_time is not None]
    front = pareto_front_groups(groups, objectives)
    return {
        "study": ot_study.study_name,
        "trials": len(records),
        "outcomes": outcomes,
        "objectives": names,
        "directions": [o.direction for o in objectives],
        "reference_point": ref,
        "hypervolume": front_hypervolume(means, objectives, ref),
        "front": [
            {
                **front_entry(g, names),
                **{k: g.record.costs[k] for k in ("latency_device", "latency_mode") if k in g.record.costs},
            }
            for g in front
        ],
        "latency_devices": latency_devices(records),
        "seconds_per_trial": sum(timed) / len(timed) if timed else None,
        "timed_trials": len(timed),
        "rejected": ot_study.user_attrs.get(keys.STUDY_REJECTED),
        **budget_status(ot_study),
    }


def budget_status(ot_study: optuna.Study) -> dict[str, Any]:
    """The budget in force, its raises, why the last driver ended (None before lwnas recorded it), and the
    runs of `lwnas confirm`."""
    spec_budget = (ot_study.user_attrs.get(keys.STUDY_SPEC) or {}).get("budget") or {}
    budget = ot_study.user_attrs.get(keys.STUDY_BUDGET, spec_budget.get("trials", Budget().trials))
    return {
        "budget": budget,
        "budget_changes": ot_study.user_attrs.get(keys.STUDY_BUDGET_CHANGES, []),
        "ended": ended(ot_study),
        "confirmations": ot_study.user_attrs.get(keys.STUDY_CONFIRMATIONS, []),
    }


def latency_devices(records: list) -> dict[str, list[int]]:
    """Which device and machine measured the latencies of which trials (more than one: not comparable)."""
    out: dict[str, list[int]] = {}
    for r in records:
        if "latency_device" in r.costs:
            out.setdefault(str(r.costs["latency_device"]), []).append(r.number)
    return out
