"""bench/front_seed_stability.py's counting on a hand-made study (the bench's sweeps are not run here):
which single-seed front members are confirmed, which fall off the seed-mean front, which join it."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from helpers.front_studies import OBJECTIVES, study_with

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from front_seed_stability import stability, summary  # noqa: E402


def test_single_seed_front_members_that_fall_off_once_their_seeds_are_averaged():
    study = study_with(
        [
            (0.90, 10, None),  # 0: on the single-seed front; its repeats bring it to 0.6, below trial 4 at fewer params
            (0.70, 20, None),  # 1: dominated by trial 0's first seed, not by its mean: joins the seed-mean front
            (0.30, 5, None),  # 2: the smallest, one seed: on both fronts, not confirmed
            (0.95, 30, None),  # 3: confirmed and stays
            (0.65, 8, None),  # 4: one seed, on both fronts
            (0.50, 10, 0),
            (0.40, 10, 0),
            (0.93, 30, 3),
            (0.94, 30, 3),
        ]
    )
    result = stability(study.get_trials(), OBJECTIVES, front_seeds=3)
    members = {m["trial"]: m for m in result["single_seed_front_members"]}
    assert sorted(members) == [0, 2, 3, 4]
    assert {n: m["on_seed_mean_front"] for n, m in members.items()} == {0: False, 2: True, 3: True, 4: True}
    assert (members[0]["single_seed"], members[0]["seeds"]) == (0.9, 3)
    assert members[0]["mean"] == round(statistics.mean([0.9, 0.5, 0.4]), 4)
    assert (result["points"], result["repeat_trials"]) == (5, 4)
    counts = (result["confirmed"], result["fell_off"], result["fell_off_fraction"], result["not_confirmed"])
    assert counts == (2, 1, 0.5, 2)
    assert (result["seed_mean_front"], result["joined"]) == (4, [1])
    assert result["front_seed_std"] == {"n": 1, "median": 0.01, "min": 0.01, "max": 0.01}  # trial 3 only
    pooled = ((2 * statistics.variance([0.9, 0.5, 0.4]) + 2 * statistics.variance([0.95, 0.93, 0.94])) / 4) ** 0.5
    assert result["pooled_std"] == round(pooled, 4)
    assert result["front_neighbour_gap"]["median"] == round(0.94 - 0.70, 4)  # front 0.3, 0.65, 0.7, 0.94

    runs = [
        {"task": "digits", **result},
        {"task": "digits", **result, "confirmed": 2, "fell_off": 0, "fell_off_fraction": 0.0},
    ]
    total = summary(runs)["digits"]
    assert {k: total[k] for k in ("studies", "confirmed", "fell_off", "fell_off_fraction", "per_study_fraction")} == {
        "studies": 2,
        "confirmed": 4,
        "fell_off": 1,
        "fell_off_fraction": 0.25,
        "per_study_fraction": [0.5, 0.0],
    }
