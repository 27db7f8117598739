"""Every registered variant (family x knob) builds, runs forward and backward without NaN, gives
every parameter a gradient, trains one step, and matches the cost model's parameter count."""

from __future__ import annotations

import pytest
import torch

from searchspace import FAMILIES, ArchConfig, ConfigError, build_model
from searchspace.config import RULES, rule_violations
from searchspace.knobs import ARCH, ArchKnob
from searchspace.layers import AttentionPool
from trainers import cost

pytestmark = pytest.mark.usefixtures("one_thread")

SIZES = dict(d_model=32, heads=4, d_ff=64, layers=2, dropout=0.0)
FAMILY_SIZES = {
    "encoder": dict(grid=(4, 4), patch_features=3, num_classes=5),
    "mcan": dict(vocab_size=50, region_features=16, image_regions=6, question_tokens=5, num_answers=7),
    "ort": dict(vocab_size=50, region_features=16, image_regions=6, caption_tokens=5),
    "retrieval": dict(vocab_size=50, region_features=16, image_regions=6, caption_tokens=5),
}

# Knob settings every family takes (combined where independent, to keep the registry fast).
COMMON: dict[str, dict] = {
    "base": {},
    "g_mha": dict(groups=2, g_mha=True),
    "g_mha+g_ffn+ws": dict(groups=2, g_mha=True, g_ffn=True, weight_sharing=True),
    "qk_expansion2+g_lml": dict(groups=4, g_mha=True, qk_expansion=2, g_lml=True),
    "g_ffn+g_il+no_qkv_bias": dict(groups=2, g_ffn=True, g_il=True, qkv_bias=False),
    "successive+heads8": dict(layers=4, layer_sharing="(0,0,1,1)", heads=8),
    "symmetric": dict(layers=4, layer_sharing="(0,1,1,0)"),
    "albert+attn_qk": dict(layers=3, layer_sharing="(0x3)", attention_sharing="qk"),
    "attn_kv+g_mha+ws": dict(attention_sharing="kv", groups=2, g_mha=True, g_ffn=True, weight_sharing=True),
    "everything": dict(
        groups=2,
        g_mha=True,
        g_ffn=True,
        weight_sharing=True,
        qk_expansion=2,
        g_lml=True,
        g_il=True,
        attention_sharing="qk",
        layers=3,
        layer_sharing="(0,0,1)",
    ),
}
PER_STACK = {
    "per_stack": dict(
        encoder_layers=4,
        decoder_layers=2,
        encoder_layer_sharing="(0,0,1,1)",
        decoder_layer_sharing="(0x2)",
        encoder_attention_sharing="kv",
        decoder_attention_sharing="qk",
    ),
    "per_stack_override": dict(
        layers=4,
        layer_sharing="(0,1,1,0)",
        decoder_layer_sharing="(0x4)",
        attention_sharing="qk",
        encoder_attention_sharing="kv",
    ),
}
SKETCH = dict(pooling="sketch", sketch_n=3, sketch_k=4, sketch_d=2)
SPECIFIC: dict[str, dict[str, dict]] = {
    "encoder": {
        "coupled+g_mha+qk2": dict(attention="coupled", groups=2, g_mha=True, qk_expansion=2),
        "coupled_half+kv+sketch": dict(attention="coupled", coupled_scale="half", attention_sharing="kv", **SKETCH),
        "pool_attention": dict(pooling="attention"),
    },
    "mcan": {**PER_STACK, "pool_mean": dict(pooling="mean"), "pool_sketch": SKETCH},
    "ort": {
        **PER_STACK,
        "radix": dict(radix_base=8),
        "radix+kv+albert": dict(radix_base=4, attention_sharing="kv", layer_sharing="(0x2)"),
    },
    "retrieval": {
        "pool_attention": dict(pooling="attention"),
        "pool_sketch+g_mha+qk": dict(groups=2, g_mha=True, attention_sharing="qk", **SKETCH),
    },
}

KNOBS_OF: dict[str, dict] = {}  # registry name -> the knobs it sets
REGISTRY: dict[str, ArchConfig] = {}
for _family in FAMILIES:
    for _name, _knobs in {**COMMON, **SPECIFIC[_family]}.items():
        KNOBS_OF[f"{_family}/{_name}"] = {"family": _family, **SIZES, **FAMILY_SIZES[_family], **_knobs}
        REGISTRY[f"{_family}/{_name}"] = ArchConfig(**KNOBS_OF[f"{_family}/{_name}"])


def exercises(name: str, knob: str) -> bool:
    """Whether registry config ``name`` sets ``knob`` to other than what it would be left unset."""
    knobs = KNOBS_OF[name]
    if knob not in knobs:
        return False
    try:
        unset = ArchConfig(**{k: v for k, v in knobs.items() if k != knob})
    except ConfigError:
        return True  # the rest of the config needs this value: not the default
    return getattr(unset, knob) != getattr(REGISTRY[name], knob)


def barred_by_family(knob: ArchKnob, family: str) -> bool:
    """Whether a rule that reads `family` refuses every non-default choice of ``knob`` (coupled attention
    needs the encoder's grid): then no config of ``family`` can exercise it."""
    if knob.kind != "choice":
        return False
    others = [c for c in knob.choices if c != knob.default]
    return all(
        any("family" in RULES[r] for r, _, _ in rule_violations({"family": family, knob.name: c}) or []) for c in others
    )


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
        f"COMMON or SPECIFIC in tests/test_models_registry.py: {', '.join(missing)}"
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
