"""The driver's static costs: a point's costs come from the cost model, whether its architecture was
costed before (points that differ only in training settings share one) or not."""

from __future__ import annotations

import pytest

from searchspace.study import study_from_dict
from trainers.cost import cost
from tuners.planning import costs
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts

STUDY = {
    "name": "costs",
    "task": "digits",
    "objectives": ["accuracy", "params"],
    "constraints": {"params": {"max": 5000}},
    "budget": {"trials": 4, "epochs": 1},
    "space": {"d_model": {"choice": [16, 32]}, "heads": 2, "layers": 1, "lr": {"float": [1e-3, 4e-3]}},
}


@pytest.mark.parametrize("kept", [1, costs.REPORTS_KEPT])
def test_costs_equal_the_cost_model_for_repeated_and_new_architectures(monkeypatch, kept):
    monkeypatch.setattr(costs, "REPORTS_KEPT", kept)  # 1: every other point evicts the last report
    study = study_from_dict(STUDY, task_family=task_family)
    static = StaticCosts(study, make_task(study))
    points = [
        study.space.resolve({"d_model": d, "lr": lr})
        for d, lr in ((16, 1e-3), (16, 3e-3), (32, 2e-3), (16, 4e-3), (32, 1e-3))
    ]
    verdicts = [static.evaluate(p.config) for p in points]
    for point, verdict in zip(points, verdicts):
        report = cost(static.adapt(point.config), memory=False)
        assert verdict.costs == {"params": report.params, "madds": report.madds}
        assert verdict.feasible == (report.params <= 5000)
    assert verdicts[0].costs == verdicts[1].costs != verdicts[2].costs
    assert static.summary()["checked"] == 5  # every point is checked and tallied, costed before or not
    assert static.summary()["rejected"] == sum(not v.feasible for v in verdicts)


def test_latency_is_measured_once_per_architecture(monkeypatch):
    """Twin points (same architecture, another lr) get the same measured latency, never two noisy timings."""
    calls = []
    measure = costs.latency_costs

    def counted(config, settings):
        calls.append(config.d_model)
        return measure(config, settings)

    monkeypatch.setattr(costs, "latency_costs", counted)
    study = study_from_dict(
        {**STUDY, "objectives": ["accuracy", "latency"], "constraints": {}}, task_family=task_family
    )
    static = StaticCosts(study, make_task(study))
    points = [study.space.resolve({"d_model": d, "lr": lr}) for d, lr in ((16, 1e-3), (16, 3e-3), (32, 2e-3))]
    verdicts = [static.evaluate(p.config) for p in points]
    assert calls == [16, 32]
    assert verdicts[0].costs == verdicts[1].costs
    assert verdicts[0].costs["latency"] > 0 and "latency_device" in verdicts[0].costs
