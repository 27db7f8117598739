"""In-memory studies with seed repeats, for the front-seed tests (tests/test_front_seeds.py and
tests/test_front_seed_stability.py)."""

from __future__ import annotations

import warnings

import optuna

from searchspace.study import Objective
from tuners.store import keys

OBJECTIVES = [Objective("accuracy", "maximize"), Objective("params", "minimize")]


def study_with(points: list[tuple[float, float, int | None]]) -> optuna.Study:
    """An in-memory study of complete trials: (accuracy, params, seed_of) each; params are d_model."""
    study = optuna.create_study(directions=["maximize", "minimize"])
    with warnings.catch_warnings():  # experimental in Optuna 5 (as in tuners.driver.sweep)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["accuracy", "params"])
    dist = {"d_model": optuna.distributions.IntDistribution(1, 100)}
    for accuracy, params, parent in points:
        attrs = {"outcome": "complete", **({keys.SEED_OF: parent} if parent is not None else {})}
        study.add_trial(
            optuna.trial.create_trial(
                params={"d_model": int(params)}, distributions=dist, values=[accuracy, params], user_attrs=attrs
            )
        )
    return study
