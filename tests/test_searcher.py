"""The sweep's searcher on its own: Ray's Searcher interface over a real Optuna study in SQLite.

Ray calls ``save`` while a sweep runs (the sweep tests cover that path); here a second searcher
restores the first one's state and finishes the trial the first one proposed, by trial number.
"""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from helpers.studies import write_study

from searchspace.study import load_study
from tuners.driver.sweep import SweepOptions, open_study_storage
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts
from tuners.store.connection import open_storage
from tuners.store.record import record_of

optuna.logging.set_verbosity(optuna.logging.WARNING)


def searcher_for(study_file: Path, url: str, resume: bool):
    from tuners.driver.searcher import StudySearcher

    study = load_study(study_file, task_family=task_family)
    storage = open_storage(url, create=True)
    ot_study = open_study_storage(study, SweepOptions(storage=url), resume, storage)
    return StudySearcher(study, ot_study, StaticCosts(study, make_task(study)), storage)


def test_a_restored_searcher_finishes_the_trial_its_predecessor_proposed(tmp_path):
    study_file = write_study(tmp_path, "restore", trials=2, epochs=1)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    first = searcher_for(study_file, url, resume=False)
    config = first.suggest("ray-trial-1")
    number = config["_lwnas_number"]
    first.on_trial_result("ray-trial-1", {"epoch": 1, "val_accuracy": 0.5, "train_loss": 1.0, "wall_time": 2.0})
    first.save(str(tmp_path / "searcher.json"))
    saved = json.loads((tmp_path / "searcher.json").read_text())
    assert saved["numbers"] == {"ray-trial-1": number} and saved["study"] == "restore"

    second = searcher_for(study_file, url, resume=True)
    second.restore(str(tmp_path / "searcher.json"))
    second.on_trial_complete("ray-trial-1", {"epoch": 1, "val_accuracy": 0.5, "host": "h"})
    second.on_trial_complete("ray-trial-1", {"epoch": 1, "val_accuracy": 0.9})  # a repeat is ignored

    trial = optuna.load_study(study_name="restore", storage=url).trials[number]
    assert trial.state == optuna.trial.TrialState.COMPLETE
    assert trial.values == [0.5, record_of(trial).costs["params"]]
    assert trial.user_attrs["outcome"] == "complete" and trial.user_attrs["budget_used"] == 1
    assert [e["epoch"] for e in record_of(trial).epochs] == [1] and trial.user_attrs["host"] == "h"


def test_restore_refuses_another_studys_state(tmp_path):
    study_file = write_study(tmp_path, "mine", trials=2, epochs=1)
    searcher = searcher_for(study_file, f"sqlite:///{tmp_path / 'lwnas.db'}", resume=False)
    (tmp_path / "other.json").write_text(json.dumps({"study": "other", "numbers": {}, "completed": [], "epochs": {}}))
    with pytest.raises(ValueError, match="belongs to study 'other'"):
        searcher.restore(str(tmp_path / "other.json"))
