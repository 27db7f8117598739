"""tuners.fronts.objectives (moocore underneath) agrees with the definitions it replaces."""

from __future__ import annotations

import math
import warnings

import numpy as np
import optuna
import pytest

from searchspace.study import Objective
from tuners.fronts.objectives import (
    beyond_worst,
    crowding_distance,
    decoded_objectives,
    encoded_objectives,
    front_candidates,
    front_hypervolume,
    front_reference_point,
    hypervolume,
    hypervolume_over_trials,
    improved,
    minimised,
    minimised_value,
    nondominated,
    nondominated_order,
    nondominated_ranks,
    nondominated_records,
    pareto_front,
    reference_point,
    study_objectives,
    weakly_dominates,
    worst_value,
    worst_values,
)
from tuners.store import keys
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord

ACCURACY, PARAMS = Objective("accuracy", "maximize"), Objective("params", "minimize")


def dominated_by_any(points: np.ndarray, p: np.ndarray) -> bool:
    """Naive Pareto dominance under minimisation: weakly better everywhere, strictly somewhere."""
    return bool(np.any(np.all(points <= p, axis=1) & np.any(points < p, axis=1)))


def naive_ranks(points: np.ndarray) -> np.ndarray:
    ranks, remaining, rank = np.full(len(points), -1), np.arange(len(points)), 0
    while remaining.size:
        sub = points[remaining]
        dominated = np.array([dominated_by_any(sub, p) for p in sub])
        ranks[remaining[~dominated]] = rank
        remaining, rank = remaining[dominated], rank + 1
    return ranks


@pytest.mark.parametrize("seed", range(5))
def test_fronts_and_ranks_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 6, size=(40, 3)).astype(float)  # small integers: ties and duplicates
    assert nondominated(points).tolist() == [not dominated_by_any(points, p) for p in points]
    assert nondominated_ranks(points).tolist() == naive_ranks(points).tolist()


def test_maximised_objectives_are_negated_and_hypervolume_is_the_dominated_area():
    objectives = [ACCURACY, PARAMS]
    values = [[0.9, 30.0], [0.5, 10.0], [0.4, 20.0]]  # (accuracy, params); the last is dominated
    points = minimised(values, objectives)
    assert points.tolist() == [[-0.9, 30.0], [-0.5, 10.0], [-0.4, 20.0]]
    ref = reference_point(values, objectives)
    assert ref == [0.0, pytest.approx(33.0)]
    # two rectangles up to (0, 33): 0.9 x 3 and 0.5 x 23
    assert hypervolume(points, minimised(ref, objectives)) == pytest.approx(0.9 * 3 + 0.5 * 20)


def test_outcomes_are_stored_as_their_plain_names():
    assert [o.value for o in Outcome] == ["complete", "infeasible", "pruned", "failed", "interrupted", "screened"]
    assert Outcome.PRUNED == "pruned" and str(Outcome.FAILED) == "failed" and f"{Outcome.COMPLETE}" == "complete"


# ---- a study's objectives as storage keeps them ---------------------------------------------------------------
def test_a_study_s_objectives_round_trip_through_its_attribute():
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.set_user_attr(keys.STUDY_OBJECTIVES, encoded_objectives([ACCURACY, PARAMS]))
    assert study.user_attrs[keys.STUDY_OBJECTIVES] == [["accuracy", "maximize"], ["params", "minimize"]]
    assert study_objectives(study) == (ACCURACY, PARAMS)


def test_a_study_without_the_attribute_opens_from_optuna_s_names_and_directions():
    """As an older lwnas, or another tool, left it; an attribute that does not fit the study is not trusted."""
    study = optuna.create_study(directions=["minimize", "maximize"])
    assert study_objectives(study) == (Objective("objective_0", "minimize"), Objective("objective_1", "maximize"))
    with warnings.catch_warnings():  # experimental in Optuna 5
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["params", "accuracy"])
    assert study_objectives(study) == (PARAMS, ACCURACY)
    for unfit in ([["accuracy", "maximize"]], [["params", "minimize"], ["accuracy", "upward"]], "params", [1, 2]):
        study.set_user_attr(keys.STUDY_OBJECTIVES, unfit)
        assert study_objectives(study) == (PARAMS, ACCURACY)
    asked = []
    assert decoded_objectives({keys.STUDY_OBJECTIVES: [["a", "maximize"]]}, [1], lambda: asked.append(1)) == (
        Objective("a", "maximize"),
    )
    assert asked == []  # the names are read only when the attribute does not answer


