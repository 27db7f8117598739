"""Several studies of one task side by side: their fronts overlaid, each one's hypervolume measured from
one reference point that stays fixed while the studies grow (so the numbers compare across studies and
across refreshes). Reads storage only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from searchspace.study import Objective
from tuners.fronts.objectives import front_hypervolume, front_reference_point
from tuners.fronts.seeds import pareto_front_groups, seed_groups
from tuners.store import keys
from tuners.store.record import TrialRecord, record_of

from .data import connect, objectives_of


@dataclass
class StudyFront:
    name: str
    records: list[TrialRecord]  # every trial
    front: list[TrialRecord]  # on the seed means, one record per point
    means: list[TrialRecord]  # each point's seed mean (a trial of its own where none was repeated)


def comparable_studies(url: str, task: str, objectives: tuple[Objective, ...]) -> list[str]:
    """Studies in ``url`` of ``task`` with the same objectives (metric and direction, in order)."""
    storage = connect(url)
    names = []
    for frozen in storage.get_all_studies():
        spec = frozen.user_attrs.get(keys.STUDY_SPEC) or {}
        if (
            spec.get("task") == task
            and objectives_of(storage, frozen.study_name, frozen.user_attrs, frozen.directions) == objectives
        ):
            names.append(frozen.study_name)
    return sorted(names)


def study_fronts(url: str, names: list[str], objectives: Sequence[Objective]) -> list[StudyFront]:
    """Each study's records and its Pareto front, on the seed means as `lwnas status` computes it."""
    storage = connect(url)
    out = []
    for name in names:
        trials = storage.get_all_trials(storage.get_study_id_from_name(name), deepcopy=False)
        groups = seed_groups(trials)
        front = [g.record for g in pareto_front_groups(groups, objectives)]
        out.append(StudyFront(name, [record_of(t) for t in trials], front, [g.record for g in groups]))
    return out


def shared_reference_point(fronts: list[StudyFront], objectives: Sequence[Objective]) -> list[float]:
    """The reference point of the union of the studies' candidate trials (``tuners.fronts.objectives``' rule)."""
    return front_reference_point([r for f in fronts for r in f.means], objectives)


def hypervolume_table(
    fronts: list[StudyFront], objectives: Sequence[Objective], ref: list[float]
) -> list[dict[str, Any]]:
    """One row per study: trials, front size and hypervolume (of the seed means) measured from ``ref``."""
    return [
        {
            "study": f.name,
            "trials": len(f.records),
            "on the front": len(f.front),
            "hypervolume": front_hypervolume(f.means, objectives, ref),
        }
        for f in fronts
    ]
