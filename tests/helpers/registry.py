"""The registry of model configurations the tests build: every family with every knob of the table set to
a non-default value somewhere (tests/test_models_registry.py checks that), small enough to build in milliseconds.

Used by the registry, cost and export tests and by bench/deploy_export_registry.py; add a configuration to
COMMON (every family) or SPECIFIC (one family) when a knob or a layer path is added.
"""

from __future__ import annotations

from searchspace import FAMILIES, ArchConfig, ConfigError
from searchspace.config import RULES, rule_violations
from searchspace.knobs import ARCH, ArchKnob

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


# The knobs that only size a model: a different value runs the same layers (the export set need not vary them).
SIZE_KNOBS = frozenset(
    {*SIZES, *(k for sizes in FAMILY_SIZES.values() for k in sizes), "layers", "encoder_layers", "decoder_layers"}
    | {"heads", "family"}
)


def layer_paths(name: str) -> set[tuple]:
    """The code paths registry config ``name`` runs: each choice or switch knob's value (defaults too: standard
    attention is a path), each structural number it sets (groups, sharing patterns, radix, sketch sizes), and its
    task head (family and pooling)."""
    config, paths = REGISTRY[name], {("head", REGISTRY[name].family, REGISTRY[name].pooling)}
    for knob in ARCH:
        if knob.name in SIZE_KNOBS:
            continue
        if knob.kind in ("choice", "bool"):
            paths.add((knob.name, getattr(config, knob.name)))
        elif exercises(name, knob.name):
            paths.add((knob.name, "set"))
    return paths


# The configurations tests/test_deploy_export.py exports on every run: together they run every layer path of the
# registry (each attention kind and coupled scale, G-MHA / G-FFN / G-LML / G-IL groups, weight, layer and attention
# sharing per stack, radix, sketch, each family's heads and poolings; test_models_registry.py checks the cover).
# Exporting all 53 to both formats takes ~15 min on 2 cores: bench/deploy_export_registry.py does that.
EXPORT_SET = (
    "encoder/coupled+g_mha+qk2",
    "encoder/coupled_half+kv+sketch",
    "encoder/pool_attention",
    "mcan/per_stack",
    "mcan/pool_mean",
    "mcan/pool_sketch",
    "ort/g_ffn+g_il+no_qkv_bias",
    "ort/radix",
    "retrieval/everything",
    "retrieval/pool_sketch+g_mha+qk",
    "retrieval/pool_attention",
)


def uncovered_paths(names) -> list[tuple]:
    """Layer paths some registry config runs that none of ``names`` runs."""
    every = set().union(*(layer_paths(n) for n in REGISTRY))
    return sorted(every - set().union(*(layer_paths(n) for n in names)), key=str)
