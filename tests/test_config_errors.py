"""Every rule of ArchConfig reports the knob, the value and the rule; configs round-trip losslessly."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from searchspace import FAMILIES, ArchConfig, ConfigError


def problems_of(data: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        ArchConfig.from_dict(data)
    err = info.value
    assert err.problems, "a ConfigError must carry at least one problem"
    for knob, message in err.problems:  # str(err) lists every problem as `knob: message`
        assert f"{knob}: {message}" in str(err)
    return err.problems


def only_problem(data: dict) -> tuple[str, str]:
    problems = problems_of(data)
    assert len(problems) == 1, problems
    return problems[0]


# (id, config, knob, fragments the message must contain)
SINGLE_ERRORS = [
    ("unknown-key", {"d_modle": 512}, "d_modle", ["unknown knob", "did you mean `d_model`"]),
    ("unknown-key-no-suggestion", {"zzzz": 1}, "zzzz", ["unknown knob"]),
    ("d_model-heads", {"d_model": 100, "heads": 8}, "d_model", ["100", "divisible by `heads` (8)"]),
    (
        "heads-groups",
        {"d_model": 96, "heads": 6, "groups": 4, "g_mha": True},
        "heads",
        ["6", "divisible by `groups` (4)", "heads/groups"],
    ),
    (
        "d_ff-groups",
        {"d_model": 64, "d_ff": 100, "groups": 8, "g_ffn": True},
        "d_ff",
        ["100", "divisible by `groups` (8)", "G-FFN"],
    ),
    (
        "d_model-groups",
        {"d_model": 36, "heads": 4, "groups": 8, "g_ffn": True, "d_ff": 64},
        "d_model",
        ["36", "divisible by `groups` (8)"],
    ),
    ("groups-without-grouping", {"groups": 2}, "groups", ["no effect without `g_mha` or `g_ffn`"]),
    ("g_mha-groups-1", {"g_mha": True}, "g_mha", ["needs `groups` >= 2", "groups=1"]),
    ("g_ffn-groups-1", {"g_ffn": True}, "g_ffn", ["needs `groups` >= 2"]),
    ("weight_sharing-alone", {"weight_sharing": True}, "weight_sharing", ["needs `g_mha` or `g_ffn`"]),
    ("qk_expansion-alone", {"qk_expansion": 2}, "qk_expansion", ["2", "needs `g_mha: true`"]),
    (
        "qk_expansion-with-g_ffn-only",
        {"qk_expansion": 3, "groups": 2, "g_ffn": True},
        "qk_expansion",
        ["needs `g_mha: true`"],
    ),
    ("g_lml-alone", {"g_lml": True}, "g_lml", ["merge layer", "needs `g_mha: true`"]),
    ("g_il-alone", {"g_il": True, "groups": 2, "g_mha": True}, "g_il", ["needs `g_ffn: true`"]),
    (
        "kv-qk_expansion",
        {"attention_sharing": "kv", "qk_expansion": 2, "groups": 2, "g_mha": True},
        "attention_sharing",
        ["`kv`", "qk_expansion 1", "got 2"],
    ),
    (
        "kv-override-qk_expansion",
        {"family": "ort", "decoder_attention_sharing": "kv", "qk_expansion": 2, "groups": 2, "g_mha": True},
        "decoder_attention_sharing",
        ["qk_expansion 1"],
    ),
    (
        "pattern-length-encoder",
        {"layers": 3, "layer_sharing": "(0,0)"},
        "layer_sharing",
        ["2 entries", "3 layers", "`layers`"],
    ),
    (
        "pattern-length-override",
        {"family": "ort", "layers": 6, "encoder_layer_sharing": "(0x4)"},
        "encoder_layer_sharing",
        ["(0x4)", "4 entries", "encoder has 6 layers", "`encoder_layers`"],
    ),
    (
        "pattern-length-decoder-depth",
        {"family": "mcan", "encoder_layers": 2, "decoder_layers": 4, "layer_sharing": "(0,1)"},
        "layer_sharing",
        ["decoder has 4 layers", "`decoder_layers`"],
    ),
    ("malformed-pattern", {"layer_sharing": "(0x,1)"}, "layer_sharing", ["'(0x,1)'", "cannot read term '0x'"]),
    ("zero-repeat-pattern", {"layer_sharing": "(0x0,1)"}, "layer_sharing", ["repeats a layer 0 times"]),
    ("gap-pattern", {"layer_sharing": "(0,2)"}, "layer_sharing", ["'(0,2)'", "without gaps", "[1]"]),
    (
        "coupled-on-mcan",
        {"family": "mcan", "attention": "coupled"},
        "attention",
        ["`coupled`", "2-D token grid", "`encoder`"],
    ),
    ("sketch_n-without-sketch", {"sketch_n": 4}, "sketch_n", ["4", "`pooling: sketch`", "'mean'"]),
    ("radix-on-encoder", {"radix_base": 8}, "radix_base", ["does not apply to family `encoder`", "ort"]),
    ("grid-on-ort", {"family": "ort", "grid": [4, 4]}, "grid", ["does not apply to family `ort`", "encoder"]),
    ("pooling-on-ort", {"family": "ort", "pooling": "mean"}, "pooling", ["does not apply to family `ort`"]),
    ("radix-base-1", {"family": "ort", "radix_base": 1}, "radix_base", ["must be >= 2", "1"]),
    ("grid-shape", {"grid": [4]}, "grid", ["two positive integers", "[4]"]),
    ("d_model-string", {"d_model": "512"}, "d_model", ["must be an integer", "'512'"]),
    ("heads-bool", {"heads": True}, "heads", ["must be an integer", "True"]),
    ("sketch_d-string", {"pooling": "sketch", "sketch_d": "8"}, "sketch_d", ["must be an integer", "'8'"]),
    ("grid-float", {"grid": [4, 4.0]}, "grid", ["two positive integers"]),
    ("layers-zero", {"layers": 0}, "layers", ["must be >= 1", "0"]),
    ("d_model-beyond-limit", {"d_model": 1_000_000_000}, "d_model", ["must be at most 65,536", "1,000,000,000"]),
    ("vocab-beyond-limit", {"family": "ort", "vocab_size": 10**30}, "vocab_size", ["at most 10,000,000"]),
    ("grid-beyond-limit", {"grid": [4, 100_000]}, "grid", ["at most 1,024", "[4, 100000]"]),
    (
        "pattern-beyond-limit",
        {"layer_sharing": "(0x1000000000)"},
        "layer_sharing",
        ["'(0x1000000000)'", "beyond 256 layers"],
    ),
    ("pattern-index-beyond-limit", {"layer_sharing": "(0,99999999999)"}, "layer_sharing", ["beyond 256 layers"]),
    ("g_mha-string", {"g_mha": "yes"}, "g_mha", ["must be true or false", "'yes'"]),
    ("dropout-range", {"dropout": 1.5}, "dropout", ["number in [0, 1)", "1.5"]),
    (
        "unknown-family",
        {"family": "mcna"},
        "family",
        ["must be one of encoder, mcan, ort, retrieval", "'mcna'", "did you mean `mcan`"],
    ),
    ("unknown-attention", {"attention": "coupld"}, "attention", ["did you mean `coupled`"]),
    ("unknown-sharing", {"attention_sharing": "vk"}, "attention_sharing", ["none, qk, kv", "'vk'"]),
    ("unknown-pooling", {"pooling": "sketc"}, "pooling", ["did you mean `sketch`"]),
]


@pytest.mark.parametrize("data, knob, fragments", [c[1:] for c in SINGLE_ERRORS], ids=[c[0] for c in SINGLE_ERRORS])
def test_each_rule_names_knob_and_reason(data, knob, fragments):
    got_knob, message = only_problem(data)
    assert got_knob == knob
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_config_error_is_a_value_error():
    with pytest.raises(ValueError):
        ArchConfig(d_model=100, heads=8)
    with pytest.raises(ConfigError, match="mapping of knobs"):
        ArchConfig.from_dict(["family", "mcan"])


def test_pattern_length_reported_for_both_stacks():
    problems = problems_of({"family": "ort", "layers": 6, "layer_sharing": "(0,0,1,1)"})
    assert [k for k, _ in problems] == ["layer_sharing", "layer_sharing"]
    assert "encoder has 6 layers" in problems[0][1] and "decoder has 6 layers" in problems[1][1]
    # an override fixes one stack; the other still reports through the shared knob
    problems = problems_of(
        {"family": "ort", "layers": 6, "layer_sharing": "(0,0,1,1)", "encoder_layer_sharing": "(0x3,1x3)"}
    )
    assert problems == [("layer_sharing", problems[0][1])] and "decoder" in problems[0][1]


def test_several_errors_reported_at_once():
    problems = problems_of(
        {
            "family": "mcan",
            "d_model": 100,
            "heads": 8,
            "weight_sharing": True,
            "g_il": True,
            "qk_expansion": 2,
            "attention": "coupled",
        }
    )
    assert {k for k, _ in problems} == {"d_model", "weight_sharing", "g_il", "qk_expansion", "attention"}
    types = problems_of({"d_model": "512", "g_mha": "yes", "dropout": 1.5, "family": "encodr"})
    assert [k for k, _ in types] == ["d_model", "g_mha", "dropout", "family"]
    unknown = problems_of({"d_modle": 1, "hedas": 2, "family": "mcan"})
    assert [k for k, _ in unknown] == ["d_modle", "hedas"]
    assert "did you mean `heads`" in unknown[1][1]


# ---- round trips -----------------------------------------------------------------------------------
ROUND_TRIP = [
    ArchConfig(),
    ArchConfig(family="encoder", attention="coupled", grid=(4, 6), pooling="sketch"),
    ArchConfig(
        family="encoder", pooling="sketch", sketch_n=3, sketch_k=5, sketch_d=2, layers=6, layer_sharing="(0,1,2,2,1,0)"
    ),
    ArchConfig(
        family="mcan",
        d_model=512,
        heads=8,
        d_ff=2048,
        layers=6,
        groups=4,
        g_mha=True,
        g_ffn=True,
        weight_sharing=True,
        qk_expansion=3,
        g_lml=True,
        g_il=True,
    ),
    ArchConfig(
        family="mcan",
        encoder_layers=4,
        decoder_layers=2,
        encoder_layer_sharing=[0, 0, 1, 1],
        decoder_layer_sharing="(0x2)",
        encoder_attention_sharing="kv",
        decoder_attention_sharing="qk",
        pooling="mean",
        dropout=0.0,
    ),
    ArchConfig(family="ort", layers=6, layer_sharing="(0x3,1x3)", attention_sharing="kv", radix_base=768),
    ArchConfig(
        family="retrieval", pooling="attention", caption_tokens=7, vocab_size=99, layers=6, layer_sharing="(0x6)"
    ),
]


@pytest.mark.parametrize("cfg", ROUND_TRIP, ids=lambda c: c.family)
def test_dict_and_yaml_round_trip(cfg):
    data = cfg.to_dict()
    assert ArchConfig.from_dict(data) == cfg
    text = yaml.safe_dump(data, sort_keys=False)
    loaded = yaml.safe_load(text)
    assert loaded == data
    assert ArchConfig.from_dict(loaded) == cfg
    assert ArchConfig.from_dict(loaded).to_dict() == data
    assert all(v is not None for v in data.values())


def test_round_trip_normalises_patterns_and_grid():
    cfg = ArchConfig(family="ort", layers=6, layer_sharing="0,0,0,1,1,1")
    assert cfg.layer_sharing == (0, 0, 0, 1, 1, 1)
    assert cfg.to_dict()["layer_sharing"] == "(0x3,1x3)"
    assert ArchConfig(family="encoder", grid=[3, 5]).grid == (3, 5)
    assert ArchConfig(family="encoder", grid=[3, 5]).to_dict()["grid"] == [3, 5]
    assert ArchConfig(family="ort", layers=2, layer_sharing=(0, 0)) == ArchConfig(
        family="ort", layers=2, layer_sharing="(0x2)"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    family=st.sampled_from(FAMILIES),
    heads=st.sampled_from([1, 2, 4, 8]),
    width=st.sampled_from([1, 2, 3]),
    layers=st.integers(1, 6),
    groups=st.sampled_from([1, 2, 4]),
    g_mha=st.booleans(),
    g_ffn=st.booleans(),
    ws=st.booleans(),
    n=st.integers(1, 3),
    sharing=st.sampled_from(["none", "qk", "kv"]),
    pattern=st.sampled_from(["none", "albert", "successive", "symmetric"]),
    dropout=st.sampled_from([0.0, 0.25]),
)
def test_any_valid_config_round_trips(
    family, heads, width, layers, groups, g_mha, g_ffn, ws, n, sharing, pattern, dropout
):
    from searchspace import generate_pattern

    data = dict(
        family=family,
        d_model=heads * width * 8,
        heads=heads,
        layers=layers,
        groups=groups,
        g_mha=g_mha,
        g_ffn=g_ffn,
        weight_sharing=ws,
        qk_expansion=n,
        attention_sharing=sharing,
        layer_sharing=list(generate_pattern(pattern, layers)),
        dropout=dropout,
    )
    try:
        cfg = ArchConfig.from_dict(data)
    except ConfigError as err:  # invalid combinations must say why, never crash differently
        assert err.problems
        assume(False)
    assert ArchConfig.from_dict(yaml.safe_load(yaml.safe_dump(cfg.to_dict()))) == cfg


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_pattern_notation_round_trips(raw):
    from searchspace import format_pattern, parse_pattern

    order = {v: i for i, v in enumerate(dict.fromkeys(raw))}  # renumber 0..m-1 by first use: no gaps
    pattern = tuple(order[v] for v in raw)
    text = format_pattern(pattern)
    assert parse_pattern(text) == pattern
    assert ArchConfig(family="encoder", layers=len(pattern), layer_sharing=text).layer_sharing == pattern
