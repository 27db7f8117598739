"""mo-asha ranks a rung on every objective of the study, cost objectives the training loop does not
measure (memory, latency) included: the worker's reports carry the planned static costs."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from searchspace import ArchConfig
from searchspace.study import Objective
from trainers.cost import cost
from trainers.loop import TrainSettings
from trainers.tasks import resolve_task
from trainers.tasks.base import adapt_config
from tuners.driver.mo_asha import MOASHA
from tuners.driver.trainable import train_record
from tuners.store.record import TrialRecord


def planned(number: int, d_model: int, latency: float) -> TrialRecord:
    config = adapt_config(
        ArchConfig.from_dict({"family": "encoder", "d_model": d_model, "heads": 2, "layers": 1}), resolve_task("digits")
    )
    report = cost(config)
    costs = {
        "params": report.params,
        "madds": report.madds,
        "memory": report.memory_bytes,
        "latency": latency,
        "latency_device": "cpu: a test",
    }
    return TrialRecord(
        number=number,
        config=config.to_dict(),
        training=TrainSettings(epochs=2, batch_size=64).to_dict(),
        task="digits",
        seed=number,
        costs=costs,
    )


def test_each_report_carries_the_planned_costs_and_mo_asha_ranks_on_them():
    scheduler = MOASHA(
        [Objective("accuracy", "maximize"), Objective("memory", "minimize"), Objective("latency", "minimize")],
        max_epochs=2,
        grace_epochs=1,
        reduction_factor=2,
    )
    threads = torch.get_num_threads()
    decisions = {}
    try:
        for number, d_model, latency in ((0, 16, 1.5), (1, 24, 2.5)):
            record = planned(number, d_model, latency)
            reports: list[dict] = []
            train_record(TrialRecord.from_worker(record.for_worker()), reports.append)
            assert [r["epoch"] for r in reports] == [1, 2]
            for r in reports:
                assert (r["memory"], r["latency"], r["madds"]) == (
                    record.costs["memory"],
                    latency,
                    record.costs["madds"],
                )
                assert "latency_device" not in r  # only numbers go to Tune's results
            trial = SimpleNamespace(trial_id=f"t{number}")
            decisions[number] = scheduler.on_trial_result(None, trial, reports[0])
    finally:
        torch.set_num_threads(threads)
    rung = scheduler.recorded[1]
    assert sorted(rung) == ["t0", "t1"], "a trial without its cost objectives would not be ranked at the rung"
    assert [list(rung["t0"][1:]), list(rung["t1"][1:])] == [
        [planned(0, 16, 1.5).costs["memory"], 1.5],
        [planned(1, 24, 2.5).costs["memory"], 2.5],
    ]