# ---- every direction-dependent number comes from one sign -----------------------------------------------------
def test_the_direction_dependent_helpers_equal_the_formulas_they_replaced():
    """Bit for bit: the copies removed from the seeds, the plots and the importances computed these."""
    rng = np.random.default_rng(0)
    loss = Objective("loss", "minimize")
    for lo, hi, pad, v, s in rng.normal(scale=100.0, size=(500, 5)):
        lo, hi, pad, s = min(lo, hi), max(lo, hi), abs(pad), abs(s)
        assert beyond_worst(lo, hi, pad, ACCURACY) == lo - pad  # dashboards/plots.py: never-trained points
        assert beyond_worst(lo, hi, pad, loss) == hi + pad
        assert improved([v, v], [s, s], [ACCURACY, loss]) == [v + s * 1, v + s * -1]  # tuners/fronts/seeds.py
        assert minimised_value(v, ACCURACY) == -1.0 * v and minimised_value(v, loss) == 1.0 * v  # importance
    assert improved([0.5], [0.0], [ACCURACY]) == [0.5]
    assert (worst_value(ACCURACY), worst_value(PARAMS)) == (-math.inf, math.inf)
    assert worst_values([ACCURACY, PARAMS], {"params": 1234.0}) == [-math.inf, 1234.0]


def test_weak_dominance_of_minimised_points():
    assert weakly_dominates([1.0, 2.0], [1.0, 2.0]) and weakly_dominates([0.0, 2.0], [1.0, 2.0])
    assert not weakly_dominates([0.0, 3.0], [1.0, 2.0])


def test_the_nsga2_order_is_rank_then_crowding():
    points = np.array([[0.0, 4.0], [1.0, 3.0], [2.0, 2.0], [4.0, 0.0], [3.0, 3.0], [5.0, 5.0]])
    order = nondominated_order(points).tolist()
    assert order[:4] in ([0, 3, 1, 2], [3, 0, 1, 2], [0, 3, 2, 1], [3, 0, 2, 1])  # the front, its ends first
    assert order[4:] == [4, 5]
    assert crowding_distance(points[:4]).tolist()[0] == math.inf


# ---- fronts of records ------------------------------------------------------------------------------------------
def record(number: int, values: list[float] | None, outcome: str = "complete") -> TrialRecord:
    state = "COMPLETE" if outcome in ("complete", "infeasible") else "PRUNED"
    return TrialRecord(number=number, config={}, training={}, state=state, outcome=outcome, values=values)


@pytest.mark.parametrize("seed", range(3))
def test_the_incremental_hypervolume_equals_one_measured_afresh_at_each_trial(seed):
    rng = np.random.default_rng(seed)
    records = [
        record(n, [float(a), float(p)], str(rng.choice(["complete", "complete", "complete", "pruned"])))
        for n, (a, p) in enumerate(zip(rng.random(40), rng.integers(1, 100, 40)))
    ]
    objectives = [ACCURACY, PARAMS]
    ref = front_reference_point(records, objectives)
    fresh = [(r.number, front_hypervolume(records[: i + 1], objectives, ref)) for i, r in enumerate(records)]
    incremental = hypervolume_over_trials(records, objectives, ref)
    assert [n for n, _ in incremental] == [n for n, _ in fresh]
    assert np.allclose([v for _, v in incremental], [v for _, v in fresh])
    front = pareto_front(records, objectives)
    assert [r.number for r in front] == [r.number for r in nondominated_records(front_candidates(records), objectives)]
    assert all(r.outcome == "complete" for r in front)
