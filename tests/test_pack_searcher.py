"""The packed sweep's searcher on its own (no Ray workers): a real Optuna study in SQLite.

One Ray trial stands for a pack of Optuna trials: packs together plan exactly the budget, each member is
planned and recorded as a single trial is, and each member's reports reach its own trial record, which is
told its outcome as soon as the member ends.
"""

from __future__ import annotations

from pathlib import Path

import optuna
from helpers.studies import write_study
from ray.tune.search import Searcher

from searchspace.study import load_study
from tuners.driver.pack_searcher import AUTO_MAX, PackSearcher, pack_samples
from tuners.driver.pack_trainable import ENDED, MEMBER, MEMBERS, RECORDS
from tuners.driver.sweep import SweepOptions, open_study_storage
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts
from tuners.store.connection import open_storage
from tuners.store.record import record_of

optuna.logging.set_verbosity(optuna.logging.WARNING)
COMPLETE, FAIL, PRUNED = (
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.FAIL,
    optuna.trial.TrialState.PRUNED,
)


def searcher_for(tmp_path: Path, trials: int, pack: int | str) -> tuple[PackSearcher, str]:
    study_file = write_study(tmp_path, "pk", trials=trials, epochs=2, pack=pack)
    study = load_study(study_file, task_family=task_family)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    storage = open_storage(url, create=True)
    ot_study = open_study_storage(study, SweepOptions(storage=url), False, storage)
    return PackSearcher(study, ot_study, StaticCosts(study, make_task(study)), storage, trials), url


def test_packs_plan_the_budget_exactly_and_each_member_is_a_planned_trial(tmp_path):
    searcher, url = searcher_for(tmp_path, trials=7, pack=3)
    assert pack_samples(searcher.study, 7) == 3
    configs = [searcher.suggest(f"ray-{i}") for i in range(3)]
    assert [len(c[RECORDS]) for c in configs] == [3, 3, 1]
    assert searcher.suggest("ray-3") == Searcher.FINISHED
    trials = optuna.load_study(study_name="pk", storage=url).trials
    assert [t.number for t in trials] == list(range(7))
    for config in configs:
        numbers = [r["number"] for r in config[RECORDS]]
        assert config["_lwnas_number"] == numbers[0]
        for record in config[RECORDS]:  # what the worker trains is what storage holds
            stored = record_of(trials[record["number"]])
            assert stored.config == record["config"] and stored.training == record["training"]
            assert trials[record["number"]].user_attrs["pack"] == numbers


def test_each_members_reports_reach_its_own_trial_and_end_it_alone(tmp_path):
    searcher, url = searcher_for(tmp_path, trials=4, pack=4)
    config = searcher.suggest("ray-0")
    failed, pruned, complete, lost = (r["number"] for r in config[RECORDS])
    epoch = {"train_loss": 1.0, "val_accuracy": 0.5, "wall_time": 1.0, "device": "cpu"}
    reason = {"rung": 1, "dominated_by": [complete], "values": {"accuracy": 0.5}}
    # the worker reports a round at a time: every live member's epoch in one Ray report
    first_round = [
        {MEMBER: failed, "epoch": 1, "lwnas_failed": "diverging", ENDED: "failed"},
        {MEMBER: pruned, "epoch": 1, **epoch, ENDED: "pruned", "lwnas_pruned": reason},
        {MEMBER: complete, "epoch": 1, **epoch},
        {MEMBER: lost, "epoch": 1, **epoch},
    ]
    searcher.on_trial_result("ray-0", {MEMBERS: first_round})
    searcher.on_trial_result("ray-0", {MEMBERS: [{MEMBER: complete, "epoch": 2, **epoch, ENDED: "complete"}]})
    trials = optuna.load_study(study_name="pk", storage=url).trials
    # ended members are told while the pack still trains; the fourth is still running
    assert trials[failed].state == FAIL and trials[failed].user_attrs["failure"] == "diverging"
    assert trials[pruned].state == PRUNED
    assert trials[pruned].user_attrs["pruned_by"] == {
        "rung": 1,
        "dominated_by": [complete],
        "values": {"accuracy": 0.5},
    }
    assert trials[complete].state == COMPLETE and trials[complete].values[0] == 0.5
    assert record_of(trials[complete]).device == "cpu" and len(record_of(trials[complete]).epochs) == 2
    assert trials[lost].state == optuna.trial.TrialState.RUNNING
    repeat = {MEMBER: complete, "epoch": 3, **epoch}
    searcher.on_trial_result("ray-0", {MEMBERS: [repeat]})  # a retried pack repeating an ended member: ignored
    # the pack's worker died past its retries: the member that had not ended fails with it
    searcher.on_trial_complete("ray-0", {"lwnas_error": "RuntimeError: worker died"}, error=True)
    trials = optuna.load_study(study_name="pk", storage=url).trials
    assert trials[lost].state == FAIL and "worker died" in trials[lost].user_attrs["failure"]
    assert len(record_of(trials[complete]).epochs) == 2


def test_pack_auto_fills_packs_by_planned_memory(tmp_path):
    searcher, _ = searcher_for(tmp_path, trials=AUTO_MAX + 2, pack="auto")
    assert searcher.memory_budget is not None and searcher.memory_budget > 0
    assert len(searcher.suggest("ray-0")[RECORDS]) == AUTO_MAX  # tiny models: the cap decides
    searcher.memory_budget = 1.0  # a device with (almost) no memory free: one member per pack
    assert len(searcher.suggest("ray-1")[RECORDS]) == 1
