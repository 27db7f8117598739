"""The fast static cost (``trainers.cost_formula``: per-layer formulas, no trace) gives exactly the traced
count's figures (fvcore over a jit trace, plus forward hooks for the attention maps: the reference) for
every registry configuration, every paper configuration and random points of the full and quickstart
study spaces; and the sweep driver's static costs never trace."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

import pytest
from helpers.registry import REGISTRY

from searchspace import ArchConfig
from searchspace.files import find_config_files, load_config_file
from searchspace.study import load_study
from trainers import cost
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts

cost_module = importlib.import_module("trainers.cost")  # the package exports the function under the same name
ROOT = Path(__file__).resolve().parents[1]
PAPER_FILES = find_config_files([ROOT / "studies" / "papers"])
STUDIES = [*sorted(p.stem for p in (ROOT / "studies" / "full").glob("*.yaml")), "quickstart"]
POINTS_PER_STUDY = 4

pytestmark = pytest.mark.usefixtures("one_thread")


@cache
def static_costs(name: str) -> StaticCosts:
    path = ROOT / "studies" / ("quickstart.yaml" if name == "quickstart" else f"full/{name}.yaml")
    study = load_study(path, task_family=task_family)
    return StaticCosts(study, make_task(study))


def study_points() -> list[tuple[str, int]]:
    return [(name, i) for name in STUDIES for i in range(POINTS_PER_STUDY)]


def assert_same_as_trace(config: ArchConfig) -> None:
    fast, traced = cost(config, memory=False), cost(config, memory=False, counter="trace")
    assert fast.to_dict() == traced.to_dict()  # params, madds, both breakdowns and attention-map bytes
    assert traced.madds > 0 and traced.attention_map_bytes > 0  # a count of nothing would also agree


@pytest.mark.parametrize("name", list(REGISTRY))
def test_registry_configuration(name):
    assert_same_as_trace(REGISTRY[name])


@pytest.mark.parametrize("path", PAPER_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_paper_configuration(path):
    assert_same_as_trace(load_config_file(path).config)


@pytest.mark.parametrize(("study", "index"), study_points(), ids=lambda v: str(v))
def test_random_study_point(study, index):
    """Random points at the task's input sizes, as the sweep driver costs them."""
    static = static_costs(study)
    point = static.study.space.sample_points(POINTS_PER_STUDY, seed=0)[index]
    assert_same_as_trace(static.adapt(point.config))


def test_driver_costs_points_without_tracing(monkeypatch):
    """``StaticCosts`` (what every sweep costs points through) takes the fast path: with tracing made to
    fail, it still costs points, and to the traced figures."""
    static = static_costs("quickstart")
    points = static.study.space.sample_points(4, seed=1)
    traced = [cost(static.adapt(p.config), memory=False, counter="trace") for p in points]

    def no_trace(model):
        raise AssertionError("the driver traced a model")

    monkeypatch.setattr(cost_module, "_traced_counts", no_trace)
    for point, reference in zip(points, traced):
        verdict = static.evaluate(point.config)
        assert verdict.costs == {"params": reference.params, "madds": reference.madds}
        assert verdict.report.madds_breakdown == reference.madds_breakdown


def test_unknown_counter_is_refused():
    with pytest.raises(ValueError, match="`counter` must be one of formula, trace, got 'fvcore'"):
        cost(REGISTRY["encoder/base"], memory=False, counter="fvcore")
