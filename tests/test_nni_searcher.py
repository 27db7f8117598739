"""NNI's tuners proposing for a sweep (``sampler: nni-tpe`` / ``nni-evolution``), driven as Ray drives a searcher:
``suggest`` then ``on_trial_complete``, over a real Optuna study in SQLite and NNI's real tuners.

NNI maximises one score, so each finished trial is scored with ParEGO's augmented Tchebycheff value of its
normalised objectives; a point the static constraints reject is scored the worst, a failed trial ends unscored.
"""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from searchspace.study import load_study
from tuners.driver.nni_searcher import NNISearcher, parego
from tuners.driver.sweep import SweepOptions, open_study_storage
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts
from tuners.store.connection import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)

STUDY = """\
name: nni
task: digits
objectives: [accuracy, params]
constraints: {{params: {{max: {max_params}}}}}
budget: {{trials: 6, epochs: 1}}
tuner: {{sampler: {sampler}, max_concurrent: 1, seed: 3}}
space:
  d_model: {{choice: [16, 32, 64]}}
  heads: 2
  layers: 1
  lr: {{float: [1.0e-3, 5.0e-3], log: true}}
"""


def nni_searcher(tmp_path, sampler: str, max_params: float = 1.0e9) -> NNISearcher:
    path = tmp_path / "nni.yaml"
    path.write_text(STUDY.format(sampler=sampler, max_params=max_params))
    study = load_study(path, task_family=task_family)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    storage = open_storage(url, create=True)
    ot_study = open_study_storage(study, SweepOptions(storage=url), False, storage)
    return NNISearcher(study, ot_study, StaticCosts(study, make_task(study)), storage)


def finish(searcher: NNISearcher, trial_id: str, accuracy: float) -> None:
    searcher.on_trial_result(trial_id, {"epoch": 1, "val_accuracy": accuracy, "train_loss": 1.0, "wall_time": 1.0})
    searcher.on_trial_complete(trial_id, {"epoch": 1, "val_accuracy": accuracy})


@pytest.mark.parametrize("sampler", ["nni-tpe", "nni-evolution"])
def test_nni_proposes_points_of_the_space_and_learns_from_every_finished_trial(tmp_path, sampler):
    searcher = nni_searcher(tmp_path, sampler)
    for i in range(4):
        config = searcher.suggest(f"t{i}")
        assert isinstance(config, dict), config
        finish(searcher, f"t{i}", 0.2 + 0.1 * i)
    trials = optuna.load_study(study_name="nni", storage=f"sqlite:///{tmp_path / 'lwnas.db'}").get_trials()
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * 4
    assert all(t.params["d_model"] in (16, 32, 64) and 1.0e-3 <= t.params["lr"] <= 5.0e-3 for t in trials)
    assert [t.values[0] for t in trials] == pytest.approx([0.2, 0.3, 0.4, 0.5])
    assert searcher.scored == 4 and searcher.awaiting == 0  # each result went back to NNI, none left over


def test_a_failed_trial_ends_in_nni_without_a_score(tmp_path):
    searcher = nni_searcher(tmp_path, "nni-tpe")
    searcher.suggest("t0")
    searcher.on_trial_complete("t0", error=True)
    assert searcher.awaiting == 0 and searcher.scored == 0  # told NNI it ended, gave it no value
    assert isinstance(searcher.suggest("t1"), dict)  # the search goes on
    finish(searcher, "t1", 0.5)
    assert searcher.scored == 1


def test_points_the_constraints_reject_are_scored_the_worst_and_the_search_goes_on(tmp_path):
    # d_model 16 fits under the limit; 32 and 64 do not, so NNI is told those proposals scored -1e9
    searcher = nni_searcher(tmp_path, "nni-evolution", max_params=8000)
    for i in range(3):
        config = searcher.suggest(f"t{i}")
        assert isinstance(config, dict), config
        finish(searcher, f"t{i}", 0.3)
    trials = optuna.load_study(study_name="nni", storage=f"sqlite:///{tmp_path / 'lwnas.db'}").get_trials()
    trained = [t for t in trials if t.user_attrs["outcome"] == "complete"]
    rejected = [t for t in trials if t.user_attrs["outcome"] == "infeasible"]  # kept in the study, never trained
    assert len(trained) == 3 and all(t.params["d_model"] == 16 for t in trained)
    assert rejected and all(t.params["d_model"] in (32, 64) for t in rejected)
    assert searcher.awaiting == 0


def test_parego_weighs_the_worst_objective_and_adds_the_sum():
    values, weights = np.array([0.2, 0.8]), np.array([0.5, 0.5])
    assert parego(values, weights) == pytest.approx(0.4 + 0.05 * 0.5)
    assert parego(np.array([0.0, 0.0]), weights) == 0.0
