"""Property: every point of the full search spaces (``studies/full/*.yaml``, every knob of the four
papers for each model family) is a valid configuration that builds and gets a cost.

Hypothesis draws the points itself, knob by knob in the space's order, from each active knob's
domain (and shrinks a failing point to a small one), so the property does not lean on any backend's
sampler. Two tests, because a full cost report (a traced forward pass for MAdds and attention maps)
takes 0.1-0.4 s on this machine while building and counting a model takes a few milliseconds:

* 500 points per family (2,000 in all): the point resolves strictly, its configuration validates, the
  model builds (on the meta device: the module tree with every shape, no memory) and has parameters;
* 20 points per family: the static cost the sweeps use (``tuners.constraints.StaticCosts``, the task's
  input sizes applied) gives positive, finite parameters and MAdds, and its parameter count is the
  built model's.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchspace import build_model
from searchspace.domains import Choice, FloatRange, IntRange
from searchspace.space import Knob, SearchSpace
from searchspace.study import load_study
from trainers.cost import count_params
from tuners.constraints import StaticCosts
from tuners.study_check import make_task, task_family

ROOT = Path(__file__).resolve().parents[1]
FULL = sorted(p.stem for p in (ROOT / "studies" / "full").glob("*.yaml"))
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                derandomize=True)  # the same points on every run: CI failures reproduce

pytestmark = pytest.mark.usefixtures("one_thread")


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
        exponent = data.draw(st.floats(math.log(d.low), math.log(d.high)), label=knob.name)
        return min(max(math.exp(exponent), d.low), d.high)
    return data.draw(st.floats(float(d.low), float(d.high)), label=knob.name)


def draw_params(data: st.DataObject, space: SearchSpace) -> dict[str, Any]:
    """The params of one point: each knob drawn only where the values drawn before make it active."""
    return space.active_params(space.effective(lambda knob: draw_value(data, knob)))


def test_the_full_spaces_cover_every_family():
    assert FULL == ["encoder", "mcan", "ort", "retrieval"]
    for family in FULL:
        assert len(full_study(family).space.searched) >= 10, family


@pytest.mark.parametrize("family", FULL)
@settings(max_examples=500, **SETTINGS)
@given(data=st.data())
def test_every_point_resolves_and_builds(family, data):
    space = full_study(family).space
    params = draw_params(data, space)
    point = space.resolve(params)  # strict: an invalid configuration raises, naming the knob and rule
    assert point.params == params
    config = static_costs(family).adapt(point.config)
    with torch.device("meta"):
        model = build_model(config)
    params_count, _ = count_params(model)
    assert params_count > 0


@pytest.mark.parametrize("family", FULL)
@settings(max_examples=20, **SETTINGS)
@given(data=st.data())
def test_every_point_gets_a_static_cost(family, data):
    space, static = full_study(family).space, static_costs(family)
    config = static.adapt(space.resolve(draw_params(data, space)).config)
    verdict = static.evaluate(config)
    assert all(math.isfinite(v) and v > 0 for v in (verdict.costs["params"], verdict.costs["madds"])), verdict.costs
    with torch.device("meta"):
        built = build_model(config)
    assert verdict.costs["params"] == sum(p.numel() for p in built.parameters())
