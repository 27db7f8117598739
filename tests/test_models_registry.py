"""Every registered variant (family x knob) builds, runs forward and backward without NaN, gives
every parameter a gradient, trains one step, and matches the cost model's parameter count."""

from __future__ import annotations

import pytest
import torch
from helpers.registry import EXPORT_SET, REGISTRY, barred_by_family, exercises, uncovered_paths

from searchspace import FAMILIES, build_model
from searchspace.knobs import ARCH
from searchspace.layers import AttentionPool
from trainers import cost

pytestmark = pytest.mark.usefixtures("one_thread")


def test_registry_exercises_every_knob_of_the_table_in_every_family():
    assert {c.family for c in REGISTRY.values()} == set(FAMILIES)
    missing = []
    for knob in ARCH:
        if knob.name == "family":
            continue
        for family in knob.families:
            mine = [n for n, c in REGISTRY.items() if c.family == family]
            if not barred_by_family(knob, family) and not any(exercises(n, knob.name) for n in mine):
                missing.append(f"{knob.name} ({family})")
    assert not missing, (
        "no registry configuration sets these knobs to a non-default value; add one to "
        f"COMMON or SPECIFIC in tests/helpers/registry.py: {', '.join(missing)}"
    )


def _with_padding(model, inputs):
    """Pad the last token of the first sample, so the masking paths run too."""
    inputs = list(inputs)
    c = model.config
    index = {"mcan": 0, "ort": 2, "retrieval": 1}.get(c.family)
    if index is not None:
        tokens = inputs[index].clone()
        tokens[0, -1] = 0
        inputs[index] = tokens
    return tuple(inputs)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_variant_trains(name):
    cfg = REGISTRY[name]
    torch.manual_seed(0)
    model = build_model(cfg).train()
    inputs = _with_padding(model, model.example_inputs(batch=3))
    out = model(*inputs)
    assert torch.isfinite(out).all(), "NaN/inf in the output"
    expected_batch = {"encoder": (3, 5), "mcan": (3, 7), "retrieval": (3, 3)}.get(cfg.family)
    if expected_batch:
        assert out.shape == expected_batch
    else:
        assert out.shape == (3, model.sequence_length, model.num_tokens)
    weight = torch.randn_like(out)  # a random linear loss: no symmetry can zero a gradient
    loss = (out * weight).sum()
    loss.backward()
    # Softmax is shift-invariant, so the bias of an attention pool's score layer (MCAN's AttFlat keeps
    # one) has a gradient of exactly zero in exact arithmetic; it only has to be finite and tiny.
    shift_invariant = {id(m.score[-1].bias) for m in model.modules() if isinstance(m, AttentionPool)}
    for pname, p in model.named_parameters():
        if id(p) in shift_invariant:
            assert p.grad is not None and p.grad.abs().max() < 1e-4, pname
            continue
        assert p.grad is not None, f"{pname} got no gradient"
        assert torch.isfinite(p.grad).all(), f"{pname} has a non-finite gradient"
        assert p.grad.abs().sum() > 0, f"{pname} has an all-zero gradient"
    torch.optim.AdamW(model.parameters(), lr=1e-3).step()
    with torch.no_grad():
        loss_after = (model(*inputs) * weight).sum()
    assert torch.isfinite(loss_after)
    assert loss_after.item() != loss.item()

    unique = {id(p): p.numel() for p in model.parameters()}
    report = cost(cfg, memory=False)
    assert report.params == sum(unique.values())
    sections = report.params_breakdown
    assert sections["embeddings"] + sections["encoder"] + sections["decoder"] + sections["head"] == report.params
    assert 0 < sections["attention"] < report.params
    assert report.madds == sum(report.madds_breakdown[s] for s in ("embeddings", "encoder", "decoder", "head"))
    if cfg.family in ("encoder", "retrieval"):
        assert sections["decoder"] == 0


def test_the_export_set_runs_every_layer_path_of_the_registry():
    """tests/test_deploy_export.py exports EXPORT_SET only; a registry config with a new layer path must join it."""
    assert set(EXPORT_SET) <= set(REGISTRY)
    assert not uncovered_paths(EXPORT_SET), (
        "no configuration of EXPORT_SET in tests/helpers/registry.py runs these layer paths; add one that does: "
        f"{uncovered_paths(EXPORT_SET)}"
    )
    assert {REGISTRY[n].family for n in EXPORT_SET} == set(FAMILIES)
