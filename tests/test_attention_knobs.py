"""`qkv_bias` and `coupled_scale` through the installed `lwnas` script: cost model and study language."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml
from helpers.procs import lwnas

ORT = dict(
    family="ort",
    d_model=16,
    heads=2,
    d_ff=32,
    layers=2,
    vocab_size=30,
    region_features=8,
    image_regions=4,
    caption_tokens=3,
)
LW = dict(g_mha=True, groups=2, qk_expansion=2)  # LW-Transformer: G-MHA with Q/K expansion


def test_cost_drops_exactly_the_qkv_biases(tmp_path):
    files = {
        "bias.yaml": ORT,
        "no-bias.yaml": {**ORT, "qkv_bias": False},
        "kv-no-bias.yaml": {**ORT, "qkv_bias": False, "attention_sharing": "kv"},
        "kv-bias.yaml": {**ORT, "attention_sharing": "kv"},
        "lw-bias.yaml": {**ORT, **LW},
        "lw-no-bias.yaml": {**ORT, **LW, "qkv_bias": False},
        "lw-shared-bias.yaml": {**ORT, **LW, "weight_sharing": True},
        "lw-shared-no-bias.yaml": {**ORT, **LW, "weight_sharing": True, "qkv_bias": False},
        "lw-qk-bias.yaml": {**ORT, **LW, "attention_sharing": "qk"},
        "lw-qk-no-bias.yaml": {**ORT, **LW, "attention_sharing": "qk", "qkv_bias": False},
    }
    for name, knobs in files.items():
        (tmp_path / name).write_text(yaml.safe_dump(knobs))
    result = lwnas(tmp_path, "cost", *files, "--json", "--no-memory", NO_COLOR="1")
    assert result.returncode == 0, result.stderr
    params = {Path(r["config"]).name: r["params"] for r in json.loads(result.stdout)}
    d, attention_modules = 16, 2 * 1 + 2 * 2  # 2 unshared encoder layers x 1, 2 decoder layers x 2
    # one bias vector of width d per Q/K/V projection: 3 per attention, 2 with kv sharing (ACORT §4.3)
    assert params["bias.yaml"] - params["no-bias.yaml"] == attention_modules * 3 * d
    assert params["kv-bias.yaml"] - params["kv-no-bias.yaml"] == attention_modules * 2 * d
    # Q and K widened n-fold carry n*d biases each: (2n + 1) * d per attention; with weight sharing one
    # set of group biases (width 1/k) serves all k groups
    n, k = LW["qk_expansion"], LW["groups"]
    assert params["lw-bias.yaml"] - params["lw-no-bias.yaml"] == attention_modules * (2 * n + 1) * d
    assert params["lw-shared-bias.yaml"] - params["lw-shared-no-bias.yaml"] == attention_modules * (2 * n + 1) * d // k
    assert params["lw-qk-bias.yaml"] - params["lw-qk-no-bias.yaml"] == attention_modules * (n + 1) * d  # Q = K


def test_study_searches_qkv_bias_and_coupled_scale(tmp_path):
    study = tmp_path / "knobs.yaml"
    study.write_text(
        textwrap.dedent("""\
        name: knobs
        task: digits
        objectives:
          - {metric: accuracy, direction: maximize}
          - {metric: params, direction: minimize}
        budget: {trials: 4, epochs: 1}
        space:
          d_model: 32
          heads: 4
          layers: 1
          qkv_bias: {choice: [true, false]}
          attention: {choice: [standard, coupled]}
          coupled_scale: {choice: [quarter, half]}
        """)
    )
    result = lwnas(tmp_path, "space", "sample", str(study), "-n", "16", NO_COLOR="1")
    assert result.returncode == 0, result.stderr
    points = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert len(points) == 16
    assert {p["qkv_bias"] for p in points} == {True, False}
    coupled = [p for p in points if p["attention"] == "coupled"]
    assert {p["coupled_scale"] for p in coupled} == {"quarter", "half"}
    assert all("coupled_scale" not in p for p in points if p["attention"] == "standard")


def test_bad_values_name_the_knob_and_the_rule(tmp_path):
    (tmp_path / "bad.yaml").write_text("family: encoder\nattention: coupled\ncoupled_scale: third\nqkv_bias: 1\n")
    (tmp_path / "standard.yaml").write_text("family: encoder\ncoupled_scale: half\n")
    result = lwnas(tmp_path, "cost", "bad.yaml", "--no-memory", NO_COLOR="1")
    output = result.stdout + result.stderr
    assert result.returncode == 2
    lines = output.splitlines()
    # one line per problem naming the file, the knob, the value and the rule (the format may add a line number)
    assert any("bad.yaml" in ln and "coupled_scale: must be one of quarter, half, got 'third'" in ln for ln in lines)
    assert any("bad.yaml" in ln and "qkv_bias: must be true or false, got 1" in ln for ln in lines)
    result = lwnas(tmp_path, "cost", "standard.yaml", "--no-memory", NO_COLOR="1")
    assert result.returncode == 2
    assert "coupled_scale: is set to 'half' but only applies with `attention: coupled`" in result.stdout + result.stderr
