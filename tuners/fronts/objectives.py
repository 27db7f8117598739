"""Objective math in one place: directions, minimisation, dominance, fronts, hypervolume, outcomes.

(Trial outcomes are ``tuners.store.outcomes.Outcome``.) Every objective vector is turned into minimisation
here (maximised metrics negated) before it is compared; dominance, non-dominated ranks and hypervolume
come from moocore (a maintained implementation of the standard algorithms), so no other module writes
a sign flip or a dominance test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

MAXIMIZE, MINIMIZE = "maximize", "minimize"


def direction_names(directions: Iterable[Any]) -> list[str]:
    """``maximize`` / ``minimize`` for each of Optuna's ``StudyDirection`` values (as study files spell them)."""
    return [MAXIMIZE if d.name == "MAXIMIZE" else MINIMIZE for d in directions]


def signs(directions: Iterable[str]) -> np.ndarray:
    """Per objective, the factor that turns its values into minimisation (-1 for maximised ones)."""
    return np.array([-1.0 if d == MAXIMIZE else 1.0 for d in directions])


def minimised(values: Any, directions: Sequence[str]) -> np.ndarray:
    """``(n, m)`` (or ``(m,)``) objective values as minimisation."""
    return np.asarray(values, dtype=float) * signs(directions)


def worst_value(direction: str) -> float:
    """The worst value an objective can take (what an untrained point scores)."""
    return -math.inf if direction == MAXIMIZE else math.inf


def worst_values(objectives: Sequence[Any], costs: Mapping[str, float]) -> list[float]:
    """A never-trained point's values: its real static costs, the worst value for task metrics."""
    return [costs[o.metric] if o.is_cost else worst_value(o.direction) for o in objectives]


def nondominated(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows no other row dominates (minimisation; duplicates all kept)."""
    import moocore

    if len(points) == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(moocore.is_nondominated(points, keep_weakly=True), dtype=bool)


def nondominated_ranks(points: np.ndarray) -> np.ndarray:
    """Rank of each row under minimisation (0 = non-dominated, 1 = non-dominated once 0 is removed...)."""
    import moocore

    if len(points) == 0:
        return np.zeros(0, dtype=int)
    return np.asarray(moocore.pareto_rank(points), dtype=int)


def hypervolume(points: np.ndarray, ref: np.ndarray) -> float:
    """Volume dominated by minimised ``points`` up to the minimised reference point ``ref``."""
    import moocore

    points = np.asarray(points, dtype=float).reshape(-1, len(ref))
    inside = np.all(points < ref, axis=1)  # points beyond the reference add nothing
    if not inside.any():
        return 0.0
    return float(moocore.hypervolume(points[inside], ref=np.asarray(ref, dtype=float)))


def reference_point(candidate_values: Sequence[Sequence[float]], directions: Sequence[str]) -> list[float]:
    """The point hypervolume is measured from, in the objectives' own units and directions.

    Maximised task metrics: 0 (no metric lwnas reports is below it). Minimised costs: 1.1 x the
    largest value among the candidates, so every candidate adds volume.
    """
    ref = []
    for i, direction in enumerate(directions):
        if direction == MAXIMIZE:
            ref.append(0.0)
        else:
            worst = max((v[i] for v in candidate_values), default=1.0)
            ref.append(1.1 * worst if worst > 0 else 1.0)
    return ref
