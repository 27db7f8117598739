"""Every block against a naive reference written here (loops, explicit matmuls, float64)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from searchspace import ArchConfig, RadixCodec, build_model
from searchspace.layers import CoupledAttention, FeedForward, GroupedLinear, MultiHeadAttention, SketchPool
from searchspace.models import box_relation_embedding

pytestmark = pytest.mark.usefixtures("one_thread")

DT = torch.float64
TOL = dict(rtol=1e-10, atol=1e-10)


def _rand(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=DT)


# ---- naive references ---------------------------------------------------------------------------
def group_params(gl: GroupedLinear, i: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(in/k, out/k) weight and bias of group i, read straight from the stored parameters."""
    if gl.groups == 1:
        return gl.weight.T, gl.bias
    j = 0 if gl.weight_sharing else i
    return gl.weight[j], (gl.bias[j] if gl.bias is not None else None)


def naive_grouped_linear(gl: GroupedLinear, x: torch.Tensor) -> torch.Tensor:
    """Loop over groups: F.linear on each feature chunk with that group's weights."""
    chunk = gl.in_features // gl.groups
    outs = []
    for i in range(gl.groups):
        w, b = group_params(gl, i)
        outs.append(F.linear(x[..., i * chunk : (i + 1) * chunk], w.T, b))
    return torch.cat(outs, dim=-1)


def naive_softmax_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_q)) v with explicit matmuls; ``mask`` (.., Tq, Tk) True = attend."""
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    return torch.softmax(logits, dim=-1) @ v


# Couplformer's logit scale. The authors' current code (wer010/Couplformer, commit 13edf73e,
# src/utils/transformers_kronecker.py `Attention` and src/vic.py `CouplingAttention`) multiplies the
# row map A and the column map B once each by head_dim ** -0.25; the 2021 version of
# transformers_kronecker.py (commit 9b3585c2) multiplied them by head_dim ** -0.5.
COUPLED_POWERS = {"quarter": -0.25, "half": -0.5}


def kron_attention(q, k, v, grid, power=-0.25):
    """Couplformer as an explicit Kronecker product, for one (T, c) head: softmax(A) kron softmax(B) @ V,
    with A and B each multiplied by c ** power before their softmax."""
    h, w = grid
    c = q.shape[-1]
    q_rows, k_rows = q.reshape(h, w * c), k.reshape(h, w * c)  # row i = tokens (i, 0..w-1)
    q_cols = q.reshape(h, w, c).transpose(0, 1).reshape(w, h * c)
    k_cols = k.reshape(h, w, c).transpose(0, 1).reshape(w, h * c)
    a = torch.softmax(q_rows @ k_rows.T * c**power, dim=-1)  # (h, h)
    b = torch.softmax(q_cols @ k_cols.T * c**power, dim=-1)  # (w, w)
    return torch.kron(a, b) @ v  # (hw, hw) @ (hw, c_v)


def box_geometry_reference(boxes):
    """ORT's box-relation embedding for one image, pair by pair, from the formula of the authors'
    released code (jiahuei/sparse-image-captioning, commit 9051c344,
    sparse_caption/models/relation_transformer.py, ``BoxRelationalEmbedding``).

    Boxes are (x0, y0, x1, y1) in 0-1 image coordinates. Sizes get 1.0 added: w = x1 - x0 + 1.
    For the ordered pair (i, j) the four geometry numbers are log(max(|cx_i - cx_j| / w_i, 0.001)),
    the same for y with h_i, then log(w_i / w_j) and log(h_i / h_j). Each is multiplied by 100 and by
    the 8 frequencies 1000 ** (-f / 8), f = 0..7, giving 32 angles (number-major); the embedding is
    the 32 sines followed by the 32 cosines.
    """
    r = boxes.shape[0]
    out = torch.empty(r, r, 64, dtype=boxes.dtype)
    for i in range(r):
        for j in range(r):
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = boxes[i].tolist(), boxes[j].tolist()
            wi, hi, wj, hj = ax1 - ax0 + 1.0, ay1 - ay0 + 1.0, bx1 - bx0 + 1.0, by1 - by0 + 1.0
            dcx, dcy = abs((ax0 + ax1) / 2 - (bx0 + bx1) / 2), abs((ay0 + ay1) / 2 - (by0 + by1) / 2)
            numbers = [
                math.log(max(dcx / wi, 1e-3)),
                math.log(max(dcy / hi, 1e-3)),
                math.log(wi / wj),
                math.log(hi / hj),
            ]
            angles = [100.0 * n * 1000.0 ** (-f / 8) for n in numbers for f in range(8)]
            out[i, j] = torch.tensor([math.sin(a) for a in angles] + [math.cos(a) for a in angles], dtype=boxes.dtype)
    return out


def naive_mha(mha: MultiHeadAttention, x, context=None, mask=None, kernel=None):
    """Per-group MHA: split x (and the context) into g feature chunks, project each with its own
    group's Q/K/V weights, run h/g heads per group in a Python loop, concat, then W_O."""
    context = x if context is None else context
    first = mha.qk_proj if mha.attention_sharing == "qk" else mha.q_proj
    g, h = first.groups, mha.num_heads
    hg = h // g
    dx, dc = x.shape[-1] // g, context.shape[-1] // g

    def lin(gl, t, i):
        w, b = group_params(gl, i)
        return t @ w if b is None else t @ w + b

    outs = []
    for i in range(g):
        xi, ci = x[..., i * dx : (i + 1) * dx], context[..., i * dc : (i + 1) * dc]
        if mha.attention_sharing == "qk":  # Q and K through the same projection
            qg, kg, vg = lin(mha.qk_proj, xi, i), lin(mha.qk_proj, ci, i), lin(mha.v_proj, ci, i)
        elif mha.attention_sharing == "kv":  # the projected key is also the value
            qg, kg = lin(mha.q_proj, xi, i), lin(mha.kv_proj, ci, i)
            vg = kg
        else:
            qg, kg, vg = lin(mha.q_proj, xi, i), lin(mha.k_proj, ci, i), lin(mha.v_proj, ci, i)
        dq, dv = qg.shape[-1] // hg, vg.shape[-1] // hg
        heads = []
        for j in range(hg):
            q, k = qg[..., j * dq : (j + 1) * dq], kg[..., j * dq : (j + 1) * dq]
            v = vg[..., j * dv : (j + 1) * dv]
            if kernel is None:
                heads.append(naive_softmax_attention(q, k, v, mask))
            else:
                heads.append(torch.stack([kernel(q[b], k[b], v[b]) for b in range(q.shape[0])]))
        outs.append(torch.cat(heads, dim=-1))
    return naive_grouped_linear(mha.out_proj, torch.cat(outs, dim=-1))


