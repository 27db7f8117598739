"""Studies written straight into a storage for the tests that read trials back."""

from __future__ import annotations

import math

import optuna

from dashboards.sample import seed_study
from tuners.store.connection import open_storage
from tuners.store.record import record_of


def every_kind_of_trial(url: str, name: str) -> tuple[optuna.storages.RDBStorage, int, optuna.Study]:
    """A study with finished synthetic trials (complete, infeasible, pruned, failed) written in bulk, then
    trials in every other state through Optuna's ask-and-tell: running, waiting, failed, infinite values."""
    study = seed_study(url, name=name, trials=40, seed=3)
    assert {record_of(t).outcome for t in study.trials} >= {"complete", "infeasible", "pruned", "failed"}
    running = study.ask()
    running.suggest_float("lr", 1e-4, 1e-2, log=True)
    running.set_user_attr("epochs", [{"epoch": 1, "val_loss": math.nan}])  # NaN: JSON that orjson rejects
    running.set_constraint("params", 12.0)
    failed = study.ask()
    study.tell(failed, state=optuna.trial.TrialState.FAIL)
    infinite = study.ask()
    infinite.suggest_categorical("d_model", [32, 64])
    study.tell(infinite, [-math.inf, math.inf])
    study.enqueue_trial({"lr": 1e-3})  # waiting (the next ask takes it)
    storage = open_storage(url)
    sid = storage.get_study_id_from_name(name)
    running_id = storage.get_trial_id_from_study_id_trial_number(sid, running.number)
    # intermediate values (Trial.report is single-objective only; lwnas does not use them, Optuna's view has them)
    storage.set_trial_intermediate_value(running_id, 1, 0.5)
    storage.set_trial_intermediate_value(running_id, 2, math.inf)
    return storage, storage.get_study_id_from_name(name), study
