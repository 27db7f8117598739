"""Coupled attention (Couplformer §3, Eq. 7): two small maps instead of one (hw)x(hw) map.

For a token grid of h rows and w columns, row attention ``A`` (h x h) compares whole rows and
column attention ``B`` (w x w) whole columns; each channel's output is
``softmax(A) . V_c . softmax(B)^T``. This equals ``(softmax(A) kron softmax(B)) . vec(V)``
without ever forming the Kronecker product.
"""

from __future__ import annotations

import torch
from torch import nn


class CoupledAttention(nn.Module):
    """Attention kernel over a fixed ``grid = (h, w)``; q, k, v arrive as ``(B, H, h*w, d)``."""

    def __init__(self, grid: tuple[int, int], dropout: float = 0.0):
        super().__init__()
        self.grid = tuple(grid)
        self.drop = nn.Dropout(dropout)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_mask: torch.Tensor | None = None,
                causal: bool = False, bias: torch.Tensor | None = None) -> torch.Tensor:
        if causal or bias is not None or key_mask is not None:
            raise ValueError("coupled attention runs on a full 2-D grid: no causal mask, padding or bias")
        gh, gw = self.grid
        b, n, t, c = q.shape
        if t != gh * gw:
            raise ValueError(f"coupled attention built for grid {gh}x{gw} ({gh * gw} tokens) got {t} tokens")
        # Couplformer's code scales q and k by c^-0.25 each, i.e. the logits by 1/sqrt(c).
        scale = c**-0.25
        q = (q * scale).view(b, n, gh, gw, c)
        k = (k * scale).view(b, n, gh, gw, k.shape[-1])
        v = v.view(b, n, gh, gw, v.shape[-1])
        rows = torch.einsum("bnhwc,bnjwc->bnhj", q, k).softmax(-1)  # (B, H, h, h)
        cols = torch.einsum("bnhwc,bnhvc->bnwv", q, k).softmax(-1)  # (B, H, w, w)
        rows, cols = self.drop(rows), self.drop(cols)
        out = torch.einsum("bnhj,bnjvc->bnhvc", rows, v)  # softmax(A) . V_c  (B, H, h, w, c)
        out = torch.einsum("bnhvc,bnwv->bnhwc", out, cols)  # ... . softmax(B)^T
        return out.reshape(b, n, t, -1)

    @staticmethod
    def map_numel(q: torch.Tensor, k: torch.Tensor, grid: tuple[int, int]) -> int:
        """Elements of the attention maps this kernel keeps: H*(h^2 + w^2) per sample."""
        return q.shape[0] * q.shape[1] * (grid[0] ** 2 + grid[1] ** 2)
