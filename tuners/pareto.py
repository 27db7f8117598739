"""Pareto fronts and hypervolume of a sweep, read from its Optuna study.

The front is Optuna's own (``Study.best_trials``: feasible, complete trials only). Hypervolume comes
from moocore (a maintained implementation); objectives are turned into minimisation (maximised
metrics negated) and measured against a stated reference point.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .storage import TrialRecord


def minimised(records: Sequence[TrialRecord], directions: Sequence[str]) -> np.ndarray:
    """``(n, m)`` objective values as minimisation (maximised objectives negated)."""
    signs = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])
    return np.array([r.values for r in records], dtype=float).reshape(len(records), len(directions)) * signs


def front_candidates(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Trials that may be on a front: complete, feasible, with finite values."""
    return [r for r in records if r.state == "COMPLETE" and r.outcome == "complete" and r.feasible
            and r.values is not None and all(np.isfinite(r.values))]


def reference_point(records: Sequence[TrialRecord], objectives: Sequence[tuple[str, str]]) -> list[float]:
    """The point hypervolume is measured from, in the objectives' own units and directions.

    Maximised task metrics: 0 (no metric lwnas reports is below it). Minimised costs: 1.1 x the
    largest value among the candidate trials, so every candidate adds volume.
    """
    candidates = front_candidates(records)
    ref = []
    for i, (_, direction) in enumerate(objectives):
        if direction == "maximize":
            ref.append(0.0)
        else:
            worst = max((r.values[i] for r in candidates), default=1.0)
            ref.append(1.1 * worst if worst > 0 else 1.0)
    return ref


def hypervolume(records: Sequence[TrialRecord], objectives: Sequence[tuple[str, str]],
                ref: Sequence[float]) -> float:
    import moocore

    candidates = front_candidates(records)
    if not candidates:
        return 0.0
    directions = [d for _, d in objectives]
    points = minimised(candidates, directions)
    signs = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])
    ref_min = np.asarray(ref, dtype=float) * signs
    inside = np.all(points < ref_min, axis=1)
    if not inside.any():
        return 0.0
    return float(moocore.hypervolume(points[inside], ref=ref_min))


def hypervolume_over_trials(records: Sequence[TrialRecord], objectives: Sequence[tuple[str, str]],
                            ref: Sequence[float]) -> list[tuple[int, float]]:
    """``(trial number, hypervolume of the trials up to it)`` in trial order."""
    ordered = sorted(records, key=lambda r: r.number)
    return [(r.number, hypervolume(ordered[:i + 1], objectives, ref)) for i, r in enumerate(ordered)]


def pareto_front(records: Sequence[TrialRecord], directions: Sequence[str]) -> list[TrialRecord]:
    """Non-dominated candidate trials (the same set as Optuna's ``best_trials``), sorted by objective 0."""
    candidates = front_candidates(records)
    if not candidates:
        return []
    points = minimised(candidates, directions)
    front = []
    for i, p in enumerate(points):
        dominated = np.any(np.all(points <= p, axis=1) & np.any(points < p, axis=1))
        if not dominated:
            front.append(candidates[i])
    return sorted(front, key=lambda r: r.values[0])
