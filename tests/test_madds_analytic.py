"""The fvcore-based MAdds count equals per-block formulas derived by hand (matrix multiplies only,
LW-Transformer's convention: projections T*in*out, QK^T Tq*Tk*d_q, AV Tq*Tk*d_v)."""

from __future__ import annotations

import pytest

from searchspace import ArchConfig
from trainers import cost

PAPER = dict(family="mcan", d_model=512, d_ff=2048, heads=8, layers=6, question_tokens=14, image_regions=100)
D, FF, T, R = 512, 2048, 14, 100


def proj(tokens: int, d_in: int, d_out: int, groups: int = 1) -> int:
    """A (grouped) linear layer: each of the k groups maps in/k -> out/k features."""
    assert (d_in * d_out) % groups == 0
    return tokens * d_in * d_out // groups


def attention(cfg: ArchConfig, stack: str, tq: int, tk: int, self_attention: bool) -> int:
    d, n = cfg.d_model, cfg.qk_expansion
    k = cfg.groups if cfg.g_mha else 1
    k_merge = cfg.groups if cfg.g_lml else 1
    sharing = cfg.attention_sharing_of(stack)
    q = proj(tq, d, n * d, k)
    if sharing == "qk":  # one projection for Q and K: self-attention reuses Q as K (ACORT Fig. 6)
        key, value = (0 if self_attention else proj(tk, d, n * d, k)), proj(tk, d, d, k)
    elif sharing == "kv":  # the projected key is the value: no V projection
        key, value = proj(tk, d, d, k), 0
    else:
        key, value = proj(tk, d, n * d, k), proj(tk, d, d, k)
    out = proj(tq, d, d, k_merge)
    kernel = tq * tk * n * d + tq * tk * d  # QK^T over d_q = n*d/h per head (x h heads), AV over d/h
    return q + key + value + out + kernel


def ffn(cfg: ArchConfig, tokens: int) -> int:
    first = proj(tokens, cfg.d_model, cfg.ffn_dim, cfg.groups if cfg.g_il else 1)
    second = proj(tokens, cfg.ffn_dim, cfg.d_model, cfg.groups if cfg.g_ffn else 1)
    return first + second


def mcan_madds(cfg: ArchConfig) -> dict[str, int]:
    """Encoder: self-attention + FFN over the question tokens; decoder: self-attention over the
    regions, guided attention (Q from regions, K/V from the question) and FFN over the regions.
    Layer sharing reuses weights, not compute: every depth counts."""
    t, r = cfg.question_tokens, cfg.image_regions
    le, ld = cfg.depths["encoder"], cfg.depths["decoder"]
    enc_attn = attention(cfg, "encoder", t, t, True)
    dec_attn = attention(cfg, "decoder", r, r, True) + attention(cfg, "decoder", r, t, False)
    return {
        "encoder": le * (enc_attn + ffn(cfg, t)),
        "decoder": ld * (dec_attn + ffn(cfg, r)),
        "attention": le * enc_attn + ld * dec_attn,
    }


def test_mcan_baseline_matches_the_literal_formula():
    report = cost(PAPER, memory=False)
    enc = 6 * (4 * T * D**2 + 2 * T * T * D + 2 * T * D * FF)
    dec = 6 * (
        4 * R * D**2
        + 2 * R * R * D  # self-attention over the regions
        + 2 * R * D**2
        + 2 * T * D**2
        + 2 * R * T * D  # guided attention: Q, O on R; K, V on T
        + 2 * R * D * FF
    )
    assert report.madds_breakdown["encoder"] == enc
    assert report.madds_breakdown["decoder"] == dec
    assert enc + dec == 2_581_536_768  # LW-Transformer Table II, Transformer row (2.58G)
    cfg = ArchConfig.from_dict(PAPER)
    assert mcan_madds(cfg) == {k: report.madds_breakdown[k] for k in ("encoder", "decoder", "attention")}
    # the rest: region embedding Linear(2048, d), the two attention pools, fusion and classifier
    # AttFlat: score MLP Linear(d, d) + Linear(d, 1) per token, then the weighted sum over tokens
    pools = sum(tokens * (D * D + D) + tokens * D for tokens in (T, R))
    assert report.madds_breakdown["embeddings"] == R * 2048 * D
    assert report.madds_breakdown["head"] == pools + 2 * D * D + D * 3129
    assert report.madds == sum(report.madds_breakdown[s] for s in ("embeddings", "encoder", "decoder", "head"))


