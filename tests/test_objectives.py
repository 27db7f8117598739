"""tuners.fronts.objectives (moocore underneath) agrees with the definitions it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from tuners.fronts.objectives import hypervolume, minimised, nondominated, nondominated_ranks, reference_point
from tuners.store.outcomes import Outcome


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
    directions = ["maximize", "minimize"]
    values = [[0.9, 30.0], [0.5, 10.0], [0.4, 20.0]]  # (accuracy, params); the last is dominated
    points = minimised(values, directions)
    assert points.tolist() == [[-0.9, 30.0], [-0.5, 10.0], [-0.4, 20.0]]
    ref = reference_point(values, directions)
    assert ref == [0.0, pytest.approx(33.0)]
    # two rectangles up to (0, 33): 0.9 x 3 and 0.5 x 23
    assert hypervolume(points, minimised(ref, directions)) == pytest.approx(0.9 * 3 + 0.5 * 20)


def test_outcomes_are_stored_as_their_plain_names():
    assert [o.value for o in Outcome] == ["complete", "infeasible", "pruned", "failed", "interrupted"]
    assert Outcome.PRUNED == "pruned" and str(Outcome.FAILED) == "failed" and f"{Outcome.COMPLETE}" == "complete"
