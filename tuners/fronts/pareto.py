"""Pareto fronts and hypervolume of a sweep, read from its Optuna study.

The front is the non-dominated set of the feasible, complete trials (the set Optuna's
``Study.best_trials`` holds, computed here from lwnas's records so pruned and infeasible trials are
judged by their outcome). Dominance, reference point and hypervolume come from ``tuners.fronts.objectives``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tuners.fronts import objectives as obj
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord


def minimised(records: Sequence[TrialRecord], directions: Sequence[str]) -> np.ndarray:
    """``(n, m)`` objective values as minimisation (maximised objectives negated)."""
    values = np.array([r.values for r in records], dtype=float).reshape(len(records), len(directions))
    return obj.minimised(values, directions)


def front_candidates(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Trials that may be on a front: complete, feasible, with finite values."""
    return [
        r
        for r in records
        if r.state == "COMPLETE"
        and r.outcome == Outcome.COMPLETE
        and r.feasible
        and r.values is not None
        and all(map(math.isfinite, r.values))
    ]


def reference_point(records: Sequence[TrialRecord], objectives: Sequence[tuple[str, str]]) -> list[float]:
    """The point hypervolume is measured from (``objectives.reference_point`` over the candidates)."""
    return obj.reference_point([r.values for r in front_candidates(records)], [d for _, d in objectives])


def hypervolume(records: Sequence[TrialRecord], objectives: Sequence[tuple[str, str]], ref: Sequence[float]) -> float:
    candidates = front_candidates(records)
    if not candidates:
        return 0.0
    directions = [d for _, d in objectives]
    return obj.hypervolume(minimised(candidates, directions), obj.minimised(ref, directions))


def hypervolume_over_trials(
    records: Sequence[TrialRecord], objectives: Sequence[tuple[str, str]], ref: Sequence[float]
) -> list[tuple[int, float]]:
    """``(trial number, hypervolume of the trials up to it)`` in trial order."""
    ordered = sorted(records, key=lambda r: r.number)
    return [(r.number, hypervolume(ordered[: i + 1], objectives, ref)) for i, r in enumerate(ordered)]


def pareto_front(records: Sequence[TrialRecord], directions: Sequence[str]) -> list[TrialRecord]:
    """Non-dominated candidate trials (the same set as Optuna's ``best_trials``), sorted by objective 0."""
    candidates = front_candidates(records)
    if not candidates:
        return []
    mask = obj.nondominated(minimised(candidates, directions))
    return sorted((c for c, keep in zip(candidates, mask) if keep), key=lambda r: r.values[0])
