"""A study's objectives and all their math: how a study stores them, the sign flip to minimisation,
dominance, non-dominated ranks, Pareto fronts of trial records, the reference point and hypervolume.

Objectives travel as ``searchspace.study.Objective`` from the study parser to the dashboard. A study
stores them in its ``lwnas:objectives`` attribute (``[[metric, direction], ...]``): ``encoded_objectives``
writes it and ``decoded_objectives`` is the one reader (a study without it, older or not lwnas's, falls
back to Optuna's metric names and ``StudyDirection``s, read only there).

As in Optuna's ``study/_multi_objective.py``, every objective vector is turned into minimisation by one
function (``_sign``: maximised metrics negated) before it is compared; dominance, non-dominated ranks and
hypervolume come from moocore (a maintained implementation of the standard algorithms), so no other
module writes a sign flip or a dominance test (``tests/test_objective_math_in_one_place.py`` scans the
product packages for one).

A front is the non-dominated set of the feasible, complete trials (the set Optuna's ``Study.best_trials``
holds, computed here from lwnas's records so pruned and infeasible trials are judged by their outcome).
Trial outcomes are ``tuners.store.outcomes.Outcome``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.study import StudyDirection

from searchspace.study import DIRECTIONS, MAXIMIZE, MINIMIZE, Objective
from tuners.store import keys
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord

if TYPE_CHECKING:
    import optuna


# ---- a study's objectives as storage keeps them --------------------------------------------------------------
def encoded_objectives(objectives: Iterable[Objective]) -> list[list[str]]:
    """The ``lwnas:objectives`` study attribute: ``[[metric, direction], ...]`` in Optuna's value order."""
    return [[o.metric, o.direction] for o in objectives]


def decoded_objectives(
    user_attrs: Mapping[str, Any],
    directions: Sequence[StudyDirection],
    metric_names: Callable[[], Sequence[str] | None],
) -> tuple[Objective, ...]:
    """A stored study's objectives, from its user attributes, else (a study without ``lwnas:objectives``)
    from Optuna's ``directions`` and ``metric_names()`` (called only then; ``objective_0``... without).

    Args:
        user_attrs: the study's user attributes.
        directions: the study's directions, one per objective value.
        metric_names: gives the study's metric names (None where it has none).
    """
    stored = user_attrs.get(keys.STUDY_OBJECTIVES)
    if (
        isinstance(stored, (list, tuple))
        and len(stored) == len(directions) > 0
        and all(isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[1] in DIRECTIONS for pair in stored)
    ):
        return tuple(Objective(str(metric), direction) for metric, direction in stored)
    names = metric_names() or [f"objective_{i}" for i in range(len(directions))]
    return tuple(
        Objective(name, MAXIMIZE if direction == StudyDirection.MAXIMIZE else MINIMIZE)
        for name, direction in zip(names, directions)
    )


def study_objectives(ot_study: optuna.Study) -> tuple[Objective, ...]:
    """The objectives of an Optuna study (``decoded_objectives`` of what it stores)."""
    return decoded_objectives(ot_study.user_attrs, ot_study.directions, lambda: ot_study.metric_names)


# ---- minimisation --------------------------------------------------------------------------------------------
def _sign(objective: Objective) -> float:
    """The factor that turns an objective's values into minimisation (-1 when maximised): the only sign flip.
    Applied twice it is the identity, so it also turns a minimised value back."""
    return -1.0 if objective.direction == MAXIMIZE else 1.0


def minimised(values: Any, objectives: Sequence[Objective]) -> np.ndarray:
    """``(n, m)`` (or ``(m,)``) objective values as minimisation."""
    return np.asarray(values, dtype=float) * np.array([_sign(o) for o in objectives])


def minimised_value(value: float, objective: Objective) -> float:
    """One value as minimisation (or a minimised value back in the objective's own direction)."""
    return _sign(objective) * value


def worst_value(objective: Objective) -> float:
    """The worst value an objective can take (what an untrained point scores)."""
    return minimised_value(math.inf, objective)


def worst_values(objectives: Sequence[Objective], costs: Mapping[str, float]) -> list[float]:
    """A never-trained point's values: its real static costs, the worst value for task metrics."""
    return [costs[o.metric] if o.is_cost else worst_value(o) for o in objectives]


def beyond_worst(low: float, high: float, margin: float, objective: Objective) -> float:
    """The value ``margin`` past the worse end of ``[low, high]`` (below ``low`` when maximised)."""
    worse = max(minimised_value(low, objective), minimised_value(high, objective))
    return minimised_value(worse + margin, objective)


def improved(values: Sequence[float], amounts: Sequence[float], objectives: Sequence[Objective]) -> list[float]:
    """Each value moved by its amount towards better (raised when maximised, lowered when minimised)."""
    return [minimised_value(minimised_value(v, o) - a, o) for v, a, o in zip(values, amounts, objectives)]


# ---- dominance of minimised points ---------------------------------------------------------------------------
def weakly_dominates(a: Any, b: Any) -> bool:
    """Minimised point ``a`` is no worse than ``b`` on every objective."""
    return bool(np.all(np.asarray(a, dtype=float) <= np.asarray(b, dtype=float)))


