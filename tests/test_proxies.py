"""Training-free scores (trainers/proxies.py): deterministic with the seed, different across seeds and
architectures, each equal to its definition recomputed here by hand on the same model and batch."""

from __future__ import annotations

import math

import pytest
import torch

from searchspace import ArchConfig, build_model
from trainers.proxies import PROXIES, proxy_scores
from trainers.tasks import adapt_config, resolve_task
from trainers.tasks.base import batches


@pytest.fixture(scope="module")
def digits():
    task = resolve_task("digits")
    return task, task.load(seed=0)


def config(task, **knobs) -> ArchConfig:
    return adapt_config(
        ArchConfig.from_dict({"family": "encoder", "d_model": 16, "heads": 4, "layers": 1, **knobs}), task
    )


def test_scores_are_finite_and_the_same_seed_gives_the_same_scores(digits):
    task, data = digits
    cfg = config(task, g_ffn=True, groups=2, pooling="sketch")
    first = proxy_scores(cfg, task, data, seed=3)
    assert set(first) == set(PROXIES) and all(v is not None and math.isfinite(v) for v in first.values())
    assert proxy_scores(cfg, task, data, seed=3) == first
    other = proxy_scores(cfg, task, data, seed=4)
    assert all(other[name] != first[name] for name in PROXIES)


def test_the_callers_random_state_is_left_alone(digits):
    task, data = digits
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    proxy_scores(config(task), task, data, seed=0)
    assert torch.equal(torch.rand(3), expected)


def test_grad_norm_and_snip_match_their_definitions(digits):
    task, data = digits
    cfg = config(task, layers=2)
    torch.manual_seed(5)
    model = build_model(cfg).train()
    batch = next(iter(batches(data["train"], 64, torch.Generator().manual_seed(5))))
    task.loss(model, batch).backward()
    params = [p for p in model.parameters() if p.grad is not None]
    scores = proxy_scores(cfg, task, data, seed=5)
    assert scores["grad_norm"] == pytest.approx(sum(p.grad.norm().item() for p in params), rel=1e-5)
    assert scores["snip"] == pytest.approx(sum((p * p.grad).abs().sum().item() for p in params), rel=1e-5)


def test_synflow_matches_its_definition(digits):
    """Every weight made positive, an all-ones input, R = the sum of the outputs: sum |theta dR/dtheta|."""
    task, data = digits
    cfg = config(task, attention="coupled")
    torch.manual_seed(2)
    model = build_model(cfg).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.abs_()
    model(torch.ones(1, 16, 4, dtype=torch.float64)).sum().backward()
    expected = sum((p.detach() * p.grad).abs().sum().item() for p in model.parameters() if p.grad is not None)
    assert proxy_scores(cfg, task, data, seed=2)["synflow"] == pytest.approx(expected, rel=1e-9)


def test_naswot_counts_agreeing_units(digits):
    """log|det K| with K[i, j] = units where examples i and j agree; identical codes make K singular."""
    from trainers.proxies import _naswot

    codes = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], dtype=torch.float64)
    k = torch.tensor([[3.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    assert _naswot([codes]) == pytest.approx(math.log(torch.linalg.det(k).item()))
    assert _naswot([torch.ones(2, 3, dtype=torch.float64)]) == -math.inf
    assert math.isnan(_naswot([]))


def test_wider_models_score_higher_on_synflow(digits):
    """Synflow grows with the number of paths: a wider, deeper model of the same family has more."""
    task, data = digits
    small = proxy_scores(config(task), task, data, seed=0)
    large = proxy_scores(config(task, d_model=32, layers=2), task, data, seed=0)
    assert large["synflow"] > small["synflow"]
