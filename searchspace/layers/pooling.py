"""Sequence pooling into one global vector: mean, attention (MCAN's AttFlat) or a T-EMDE sketch."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _valid(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """(B, T) bool mask of real tokens (all True when no mask is given)."""
    return torch.ones(x.shape[:2], dtype=torch.bool, device=x.device) if mask is None else mask


class Pool(nn.Module):
    """A pooling module: ``(B, T, dim)`` tokens (and a ``(B, T)`` mask) to ``(B, out_dim)``."""

    out_dim: int


class MeanPool(Pool):
    """Average of the real tokens."""

    def __init__(self, dim: int):
        super().__init__()
        self.out_dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        m = _valid(x, mask).unsqueeze(-1).to(x.dtype)  # (B, T, 1)
        return (x * m).sum(1) / m.sum(1).clamp(min=1)


class AttentionPool(Pool):
    """Learned softmax weights over tokens (MCAN's AttFlat with one glimpse)."""

    def __init__(self, dim: int, dropout: float = 0.0):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(dim, 1))
        self.out_dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.score(x).squeeze(-1)  # (B, T)
        logits = logits.masked_fill(~_valid(x, mask), float("-inf"))
        return torch.einsum("bt,btd->bd", logits.softmax(-1), x)


class SketchCoder(nn.Module):
    """T-EMDE's coder (Listing 1): soft assignment of each token to K centroids in N divisions."""

    def __init__(self, dim: int, n: int, k: int, d: int):
        super().__init__()
        self.n, self.k, self.d = n, k, d
        self.proj = nn.Linear(dim, n * k * d)
        self.norm = nn.BatchNorm1d(n * k * d)
        self.centroids = nn.Parameter(torch.randn(n * k * d))
        self.temp = nn.Parameter(torch.ones(1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(M, dim) tokens -> (M, N*K) soft assignments."""
        x = self.norm(self.proj(tokens))
        # Each centroid gets its own projected point: squared distance summed over D.
        dists = ((x - self.centroids) ** 2).view(-1, self.n * self.k, self.d).sum(-1).view(-1, self.n, self.k)
        return F.softmax(-dists * self.temp, dim=-1).view(-1, self.n * self.k)


class SketchPool(Pool):
    """T-EMDE sketch (§3.2): sum the coder's assignments over real tokens, L2-normalise each of the
    N slices, flatten to N*K. Padding is dropped before the coder, so BatchNorm statistics and the
    sum see real tokens only."""

    def __init__(self, dim: int, n: int, k: int, d: int = 8):
        super().__init__()
        self.coder = SketchCoder(dim, n, k, d)
        self.out_dim = n * k

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t, _ = x.shape
        if mask is None:  # every token is real: no gather/scatter needed
            per_token = self.coder(x.reshape(b * t, -1)).view(b, t, self.out_dim)
        elif not self.training:
            # BatchNorm uses its running statistics in eval mode, so each token's code is independent of the
            # others: code every token and zero the padding. Same values as the gather below, without its
            # data-dependent shape (M), which torch.export and ONNX cannot trace with a dynamic batch.
            coded = self.coder(x.reshape(b * t, -1)).view(b, t, self.out_dim)
            per_token = torch.where(mask.unsqueeze(-1), coded, torch.zeros_like(coded))
        else:
            coded = self.coder(x[mask])  # (M, N*K) for the M real tokens of the batch
            per_token = x.new_zeros(b, t, self.out_dim).masked_scatter(mask.unsqueeze(-1), coded)
        summed = per_token.sum(1).view(b, self.coder.n, self.coder.k)  # (B, N, K)
        return F.normalize(summed, dim=-1).view(b, self.out_dim)


def build_pooling(
    kind: str, dim: int, n: int | None = None, k: int | None = None, d: int | None = None, dropout: float = 0.0
) -> Pool:
    """Pooling module by knob value (``mean``, ``attention``, ``sketch``; a sketch needs ``n``, ``k`` and ``d``)."""
    if kind == "mean":
        return MeanPool(dim)
    if kind == "attention":
        return AttentionPool(dim, dropout)
    if kind == "sketch":
        if n is None or k is None or d is None:
            raise ValueError(f"sketch pooling needs its sizes n, k and d, got {n=}, {k=}, {d=}")
        return SketchPool(dim, n, k, d)
    raise ValueError(f"pooling must be mean, attention or sketch, got {kind!r}")
