"""Property: every point of the full search spaces (``studies/full/*.yaml``, every knob of the four
papers for each model family) is a valid configuration that builds a real model and gets a cost.

Hypothesis draws the points itself, knob by knob in the space's order, from each active knob's
domain (and shrinks a failing point to a small one), so the property does not lean on any backend's
sampler. Two tests, because building a model takes a few milliseconds on this machine while a full
static cost (a traced forward pass for MAdds and attention maps, then a forward + backward for peak
memory) takes 0.2-0.8 s, too slow for thousands of points in a unit test:

* 500 points per family (2,000 in all): the point resolves strictly to exactly the drawn params, its
  configuration (at the task's input sizes) builds a real model on the CPU (weights allocated and
  initialised), whose parameter count is positive and split without remainder into the cost report's
  sections;
* 10 points per family (40 in all; hypothesis tries the simplest point first, then random ones): the
  static cost the sweeps use (``tuners.planning.costs.StaticCosts``, which measures memory because the
  full studies minimise it) gives positive, finite parameters, MAdds and peak memory, its breakdowns
  add up, and its parameter count (taken on the meta device) is the real CPU model's.

Points are the same on every run (``derandomize``), so a failure in CI reproduces locally. The cost
test does not shrink a failing point (each try costs a full cost evaluation, and shrinking one took
over 5 minutes); it reports the drawn point as is, and the build test shrinks most failures anyway.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from searchspace import build_model
from searchspace.domains import Choice, FloatRange, IntRange
from searchspace.space import Knob, SearchSpace
from searchspace.study import load_study
from trainers.cost import SECTION_NAMES, count_params
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts

ROOT = Path(__file__).resolve().parents[1]
FULL = sorted(p.stem for p in (ROOT / "studies" / "full").glob("*.yaml"))
N_BUILD, N_COST = 500, 10  # points per family
SETTINGS = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

pytestmark = pytest.mark.usefixtures("one_thread")  # torch.set_num_threads(1) for the module


@cache
def full_study(family: str):
    return load_study(ROOT / "studies" / "full" / f"{family}.yaml", task_family=task_family)


@cache
def static_costs(family: str) -> StaticCosts:
    study = full_study(family)
    return StaticCosts(study, make_task(study))


def draw_value(data: st.DataObject, knob: Knob) -> Any:
    d = knob.domain
    if isinstance(d, Choice):
        return data.draw(st.sampled_from(list(d.choices)), label=knob.name)
    if isinstance(d, IntRange):
        return data.draw(st.sampled_from(list(d.values())), label=knob.name)
    assert isinstance(d, FloatRange), d
    if d.log:
        exponent = data.draw(st.floats(math.log(d.low), math.log(d.high)), label=f"log {knob.name}")
        return min(max(math.exp(exponent), d.low), d.high)
    return data.draw(st.floats(float(d.low), float(d.high)), label=knob.name)


def draw_params(data: st.DataObject, space: SearchSpace) -> dict[str, Any]:
    """The params of one point: each knob drawn only where the values drawn before make it active."""
    return space.active_params(space.effective(lambda knob: draw_value(data, knob)))


def typed(params: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """Params with each value's type (Python says True == 1 and 2 == 2.0)."""
    return {k: (type(v).__name__, v) for k, v in params.items()}


def test_the_full_spaces_cover_every_family():
    assert FULL == ["encoder", "mcan", "ort", "retrieval"]
    for family in FULL:
        assert len(full_study(family).space.searched) >= 10, family
        assert static_costs(family).memory, family  # the full studies minimise memory: it is measured


@pytest.mark.parametrize("family", FULL)
@settings(max_examples=N_BUILD, **SETTINGS)
@given(data=st.data())
def test_every_point_resolves_and_builds(family, data):
    space = full_study(family).space
    params = draw_params(data, space)
    point = space.resolve(params)  # strict: an invalid configuration raises, naming the knob and rule
    assert typed(point.params) == typed(params)
    config = static_costs(family).adapt(point.config)
    model = build_model(config)  # a real model: weights allocated and initialised on the CPU
    total, sections = count_params(model)
    assert total == sum(p.numel() for p in model.parameters()) > 0
    assert sum(sections[s] for s in SECTION_NAMES) == total


@pytest.mark.parametrize("family", FULL)
@settings(max_examples=N_COST, phases=(Phase.explicit, Phase.generate), **SETTINGS)  # no shrinking: see below
@given(data=st.data())
def test_every_point_gets_a_static_cost(family, data):
    space, static = full_study(family).space, static_costs(family)
    config = static.adapt(space.resolve(draw_params(data, space)).config)
    verdict = static.evaluate(config)
    costs, report = verdict.costs, verdict.report
    for metric in ("params", "madds", "memory"):
        assert math.isfinite(costs[metric]) and costs[metric] > 0, (metric, costs)
    assert sum(report.params_breakdown[s] for s in SECTION_NAMES) == costs["params"]
    assert sum(report.madds_breakdown[s] for s in SECTION_NAMES) == costs["madds"]
    built = build_model(config)  # on the CPU, unlike the cost model's meta-device one
    assert costs["params"] == sum(p.numel() for p in built.parameters())
