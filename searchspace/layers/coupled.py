"""Coupled attention (Couplformer §3, Eq. 7): two small maps instead of one (hw)x(hw) map.

For a token grid of h rows and w columns, row attention ``A`` (h x h) compares whole rows and
column attention ``B`` (w x w) whole columns; each channel's output is
``softmax(A) . V_c . softmax(B)^T``. This equals ``(softmax(A) kron softmax(B)) . vec(V)``
without ever forming the Kronecker product.

``coupled_scale`` is the power of the head size c that multiplies each logit map: ``quarter``
(c^-1/4, the authors' released code: wer010/Couplformer ``transformers_kronecker.py`` ``Attention``
and ``vic.py`` ``CouplingAttention``, 2022) or ``half`` (c^-1/2, their 2021 code and standard
attention's 1/sqrt(c)).
"""

from __future__ import annotations

import torch
from torch import nn

SCALE_POWERS = {"quarter": -0.25, "half": -0.5}  # coupled_scale -> power of the head size c (ArchConfig.coupled_scale)


class CoupledAttention(nn.Module):
    """Attention kernel over a fixed ``grid = (h, w)``; q, k, v arrive as ``(B, H, h*w, d)``."""

    def __init__(self, grid: tuple[int, int], dropout: float = 0.0, coupled_scale: str = "quarter"):
        super().__init__()
        if coupled_scale not in SCALE_POWERS:
            raise ValueError(f"coupled_scale must be one of {', '.join(SCALE_POWERS)}, got {coupled_scale!r}")
        self.grid, self.coupled_scale = tuple(grid), coupled_scale
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        causal: bool = False,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if causal or bias is not None or key_mask is not None:
            raise ValueError("coupled attention runs on a full 2-D grid: no causal mask, padding or bias")
        gh, gw = self.grid
        b, n, t, c = q.shape
        if t != gh * gw:
            raise ValueError(f"coupled attention built for grid {gh}x{gw} ({gh * gw} tokens) got {t} tokens")
        scale = c ** SCALE_POWERS[self.coupled_scale]  # once on each logit map, as the authors' code does
        q = q.view(b, n, gh, gw, c)
        k = k.view(b, n, gh, gw, k.shape[-1])
        v = v.view(b, n, gh, gw, v.shape[-1])
        rows = (torch.einsum("bnhwc,bnjwc->bnhj", q, k) * scale).softmax(-1)  # (B, H, h, h)
        cols = (torch.einsum("bnhwc,bnhvc->bnwv", q, k) * scale).softmax(-1)  # (B, H, w, w)
        rows, cols = self.drop(rows), self.drop(cols)
        out = torch.einsum("bnhj,bnjvc->bnhvc", rows, v)  # softmax(A) . V_c  (B, H, h, w, c)
        out = torch.einsum("bnhvc,bnwv->bnhwc", out, cols)  # ... . softmax(B)^T
        return out.reshape(b, n, t, -1)

    def extra_repr(self) -> str:
        return f"grid={self.grid}, coupled_scale={self.coupled_scale!r}"

    @staticmethod
    def map_numel(q: torch.Tensor, k: torch.Tensor, grid: tuple[int, int]) -> int:
        """Elements of the attention maps this kernel keeps: H*(h^2 + w^2) per sample."""
        return q.shape[0] * q.shape[1] * (grid[0] ** 2 + grid[1] ** 2)
