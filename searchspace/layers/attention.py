"""Multi-head attention with every attention knob of the four papers.

* LW-Transformer G-MHA (Eq. 6): the input is split into ``groups`` chunks *before* the Q/K/V
  projections; each group runs heads/groups heads; ``qk_expansion`` n widens Q and K n-fold
  (d_h = n * d/h); ``g_lml`` (G-LML) also groups W_O; ``weight_sharing`` (WS) lets one set of
  group weights serve all groups.
* ACORT ``attention_sharing`` (§4.3, Fig. 5-6): ``qk`` uses one projection for Q and K; ``kv`` reuses the
  projected key as the value (3 linear layers instead of 4) in self- and cross-attention.
* ORT's box-relation term: ``relation_dim`` adds h x Linear(64, 1) turning a geometry embedding into
  per-head logit offsets ``log(max(relu(w_g), 1e-6))``.
* The kernel is ``standard`` (scaled dot product) or Couplformer's ``coupled`` over a grid.
* ``qkv_bias``: biases on the Q/K/V projections (on in MCAN, ORT and Couplformer's ``vic.py``; off in
  Couplformer's KCT ``Attention``). W_O keeps its bias in every reference.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .coupled import CoupledAttention
from .grouped_linear import GroupedLinear


class ScaledDotProductAttention(nn.Module):
    """Standard kernel: ``softmax(q k^T / sqrt(d_q) + bias) v`` through torch's SDPA."""

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = dropout

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        causal: bool = False,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        mask = None
        if key_mask is not None:
            mask = key_mask[:, None, None, :]  # (B, 1, 1, Tk), True = attend
        if causal:
            tq, tk = q.shape[-2], k.shape[-2]
            tri = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(tk - tq)
            mask = tri if mask is None else mask & tri
        if bias is not None:
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        drop = self.dropout if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)  # (B, H, Tq, d_v)

    @staticmethod
    def map_numel(q: torch.Tensor, k: torch.Tensor, grid=None) -> int:
        """Elements of the (Tq x Tk) map per head, as a naive implementation would keep it."""
        return q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2]


class MultiHeadAttention(nn.Module):
    """Projections, head split, attention kernel and merge layer W_O.

    Args:
        dim: model width d.
        num_heads: total heads h (each of the k groups runs h/k of them).
        groups: group count k for G-MHA / G-LML.
        g_mha: G-MHA: Q/K/V projections run per group on d/k features.
        weight_sharing: one set of group weights serves all groups.
        qk_expansion: n; Q and K are projected to n*d features.
        g_lml: G-LML: W_O runs per group too.
        attention_sharing: ``none``, ``qk`` or ``kv`` (ACORT attention parameter sharing).
        kernel: ``standard`` or ``coupled``.
        grid: (h, w) token grid, required by the coupled kernel.
        relation_dim: width of ORT's box-relation embedding; 0 disables the relation term.
        dropout: dropout on the attention probabilities.
        qkv_bias: biases on the Q, K and V projections.
        coupled_scale: ``quarter`` or ``half``: the coupled kernel's logit scale (``CoupledAttention``).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        groups: int = 1,
        g_mha: bool = False,
        weight_sharing: bool = False,
        qk_expansion: int = 1,
        g_lml: bool = False,
        attention_sharing: str = "none",
        kernel: str = "standard",
        grid: tuple[int, int] | None = None,
        relation_dim: int = 0,
        dropout: float = 0.0,
        qkv_bias: bool = True,
        coupled_scale: str = "quarter",
    ):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) must be divisible by num_heads ({num_heads})")
        if g_mha and num_heads % groups:
            raise ValueError(f"num_heads ({num_heads}) must be divisible by groups ({groups})")
        if attention_sharing == "kv" and qk_expansion != 1:
            raise ValueError("`kv` sharing reuses the key as the value, so qk_expansion must be 1")
        self.num_heads, self.attention_sharing = num_heads, attention_sharing
        g = groups if g_mha else 1
        qk_dim = qk_expansion * dim

        def proj(out: int) -> GroupedLinear:
            return GroupedLinear(dim, out, g, weight_sharing, bias=qkv_bias)

        if attention_sharing == "none":
            self.q_proj, self.k_proj, self.v_proj = proj(qk_dim), proj(qk_dim), proj(dim)
        elif attention_sharing == "qk":
            self.qk_proj, self.v_proj = proj(qk_dim), proj(dim)
        elif attention_sharing == "kv":
            self.q_proj, self.kv_proj = proj(dim), proj(dim)
        else:
            raise ValueError(f"attention_sharing must be none, qk or kv, got {attention_sharing!r}")
        self.out_proj = GroupedLinear(dim, dim, groups if g_lml else 1, weight_sharing)
        self.relation = nn.Linear(relation_dim, num_heads) if relation_dim else None
        if kernel == "standard":
            self.kernel: nn.Module = ScaledDotProductAttention(dropout)
        elif kernel == "coupled":
            if grid is None:
                raise ValueError("the coupled kernel needs a grid (h, w)")
            self.kernel = CoupledAttention(grid, dropout, coupled_scale=coupled_scale)
        else:
            raise ValueError(f"kernel must be standard or coupled, got {kernel!r}")

    def project(self, x: torch.Tensor, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Q from ``x``, K and V from ``context``, reusing shared projections' outputs (ACORT Fig. 6)."""
        self_attention = context is x
        if self.attention_sharing == "qk":
            q = self.qk_proj(x)
            k = q if self_attention else self.qk_proj(context)
            return q, k, self.v_proj(context)
        if self.attention_sharing == "kv":
            k = self.kv_proj(context)
            return self.q_proj(x), k, k
        return self.q_proj(x), self.k_proj(context), self.v_proj(context)

    def relation_bias(self, relation: torch.Tensor) -> torch.Tensor:
        """(B, Tq, Tk, r) geometry embedding -> (B, H, Tq, Tk) logit offsets (ORT Eq. 6-7)."""
        if self.relation is None:
            raise ValueError("relation_bias needs the box-relation layer (built with relation_dim > 0)")
        w_g = F.relu(self.relation(relation))
        return torch.log(torch.clamp(w_g, min=1e-6)).permute(0, 3, 1, 2)

    def forward(
        self,
        x: torch.Tensor,
        context: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
        causal: bool = False,
        relation: torch.Tensor | None = None,
    ) -> torch.Tensor:
        context = x if context is None else context
        b, tq, d = x.shape
        tk = context.shape[1]
        q, k, v = self.project(x, context)
        h = self.num_heads
        # Heads are contiguous feature chunks, so with G-MHA heads [i*h/k, (i+1)*h/k) belong to group i.
        q = q.view(b, tq, h, -1).transpose(1, 2)  # (B, H, Tq, d_q)
        k = k.view(b, tk, h, -1).transpose(1, 2)  # (B, H, Tk, d_q)
        v = v.view(b, tk, h, -1).transpose(1, 2)  # (B, H, Tk, d_v)
        bias = self.relation_bias(relation) if self.relation is not None and relation is not None else None
        out = self.kernel(q, k, v, key_mask=key_mask, causal=causal, bias=bias)  # (B, H, Tq, d_v)
        # an explicit contiguous copy, not reshape: the ONNX exporter's SDPA decomposition changes the output's
        # strides after tracing, and a reshape traced as a view then fails (ORT's relation bias). Where the
        # kernel's layout made reshape a free view, this costs one copy of the (B, Tq, d) output.
        merged = out.transpose(1, 2).clone(memory_format=torch.contiguous_format).view(b, tq, d)
        return self.out_proj(merged)