VARIANTS = {
    # weight sharing changes parameters, never MAdds: the formula has no WS term
    "g_mha-k8-ws": dict(groups=8, g_mha=True, weight_sharing=True),
    "g_mha-k4-n3": dict(groups=4, g_mha=True, qk_expansion=3),
    "g_ffn-k4": dict(groups=4, g_ffn=True),
    "all-lw-knobs-k2-n2": dict(
        groups=2, g_mha=True, g_ffn=True, weight_sharing=True, qk_expansion=2, g_lml=True, g_il=True
    ),
    "kv-albert": dict(attention_sharing="kv", layer_sharing="(0x6)"),
    "qk-enc-kv-dec-g_mha": dict(
        encoder_attention_sharing="qk",
        decoder_attention_sharing="kv",
        groups=4,
        g_mha=True,
        encoder_layers=4,
        decoder_layers=2,
    ),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_mcan_variant_matches_formula(name):
    cfg = ArchConfig.from_dict({**PAPER, **VARIANTS[name]})
    report = cost(cfg, memory=False)
    expected = mcan_madds(cfg)
    got = {k: report.madds_breakdown[k] for k in expected}
    assert got == expected, {k: got[k] - expected[k] for k in expected}


def test_formula_terms_are_what_the_knobs_promise():
    """Sanity of the analytic model itself (so a wrong formula cannot match a wrong count)."""
    base = ArchConfig.from_dict(PAPER)
    grouped = base.replace(groups=4, g_mha=True)
    shared = grouped.replace(weight_sharing=True)
    assert mcan_madds(shared) == mcan_madds(grouped)
    # G-MHA divides the Q/K/V projections by k, W_O stays dense
    assert attention(base, "encoder", T, T, True) - attention(grouped, "encoder", T, T, True) == 3 * T * D * D * 3 // 4
    # kv drops the V projection of every attention; qk drops K in self-attention only
    kv, qk = base.replace(attention_sharing="kv"), base.replace(attention_sharing="qk")
    assert mcan_madds(base)["decoder"] - mcan_madds(kv)["decoder"] == 6 * (R * D * D + T * D * D)
    assert mcan_madds(base)["decoder"] - mcan_madds(qk)["decoder"] == 6 * R * D * D


# ---- coupled attention ----------------------------------------------------------------------------
ENCODER = dict(
    family="encoder",
    d_model=32,
    heads=4,
    d_ff=64,
    layers=2,
    grid=(4, 6),
    patch_features=3,
    num_classes=5,
    pooling="mean",
)


@pytest.mark.parametrize(
    "knobs",
    [{}, dict(groups=2, g_mha=True, qk_expansion=2), dict(attention_sharing="kv")],
    ids=["plain", "g_mha-n2", "kv"],
)
def test_coupled_kernel_madds(knobs):
    cfg = ArchConfig.from_dict({**ENCODER, **knobs, "attention": "coupled"})
    gh, gw = cfg.grid
    t, d, heads, layers = gh * gw, cfg.d_model, cfg.heads, cfg.layers
    c_q, c_v = cfg.qk_expansion * d // heads, d // heads
    maps = gh * gh * (gw * c_q) + gw * gw * (gh * c_q)  # A = q(h, w*c) k(h, w*c)^T, B over columns
    apply = gh * gh * gw * c_v + gh * gw * gw * c_v  # softmax(A) . V_c, then . softmax(B)^T
    standard_kernel = t * t * c_q * heads + t * t * c_v * heads
    projections_and_ffn = attention(cfg, "encoder", t, t, True) - standard_kernel + ffn(cfg, t)
    coupled = cost(cfg, memory=False)
    assert coupled.madds_breakdown["encoder"] == layers * (projections_and_ffn + heads * (maps + apply))
    assert coupled.madds_breakdown["attention"] == layers * (
        attention(cfg, "encoder", t, t, True) - standard_kernel + heads * (maps + apply)
    )
    assert coupled.madds_breakdown["embeddings"] == t * 3 * d
    assert coupled.madds_breakdown["head"] == d * 5
    standard = cost(cfg.replace(attention="standard", coupled_scale=None), memory=False)
    assert standard.madds_breakdown["encoder"] == layers * (projections_and_ffn + standard_kernel)
    assert coupled.params == standard.params  # Couplformer: same parameters as standard attention
