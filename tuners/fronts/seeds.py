"""``budget: {front_seeds: N}``: points on (or within the noise of) the front trained with N seeds.

A repeat is an ordinary trial of its own (it uses a place in the budget) that the driver enqueues
through Optuna's ``enqueue_trial`` with the parent's params and the user attribute ``seed_of`` naming
the parent trial; its seed differs because a trial's seed derives from its number
(``record.trial_seed``). Trials of one point form a ``SeedGroup``: the front is computed on each
group's seed mean, and every front entry carries the number of seeds, the mean and the standard
deviation (ddof 1) of each objective.

"Within the noise": a point off the front whose task metrics, each raised (or lowered, if minimised)
by the pooled standard deviation of the groups trained on several seeds, would be on it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna

from searchspace.study import Objective
from tuners.fronts.objectives import front_candidates, improved, pareto_front, study_objectives
from tuners.store.record import TrialRecord, parent_of_attrs, record_of


@dataclass
class SeedGroup:
    """The trials of one point: the parent and its seed repeats."""

    parent: int  # the trial whose point the others repeat
    members: list[TrialRecord]  # its complete, feasible trials in number order (the parent first when it completed)
    record: TrialRecord  # the first member's record, its values replaced by the seed mean
    std: list[float | None]  # per objective; None with one seed

    @property
    def number(self) -> int:
        """The trial that stands for the point (the first of its trials that completed)."""
        return self.members[0].number

    @property
    def seeds(self) -> int:
        return len(self.members)


def parent_of(trial: optuna.trial.FrozenTrial) -> int:
    return parent_of_attrs(trial.user_attrs, trial.number)


def seed_groups(trials: Sequence[optuna.trial.FrozenTrial]) -> list[SeedGroup]:
    """Complete, feasible trials grouped by the point they train, in the parent's order."""
    return groups_of([record_of(t) for t in trials], {t.number: parent_of(t) for t in trials})


def groups_of(records: Sequence[TrialRecord], parents: dict[int, int]) -> list[SeedGroup]:
    """``seed_groups`` from records and each trial's parent (a trial missing from ``parents`` is its own)."""
    by_parent: dict[int, list[TrialRecord]] = {}
    for r in sorted(front_candidates(list(records)), key=lambda r: r.number):
        by_parent.setdefault(parents.get(r.number, r.number), []).append(r)
    groups = []
    for parent, members in sorted(by_parent.items()):
        if len(members) == 1:  # most points: the mean is the trial's own values (numpy would cost 20x more)
            groups.append(SeedGroup(parent, members, members[0], [None] * len(members[0].values or ())))
            continue
        values = np.array([m.values for m in members], dtype=float)
        mean = values.mean(axis=0).tolist()
        std = values.std(axis=0, ddof=1).tolist() if len(members) > 1 else [None] * values.shape[1]
        groups.append(SeedGroup(parent, members, dataclasses.replace(members[0], values=mean), std))
    return groups


def pooled_std(groups: Sequence[SeedGroup], index: int) -> float | None:
    """Pooled standard deviation of objective ``index`` over the groups trained on several seeds."""
    several = [g for g in groups if g.seeds > 1]
    dof = sum(g.seeds - 1 for g in several)
    if not dof:
        return None
    return math.sqrt(sum((g.seeds - 1) * (g.std[index] or 0.0) ** 2 for g in several) / dof)  # set: several seeds


def within_noise(groups: Sequence[SeedGroup], objectives: Sequence[Objective]) -> list[SeedGroup]:
    """Groups on the front, or on it once each task metric moves by its pooled std in its favour."""
    on_front = {g.number for g in pareto_front_groups(groups, objectives)}
    noise = [None if o.is_cost else pooled_std(groups, i) for i, o in enumerate(objectives)]
    out = []
    for g in groups:
        if g.number in on_front:
            out.append(g)
            continue
        if not any(noise):
            continue
        moved = improved(g.record.values or [], [s or 0.0 for s in noise], objectives)  # a candidate: it has values
        others = [o.record for o in groups if o.number != g.number]
        if g.number in {
            r.number for r in pareto_front([*others, dataclasses.replace(g.record, values=moved)], objectives)
        }:
            out.append(g)
    return out


def pareto_front_groups(groups: Sequence[SeedGroup], objectives: Sequence[Objective]) -> list[SeedGroup]:
    """The groups on the front of the seed means."""
    by_number = {g.number: g for g in groups}
    return [by_number[r.number] for r in pareto_front([g.record for g in groups], objectives)]


def repeats_needed(ot_study: optuna.Study, front_seeds: int) -> list[tuple[int, dict[str, Any]]]:
    """(parent number, params) of each repeat to enqueue now: points on or within the noise of the
    front with fewer than ``front_seeds`` seeds trained, queued or running."""
    trials = ot_study.get_trials(deepcopy=False)
    groups = seed_groups(trials)
    pending: dict[int, int] = {}
    for t in trials:
        if t.state in (optuna.trial.TrialState.WAITING, optuna.trial.TrialState.RUNNING):
            pending[parent_of(t)] = pending.get(parent_of(t), 0) + 1
    params = {t.number: t.params for t in trials}
    out = []
    for g in within_noise(groups, study_objectives(ot_study)):
        for _ in range(front_seeds - g.seeds - pending.get(g.parent, 0)):
            out.append((g.parent, params[g.parent]))
    return out


def front_entry(group: SeedGroup, names: Sequence[str]) -> dict[str, Any]:
    """One front trial as ``lwnas status --json`` and exports show it."""
    return {
        "trial": group.number,
        "values": group.record.values,
        "params": group.record.params,
        "seeds": group.seeds,
        "seed_trials": [m.number for m in group.members],
        "mean": dict(zip(names, group.record.values or ())),
        "std": dict(zip(names, group.std)),
    }