# ---- GroupedLinear --------------------------------------------------------------------------------
@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_grouped_linear_equals_loop_over_groups(groups, shared, bias):
    torch.manual_seed(0)
    gl = GroupedLinear(16, 24, groups, shared, bias).to(DT)
    x = _rand(2, 3, 16)
    y = gl(x)
    assert y.shape == (2, 3, 24)
    chunk_in = 16 // groups
    ref = []
    for i in range(groups):
        if groups == 1:
            w, b = gl.weight, gl.bias
        else:
            j = 0 if shared else i
            w, b = gl.weight[j].T, (gl.bias[j] if bias else None)  # stored (G, in/k, out/k)
        ref.append(F.linear(x[..., i * chunk_in : (i + 1) * chunk_in], w, b))
    torch.testing.assert_close(y, torch.cat(ref, -1), **TOL)
    if groups == 1:
        expected = 16 * 24 + (24 if bias else 0)
    else:
        stored = 1 if shared else groups
        expected = stored * (16 // groups) * (24 // groups) + (stored * 24 // groups if bias else 0)
    assert sum(p.numel() for p in gl.parameters()) == expected


def test_shared_grouped_linear_uses_one_weight_for_every_group():
    torch.manual_seed(0)
    gl = GroupedLinear(12, 6, groups=3, weight_sharing=True).to(DT)
    assert gl.weight.shape == (1, 4, 2)
    x = _rand(5, 12)
    y = gl(x).view(5, 3, 2)
    for i in range(3):  # every group applies the same map
        torch.testing.assert_close(y[:, i], x[:, 4 * i : 4 * i + 4] @ gl.weight[0] + gl.bias[0], **TOL)
    same = x[:, :4].repeat(1, 3)  # identical chunks -> identical group outputs
    out = gl(same).view(5, 3, 2)
    torch.testing.assert_close(out[:, 0], out[:, 2], **TOL)


def test_grouped_linear_rejects_indivisible_widths():
    with pytest.raises(ValueError, match="divisible by groups"):
        GroupedLinear(10, 8, groups=4)


# ---- G-MHA -------------------------------------------------------------------------------------------
GMHA_CASES = [(1, False, 1, False)] + [
    (k, shared, n, merge) for k in (2, 4) for shared in (False, True) for n in (1, 2) for merge in (False, True)
]


@pytest.mark.parametrize(
    "k, shared, n, merge", GMHA_CASES, ids=[f"k{k}-ws{int(s)}-n{n}-lml{int(m)}" for k, s, n, m in GMHA_CASES]
)
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_gmha_equals_per_group_mha(k, shared, n, merge, cross):
    torch.manual_seed(1)
    d, h = 16, 4
    mha = (
        MultiHeadAttention(d, h, groups=k, g_mha=k > 1, weight_sharing=shared, qk_expansion=n, g_lml=merge)
        .to(DT)
        .eval()
    )
    assert mha.q_proj.groups == k and mha.k_proj.groups == k and mha.v_proj.groups == k
    assert mha.out_proj.groups == (k if merge else 1)
    assert mha.q_proj.out_features == n * d and mha.v_proj.out_features == d
    if k > 1:
        assert mha.q_proj.weight.shape == ((1 if shared else k), d // k, n * d // k)
    x = _rand(2, 5, d)
    ctx = _rand(2, 7, d) if cross else None
    torch.testing.assert_close(mha(x, ctx), naive_mha(mha, x, ctx), **TOL)


def test_gmha_groups_are_independent():
    """Changing group 0's input features must leave group 1's head outputs untouched (before W_O)."""
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 4, groups=2, g_mha=True, g_lml=True).to(DT).eval()
    x = _rand(1, 6, 16)
    x2 = x.clone()
    x2[..., :8] = _rand(1, 6, 8)
    y, y2 = mha(x), mha(x2)
    torch.testing.assert_close(y[..., 8:], y2[..., 8:], **TOL)  # G-LML keeps groups apart end to end
    assert not torch.allclose(y[..., :8], y2[..., :8])


SHARING_CASES = [(s, g, 1) for s in ("none", "qk", "kv") for g in (False, True)] + [("qk", True, 2), ("none", True, 2)]


@pytest.mark.parametrize("sharing, grouped, n", SHARING_CASES, ids=[f"{s}-g{int(g)}-n{n}" for s, g, n in SHARING_CASES])
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_attention_sharing_equals_naive(sharing, grouped, n, cross):
    torch.manual_seed(3)
    d = 16
    mha = (
        MultiHeadAttention(d, 4, groups=2 if grouped else 1, g_mha=grouped, attention_sharing=sharing, qk_expansion=n)
        .to(DT)
        .eval()
    )
    x = _rand(2, 5, d)
    ctx = _rand(2, 3, d) if cross else None
    seen = {}
    handle = mha.kernel.register_forward_hook(lambda m, args, out: seen.update(q=args[0], k=args[1], v=args[2]))
    out = mha(x, ctx)
    handle.remove()
    torch.testing.assert_close(out, naive_mha(mha, x, ctx), **TOL)
    projections = [n for n, m in mha.named_children() if isinstance(m, GroupedLinear)]
    if sharing == "kv":
        assert projections == ["q_proj", "kv_proj", "out_proj"]
        assert torch.equal(seen["v"], seen["k"])  # V is the very key tensor (ACORT's key-value reuse)
    elif sharing == "qk":
        assert projections == ["qk_proj", "v_proj", "out_proj"]
        if not cross:
            assert torch.equal(seen["q"], seen["k"])  # Q and K: one projection of the same input
    else:
        assert projections == ["q_proj", "k_proj", "v_proj", "out_proj"]
        assert not torch.equal(seen["q"], seen["k"])


@pytest.mark.parametrize("g_mha_lml", [False, True])
def test_attention_sharing_saves_a_quarter_of_the_projections(g_mha_lml):
    d = 32
    kw = dict(groups=4, g_mha=True, g_lml=True) if g_mha_lml else {}

    def count(sharing):
        mha = MultiHeadAttention(d, 4, attention_sharing=sharing, **kw)
        return sum(p.numel() for p in mha.parameters())

    per_proj = d * d // (4 if g_mha_lml else 1) + d
    assert count("none") == 4 * per_proj
    assert count("kv") == count("qk") == 3 * per_proj
    assert 4 * count("kv") == 3 * count("none")


def test_masks_relation_bias_and_causal_match_naive():
    torch.manual_seed(4)
    b, t, d, h = 2, 5, 16, 4
    mha = MultiHeadAttention(d, h, relation_dim=8).to(DT).eval()
    x = _rand(b, t, d)
    key_mask = torch.ones(b, t, dtype=torch.bool)
    key_mask[0, 3:] = False
    rel = _rand(b, t, t, 8)
    out = mha(x, key_mask=key_mask, causal=True, relation=rel)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    allowed = key_mask[:, None, :] & causal  # (B, Tq, Tk)
    bias = torch.log(torch.clamp(F.relu(rel @ mha.relation.weight.T + mha.relation.bias), min=1e-6))  # (B,T,T,H)
    d_h = d // h
    q, k, v = (p(x) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    heads = []
    for j in range(h):
        s = q[..., j * d_h : (j + 1) * d_h] @ k[..., j * d_h : (j + 1) * d_h].transpose(-1, -2) / math.sqrt(d_h)
        s = (s + bias[..., j]).masked_fill(~allowed, float("-inf"))
        heads.append(torch.softmax(s, -1) @ v[..., j * d_h : (j + 1) * d_h])
    torch.testing.assert_close(out, mha.out_proj(torch.cat(heads, -1)), **TOL)


# ---- FFN ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("g_il", [False, True], ids=["g_ffn", "g_ffn+g_il"])
@pytest.mark.parametrize("shared", [False, True])
def test_grouped_ffn_equals_loop(g_il, shared):
    torch.manual_seed(5)
    d, hidden, k = 16, 32, 4
    ffn = FeedForward(d, hidden, groups=k, g_ffn=True, g_il=g_il, weight_sharing=shared).to(DT).eval()
    assert ffn.fc2.groups == k
    assert ffn.fc1.groups == (k if g_il else 1)  # G-FFN keeps the first layer dense
    if not g_il:
        assert ffn.fc1.weight.shape == (hidden, d)
    x = _rand(3, 5, d)
    if g_il:
        hid = torch.cat(
            [x[..., i * 4 : (i + 1) * 4] @ group_params(ffn.fc1, i)[0] + group_params(ffn.fc1, i)[1] for i in range(k)],
            -1,
        )
    else:
        hid = x @ ffn.fc1.weight.T + ffn.fc1.bias
    hid = hid.clamp(min=0)
    ref = torch.cat(
        [hid[..., i * 8 : (i + 1) * 8] @ group_params(ffn.fc2, i)[0] + group_params(ffn.fc2, i)[1] for i in range(k)],
        -1,
    )
    torch.testing.assert_close(ffn(x), ref, **TOL)


def test_dense_ffn_params():
    ffn = FeedForward(16, 32)
    assert sum(p.numel() for p in ffn.parameters()) == 16 * 32 + 32 + 32 * 16 + 16
    g = FeedForward(16, 32, groups=4, g_ffn=True)
    assert sum(p.numel() for p in g.parameters()) == 16 * 32 + 32 + 32 * 16 // 4 + 16


# ---- coupled attention -------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", ["quarter", "half"])
@pytest.mark.parametrize("grid", [(3, 4), (2, 5), (4, 4), (1, 3)])
def test_coupled_equals_kronecker_attention(grid, scale):
    torch.manual_seed(6)
    b, n, c = 2, 3, 4
    t = grid[0] * grid[1]
    q, k, v = _rand(b, n, t, c), _rand(b, n, t, c), _rand(b, n, t, c + 2)  # d_v may differ from d_q
    out = CoupledAttention(grid, coupled_scale=scale).eval()(q, k, v)
    ref = torch.stack(
        [
            torch.stack([kron_attention(q[i, j], k[i, j], v[i, j], grid, COUPLED_POWERS[scale]) for j in range(n)])
            for i in range(b)
        ]
    )
    torch.testing.assert_close(out, ref, **TOL)


def test_coupled_defaults_to_the_authors_current_scale():
    torch.manual_seed(6)
    grid, c = (3, 4), 16  # c = 16: c^-1/4 = 1/2 and c^-1/2 = 1/4 give clearly different maps
    q, k, v = _rand(1, 1, 12, c), _rand(1, 1, 12, c), _rand(1, 1, 12, c)
    current = kron_attention(q[0, 0], k[0, 0], v[0, 0], grid, -0.25)
    torch.testing.assert_close(CoupledAttention(grid)(q, k, v)[0, 0], current, **TOL)
    assert not torch.allclose(kron_attention(q[0, 0], k[0, 0], v[0, 0], grid, -0.5), current, atol=1e-3)
    model = build_model(ArchConfig(attention="coupled", d_model=32, heads=2, grid=(2, 2)))
    assert {m.coupled_scale for m in model.modules() if isinstance(m, CoupledAttention)} == {"quarter"}
    model = build_model(ArchConfig(attention="coupled", coupled_scale="half", d_model=32, heads=2, grid=(2, 2)))
    assert {m.coupled_scale for m in model.modules() if isinstance(m, CoupledAttention)} == {"half"}


def test_coupled_differs_from_standard_attention():
    torch.manual_seed(6)
    q, k, v = _rand(1, 1, 12, 4), _rand(1, 1, 12, 4), _rand(1, 1, 12, 4)
    assert not torch.allclose(CoupledAttention((3, 4))(q, k, v), naive_softmax_attention(q, k, v))


@pytest.mark.parametrize("qkv_bias", [True, False])
def test_coupled_mha_equals_projections_and_kronecker(qkv_bias):
    torch.manual_seed(7)
    grid = (3, 4)
    mha = MultiHeadAttention(
        16, 4, groups=2, g_mha=True, qk_expansion=2, kernel="coupled", grid=grid, qkv_bias=qkv_bias
    ).to(DT)
    x = _rand(2, 12, 16)
    ref = naive_mha(mha.eval(), x, kernel=lambda q, k, v: kron_attention(q, k, v, grid))
    torch.testing.assert_close(mha(x), ref, **TOL)


@pytest.mark.parametrize("sharing", ["none", "qk", "kv"])
def test_qkv_bias_off_drops_only_the_projection_biases(sharing):
    torch.manual_seed(7)
    with_bias = MultiHeadAttention(16, 4, attention_sharing=sharing).to(DT).eval()
    without = MultiHeadAttention(16, 4, attention_sharing=sharing, qkv_bias=False).to(DT).eval()
    projections = [m for name, m in without.named_children() if name.endswith("_proj") and name != "out_proj"]
    assert projections and all(m.bias is None for m in projections)
    assert without.out_proj.bias is not None  # W_O keeps its bias in every reference (KCT's `proj` included)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(with_bias) - count(without) == 16 * len(projections)
    x = _rand(2, 5, 16)
    torch.testing.assert_close(without(x), naive_mha(without, x), **TOL)


class ShapeRecorder(TorchDispatchMode):
    """Records the shape of every tensor any aten op produces."""

    def __init__(self):
        super().__init__()
        self.shapes: list[tuple[int, ...]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.shapes += [tuple(t.shape) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        return out


def test_coupled_never_materialises_the_hw_by_hw_map():
    torch.manual_seed(8)
    grid, t, c = (8, 8), 64, 4  # w*c = 32 and h*c = 32, so no legitimate tensor ends in (64, 64)
    q, k, v = (_rand(2, 3, t, c).requires_grad_() for _ in range(3))

    def has_map(shapes):
        return any(len(s) >= 2 and s[-2:] == (t, t) for s in shapes)

    with ShapeRecorder() as rec:
        CoupledAttention(grid)(q, k, v).sum().backward()
    assert rec.shapes, "the recorder saw no ops"
    assert not has_map(rec.shapes), [s for s in rec.shapes if s[-2:] == (t, t)]
    assert any(s[-2:] == (8, 8) for s in rec.shapes)  # the small h x h / w x w maps do appear
    with ShapeRecorder() as rec:  # the detector does catch a naive implementation
        kron_attention(q[0, 0].detach(), k[0, 0].detach(), v[0, 0].detach(), grid)
    assert has_map(rec.shapes)


def test_coupled_rejects_masks_and_wrong_token_count():
    att = CoupledAttention((2, 3))
    q = torch.randn(1, 1, 6, 4)
    with pytest.raises(ValueError, match="no causal mask"):
        att(q, q, q, causal=True)
    with pytest.raises(ValueError, match="6 tokens"):
        att(torch.randn(1, 1, 7, 4), q, q)


# ---- ORT box relation ---------------------------------------------------------------------------------
def _random_boxes(batch, regions):
    """Boxes in 0-1 image coordinates with x0 < x1 and y0 < y1, as the detector's relative boxes are."""
    corner = torch.rand(batch, regions, 2, dtype=DT) * 0.6
    return torch.cat([corner, corner + 0.01 + torch.rand(batch, regions, 2, dtype=DT) * 0.39], dim=-1)


def test_box_relation_equals_the_authors_formula():
    torch.manual_seed(12)
    boxes = _random_boxes(2, 5)
    boxes[1, 3] = boxes[1, 1]  # identical centres: the offset terms hit the 0.001 floor
    out = box_relation_embedding(boxes)
    assert out.shape == (2, 5, 5, 64)
    for b in range(2):
        torch.testing.assert_close(out[b], box_geometry_reference(boxes[b]), **TOL)


def test_box_relation_size_ratio_runs_i_over_j():
    # Box 0 is wider than box 1: log(w_0 / w_1) > 0 at (0, 1), so the first angle of the w-ratio
    # block (f = 0: angle = 100 * log(w_0 / w_1)) has the sine of a positive number there.
    boxes = torch.tensor([[[0.1, 0.1, 0.7, 0.3], [0.2, 0.1, 0.3, 0.3]]], dtype=DT)
    ratio = 100.0 * math.log(1.6 / 1.1)
    out = box_relation_embedding(boxes)
    assert out[0, 0, 1, 16].item() == pytest.approx(math.sin(ratio), abs=1e-12)
    assert out[0, 1, 0, 16].item() == pytest.approx(math.sin(-ratio), abs=1e-12)


def test_ort_encoder_uses_the_box_relation_embedding():
    torch.manual_seed(13)
    cfg = ArchConfig(family="ort", layers=1, caption_tokens=3, **SMALL)
    model = build_model(cfg).to(DT).eval()
    regions, boxes = _rand(1, 4, 8), _random_boxes(1, 4)
    layer = model.encoder.blocks[0]
    relation = box_geometry_reference(boxes[0])[None]
    x = model.embed_regions(regions)
    h = layer.norm1(x)
    x = x + layer.attn(h, relation=relation)
    x = x + layer.ffn(layer.norm2(x))
    torch.testing.assert_close(model.encode(regions, boxes), model.encoder_norm(x), **TOL)


# ---- T-EMDE sketch ---------------------------------------------------------------------------------------
class ListingCoder(nn.Module):
    """T-EMDE Listing 1, ``Coder``, verbatim up to N, K, inner_dim being arguments."""

    def __init__(self, input_dim, N, K, inner_dim):
        super().__init__()
        self.N, self.K, self.inner_dim = N, K, inner_dim
        self.l1 = nn.Linear(input_dim, inner_dim * N * K)
        self.bn1 = nn.BatchNorm1d(inner_dim * N * K)
        self.centroids = nn.Parameter(torch.randn(inner_dim * N * K))
        self.temp = nn.Parameter(
            torch.ones(
                1,
            )
        )

    def forward(self, x):
        N, K, inner_dim = self.N, self.K, self.inner_dim
        x = self.l1(x)
        x = self.bn1(x)
        dists = (x - self.centroids) ** 2
        dists = dists.view(-1, N * K, inner_dim).sum(-1).view(-1, N, K)
        soft_assignments = F.softmax(-dists * self.temp, -1)
        soft_assignments = soft_assignments.view(-1, N * K)
        return soft_assignments


class ListingTEMDE(nn.Module):
    """T-EMDE Listing 1, ``T_EMDE``: one text/image (its tokens) -> one sketch."""

    def __init__(self, input_dim, N, K, inner_dim):
        super().__init__()
        self.coder = ListingCoder(input_dim, N, K, inner_dim)

    def forward(self, token_embeddings):
        N, K = self.coder.N, self.coder.K
        encoded = self.coder(token_embeddings)
        summed = torch.sum(encoded, 0)
        normalized = F.normalize(summed.view(-1, N, K), dim=-1).view(-1, K * N)
        return normalized


def _sketch_pair(dim=12, n=3, k=5, d=4):
    torch.manual_seed(9)
    pool = SketchPool(dim, n, k, d).to(DT)
    with torch.no_grad():  # non-trivial BatchNorm state and temperature
        pool.coder.norm.running_mean.copy_(_rand(n * k * d))
        pool.coder.norm.running_var.copy_(torch.rand(n * k * d, dtype=DT) + 0.5)
        pool.coder.norm.weight.copy_(_rand(n * k * d))
        pool.coder.norm.bias.copy_(_rand(n * k * d))
        pool.coder.temp.fill_(0.7)
    ref = ListingTEMDE(dim, n, k, d).to(DT)
    c, r = pool.coder, ref.coder
    r.l1.load_state_dict(c.proj.state_dict())
    r.bn1.load_state_dict(c.norm.state_dict())
    with torch.no_grad():
        r.centroids.copy_(c.centroids)
        r.temp.copy_(c.temp)
    return pool, ref


def _padded_batch(lengths, t=6, dim=12, fill=0.0):
    torch.manual_seed(10)
    x = _rand(len(lengths), t, dim)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    return x.masked_fill(~mask[..., None], fill), mask


def test_sketch_equals_listing_1_per_sample_in_eval_mode():
    pool, ref = _sketch_pair()
    pool.eval(), ref.eval()
    lengths = [6, 3, 1]
    x, mask = _padded_batch(lengths, fill=123.0)
    out = pool(x, mask)
    assert out.shape == (3, 15)
    for i, n_real in enumerate(lengths):
        torch.testing.assert_close(out[i], ref(x[i, :n_real])[0], **TOL)
    norms = out.view(3, 3, 5).norm(dim=-1)  # each of the N slices is unit length
    torch.testing.assert_close(norms, torch.ones_like(norms), **TOL)
    # no mask = every token is real
    torch.testing.assert_close(pool(x[:1]), ref(x[0])[0:1], **TOL)


def test_sketch_train_mode_normalises_over_real_tokens_only():
    """In train mode BatchNorm uses the batch statistics of the real tokens: Listing 1's coder on
    the concatenation of every sample's real tokens, then summed per sample."""
    pool, ref = _sketch_pair()
    pool.train(), ref.train()
    lengths = [6, 3, 1]
    x, mask = _padded_batch(lengths, fill=-50.0)
    out = pool(x, mask)
    coded = ref.coder(torch.cat([x[i, :n] for i, n in enumerate(lengths)]))
    starts = [0, 6, 9, 10]
    for i in range(3):
        summed = coded[starts[i] : starts[i + 1]].sum(0).view(3, 5)
        torch.testing.assert_close(out[i], F.normalize(summed, dim=-1).view(15), **TOL)
    torch.testing.assert_close(pool.coder.norm.running_mean, ref.coder.bn1.running_mean, **TOL)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_sketch_ignores_padding_values(mode):
    pool, _ = _sketch_pair()
    pool.train(mode == "train")
    x, mask = _padded_batch([6, 2, 4], fill=0.0)
    x2 = torch.where(mask[..., None], x, _rand(*x.shape) * 100)
    torch.testing.assert_close(pool(x, mask), pool(x2, mask), **TOL)
    x3 = x.clone()
    x3[1, 0] += 1.0  # a real token does change the sketch
    assert not torch.allclose(pool(x, mask)[1], pool(x3, mask)[1])


# ---- radix codec ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("base, digits", [(768, 2), (25, 3), (256, 2)])
def test_radix_round_trips_every_word(base, digits):
    codec = RadixCodec(base, 10001)
    assert codec.digits == digits
    assert (codec.bos, codec.eos, codec.vocab_size) == (base + 1, base + 2, base + 3)
    words = torch.arange(10001)
    tokens = codec.encode(words)
    assert tokens.shape == (10001 * digits,)
    assert int(tokens.min()) >= 1 and int(tokens.max()) <= base
    assert torch.equal(codec.decode(tokens), words)
    # batched (B, W) words round-trip too, and distinct words get distinct digit groups
    batch = words[:10000].view(100, 100)
    assert torch.equal(codec.decode(codec.encode(batch)), batch)
    assert len({tuple(g) for g in tokens.view(-1, digits).tolist()}) == 10001
    assert ArchConfig(family="ort", radix_base=base).radix_digits == digits


def test_radix_paper_figure_3_examples():
    assert RadixCodec(25, 10001).encode(torch.tensor([2024])).tolist() == [4, 6, 25]  # digits (3, 5, 24)
    assert RadixCodec(256, 10001).encode(torch.tensor([2024])).tolist() == [8, 233]  # digits (7, 232)
    assert RadixCodec(768, 10001).encode(torch.tensor([0, 767, 768])).tolist() == [1, 1, 1, 768, 2, 1]


def test_radix_decode_marks_special_tokens_invalid():
    codec = RadixCodec(25, 10001)
    good = codec.encode(torch.tensor([2024]))
    for special in (0, codec.bos, codec.eos):
        for pos in range(3):
            bad = good.clone()
            bad[pos] = special
            assert codec.decode(bad).tolist() == [-1]
    past_vocab = torch.tensor([25, 25, 25])  # digits (24, 24, 24) = 15624 >= 10001
    assert codec.decode(past_vocab).tolist() == [-1]
    seq = torch.cat([codec.encode(torch.tensor([5, 6])), torch.tensor([codec.eos, 0, 0])])
    assert codec.decode(seq).tolist() == [5, 6, -1]
    with pytest.raises(ValueError):
        codec.encode(torch.tensor([10001]))


def test_ort_radix_vocabulary_is_v_plus_3():
    cfg = ArchConfig(
        family="ort",
        d_model=16,
        heads=2,
        d_ff=32,
        layers=1,
        radix_base=8,
        vocab_size=50,
        region_features=8,
        image_regions=3,
        caption_tokens=4,
    )
    model = build_model(cfg)
    assert model.num_tokens == 11 and model.embed_tokens.num_embeddings == 11
    assert model.generator.out_features == 11
    assert model.sequence_length == 4 * 2 + 1  # 50 words need 2 base-8 digits, plus BOS


# ---- cross-layer sharing -------------------------------------------------------------------------------
SMALL = dict(d_model=16, heads=2, d_ff=32, dropout=0.0, vocab_size=30, region_features=8, image_regions=4)


def _ln(d):
    return 2 * d


def _mha(d, relation_heads=0):
    return 4 * (d * d + d) + relation_heads * (64 + 1)


def _ffn(d, f):
    return d * f + f + f * d + d


def analytic_params(cfg: ArchConfig) -> int:
    """Unique parameters of an ORT / MCAN model from the layer formulas (independent layers only)."""
    d, f, h, v, r = cfg.d_model, cfg.ffn_dim, cfg.heads, cfg.vocab_size, cfg.region_features
    n_enc = len(set(cfg.sharing_pattern("encoder")))
    n_dec = len(set(cfg.sharing_pattern("decoder")))
    if cfg.family == "ort":
        enc_layer = _mha(d, relation_heads=h) + _ffn(d, f) + 2 * _ln(d)
        dec_layer = 2 * _mha(d) + _ffn(d, f) + 3 * _ln(d)
        rest = (r * d + d) + _ln(d) + v * d + _ln(d) + (d * v + v)
    else:  # mcan with attention pooling
        enc_layer = _mha(d) + _ffn(d, f) + 2 * _ln(d)
        dec_layer = 2 * _mha(d) + _ffn(d, f) + 3 * _ln(d)
        att_pool = (d * d + d) + (d + 1)
        rest = v * d + (r * d + d) + 2 * att_pool + 2 * (d * d + d) + _ln(d) + (d * cfg.num_answers + cfg.num_answers)
    return rest + n_enc * enc_layer + n_dec * dec_layer


@pytest.mark.parametrize("family", ["ort", "mcan"])
def test_shared_layers_share_storage(family):
    extra = dict(caption_tokens=3) if family == "ort" else dict(question_tokens=4, num_answers=5)
    cfg = ArchConfig(family=family, layers=6, layer_sharing="(0x3,1x3)", **SMALL, **extra)
    model = build_model(cfg)
    for stack in (model.encoder, model.decoder):
        depths = list(stack)
        assert len(depths) == 6 and len(stack.blocks) == 2
        assert depths[0] is depths[1] is depths[2] and depths[3] is depths[4] is depths[5]
        assert depths[0] is not depths[3]
        ptrs = [[p.data_ptr() for p in layer.parameters()] for layer in depths]
        assert ptrs[0] == ptrs[1] == ptrs[2] and ptrs[3] == ptrs[5] and ptrs[0] != ptrs[3]
    total = sum(p.numel() for p in model.parameters())
    assert total == analytic_params(cfg)
    unshared = build_model(cfg.replace(layer_sharing=None))
    assert sum(p.numel() for p in unshared.parameters()) == analytic_params(cfg.replace(layer_sharing=None))
    assert sum(p.numel() for p in unshared.parameters()) - total == (
        4 * sum(p.numel() for p in model.encoder.blocks[0].parameters())
        + 4 * sum(p.numel() for p in model.decoder.blocks[0].parameters())
    )


def _tie_unshared(shared, unshared):
    """Copy the shared model's weights into the unshared one, depth by depth."""
    state = {}
    for name, value in shared.state_dict().items():
        if ".blocks." not in name:
            state[name] = value
    for stack in ("encoder", "decoder"):
        pattern = getattr(shared, stack).pattern
        for depth, index in enumerate(pattern):
            for name, value in getattr(shared, stack).blocks[index].state_dict().items():
                state[f"{stack}.blocks.{depth}.{name}"] = value
    unshared.load_state_dict(state)


def test_shared_layers_accumulate_gradients_and_step_consistently():
    torch.manual_seed(11)
    cfg = ArchConfig(family="ort", layers=6, layer_sharing="(0x3,1x3)", caption_tokens=3, **SMALL)
    shared = build_model(cfg).to(DT).eval()
    unshared = build_model(cfg.replace(layer_sharing=None)).to(DT).eval()
    _tie_unshared(shared, unshared)
    inputs = tuple(t.to(DT) if t.is_floating_point() else t for t in shared.example_inputs(batch=2))
    weight = _rand(*shared(*inputs).shape)

    def loss_of(model):
        return (model(*inputs) * weight).sum()

    torch.testing.assert_close(shared(*inputs), unshared(*inputs), **TOL)
    loss_of(shared).backward()
    loss_of(unshared).backward()
    pattern = (0, 0, 0, 1, 1, 1)
    for stack in ("encoder", "decoder"):
        for index in (0, 1):
            block = getattr(shared, stack).blocks[index]
            for name, p in block.named_parameters():
                copies = [
                    dict(getattr(unshared, stack).blocks[j].named_parameters())[name]
                    for j, i in enumerate(pattern)
                    if i == index
                ]
                torch.testing.assert_close(p.grad, sum(c.grad for c in copies), rtol=1e-9, atol=1e-12)
                for c in copies:  # the unshared model now gets the tied gradient at every copy
                    c.grad = p.grad.clone()
    before = [p.detach().clone() for p in shared.encoder.blocks[0].parameters()]
    for model in (shared, unshared):
        torch.optim.AdamW(model.parameters(), lr=1e-2).step()
    after = list(shared.encoder.blocks[0].parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, before))
    for depth in (1, 2):  # every depth sees the update: it is the same storage
        assert [p.data_ptr() for p in list(shared.encoder)[depth].parameters()] == [p.data_ptr() for p in after]
    with torch.no_grad():
        torch.testing.assert_close(shared(*inputs), unshared(*inputs), rtol=1e-9, atol=1e-9)