def dominates(a: Any, b: Any) -> bool:
    """Minimised point ``a`` is no worse than ``b`` on every objective and better on one."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return bool(np.all(a <= b) and np.any(a < b))


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


def crowding_distance(points: np.ndarray) -> np.ndarray:
    """NSGA-II crowding distance of minimised points within one front (boundary points get infinity)."""
    n, m = points.shape
    distance = np.zeros(n)
    if n <= 2:
        return np.full(n, np.inf)
    for j in range(m):
        order = np.argsort(points[:, j])
        span = points[order[-1], j] - points[order[0], j]
        distance[order[0]] = distance[order[-1]] = np.inf
        if span > 0:
            distance[order[1:-1]] += (points[order[2:], j] - points[order[:-2], j]) / span
    return distance


def nondominated_order(points: np.ndarray) -> np.ndarray:
    """Indices of minimised points from best to worst, as NSGA-II sorts them: by non-dominated rank, then by
    crowding distance (larger first)."""
    ranks = nondominated_ranks(points)
    crowd = np.zeros(len(points))
    for r in np.unique(ranks):
        members = np.where(ranks == r)[0]
        crowd[members] = crowding_distance(points[members])
    return np.lexsort((-crowd, ranks))


# ---- hypervolume ---------------------------------------------------------------------------------------------
def hypervolume(points: np.ndarray, ref: np.ndarray) -> float:
    """Volume dominated by minimised ``points`` up to the minimised reference point ``ref``."""
    import moocore

    points = np.asarray(points, dtype=float).reshape(-1, len(ref))
    inside = np.all(points < ref, axis=1)  # points beyond the reference add nothing
    if not inside.any():
        return 0.0
    return float(moocore.hypervolume(points[inside], ref=np.asarray(ref, dtype=float)))


def reference_point(candidate_values: Sequence[Sequence[float]], objectives: Sequence[Objective]) -> list[float]:
    """The point hypervolume is measured from, in the objectives' own units and directions.

    Maximised task metrics: 0 (no metric lwnas reports is below it). Minimised costs: 1.1 x the
    largest value among the candidates, so every candidate adds volume.
    """
    ref = []
    for i, objective in enumerate(objectives):
        if objective.direction == MAXIMIZE:
            ref.append(0.0)
        else:
            worst = max((v[i] for v in candidate_values), default=1.0)
            ref.append(1.1 * worst if worst > 0 else 1.0)
    return ref


# ---- fronts of trial records ---------------------------------------------------------------------------------
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


def _values(record: TrialRecord) -> list[float]:
    """A front candidate's objective values (every candidate has them; any other record may not)."""
    if record.values is None:
        raise ValueError(f"trial {record.number} has no objective values")
    return record.values


def _minimised_records(records: Sequence[TrialRecord], objectives: Sequence[Objective]) -> np.ndarray:
    """``(n, m)`` objective values of ``records`` as minimisation."""
    values = np.array([_values(r) for r in records], dtype=float).reshape(len(records), len(objectives))
    return minimised(values, objectives)


def nondominated_records(
    records: Sequence[TrialRecord], objectives: Sequence[Objective], on: Sequence[int] | None = None
) -> list[TrialRecord]:
    """Records no other one dominates on the objectives numbered ``on`` (all by default), sorted by the first."""
    idx = list(range(len(objectives))) if on is None else list(on)
    if not records:
        return []
    mask = nondominated(minimised([[_values(r)[i] for i in idx] for r in records], [objectives[i] for i in idx]))
    return sorted((r for r, keep in zip(records, mask) if keep), key=lambda r: _values(r)[idx[0]])


def nondominated_rows(values: np.ndarray, objectives: Sequence[Objective], on: Sequence[int]) -> np.ndarray:
    """``nondominated_records`` on a value matrix: the positions of the rows of ``values`` (``(n, objectives)``,
    candidates' values in trial order) no other row dominates on the objectives numbered ``on``, sorted by the
    first of them (ties in row order, as ``nondominated_records`` keeps them)."""
    idx = list(on)
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    points = np.asarray(values, dtype=float)[:, idx]
    kept = np.flatnonzero(nondominated(minimised(points, [objectives[i] for i in idx])))
    return kept[np.argsort(points[kept, 0], kind="stable")]


def pareto_front(records: Sequence[TrialRecord], objectives: Sequence[Objective]) -> list[TrialRecord]:
    """Non-dominated candidate trials (the same set as Optuna's ``best_trials``), sorted by objective 0."""
    return nondominated_records(front_candidates(records), objectives)


def front_reference_point(records: Sequence[TrialRecord], objectives: Sequence[Objective]) -> list[float]:
    """``reference_point`` over the front candidates among ``records``."""
    return reference_point([_values(r) for r in front_candidates(records)], objectives)


def front_hypervolume(records: Sequence[TrialRecord], objectives: Sequence[Objective], ref: Sequence[float]) -> float:
    """Hypervolume of the front candidates among ``records`` from ``ref`` (in the objectives' own units)."""
    candidates = front_candidates(records)
    if not candidates:
        return 0.0
    return hypervolume(_minimised_records(candidates, objectives), minimised(ref, objectives))


def hypervolume_over_trials(
    records: Sequence[TrialRecord],
    objectives: Sequence[Objective],
    ref: Sequence[float],
    candidates: Sequence[TrialRecord] | None = None,
) -> list[tuple[int, float]]:
    """``(trial number, hypervolume of the trials up to it)`` in trial order; ``candidates``: the front
    candidates among ``records`` where the caller has them.

    Incremental: the front is kept as trials arrive, and hypervolume is measured again only when a trial
    joins it (the volume of a set is that of its front)."""
    numbers = {r.number for r in (front_candidates(records) if candidates is None else candidates)}
    front: list[TrialRecord] = []
    current, out = 0.0, []
    for r in sorted(records, key=lambda r: r.number):
        if r.number in numbers:
            p = minimised(_values(r), objectives)
            if not any(weakly_dominates(minimised(_values(f), objectives), p) for f in front):
                front = [f for f in front if not weakly_dominates(p, minimised(_values(f), objectives))] + [r]
                current = front_hypervolume(front, objectives, ref)
        out.append((r.number, current))
    return out
