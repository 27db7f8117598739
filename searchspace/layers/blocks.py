"""Transformer layers (pre- or post-LN) and stacks with ACORT cross-layer sharing."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .attention import MultiHeadAttention
from .mlp import FeedForward


class EncoderLayer(nn.Module):
    """Self-attention + FFN. Post-LN (MCAN): ``LN(x + f(x))``; pre-LN (ORT, ViT): ``x + f(LN(x))``."""

    def __init__(self, attn: MultiHeadAttention, ffn: FeedForward, dim: int, pre_norm: bool, dropout: float):
        super().__init__()
        self.attn, self.ffn, self.pre_norm = attn, ffn, pre_norm
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, relation: torch.Tensor | None = None
    ) -> torch.Tensor:
        x = _residual(x, self.norm1, self.pre_norm, self.drop, lambda h: self.attn(h, key_mask=mask, relation=relation))
        return _residual(x, self.norm2, self.pre_norm, self.drop, self.ffn)


class DecoderLayer(nn.Module):
    """Self-attention, cross-attention to a memory (MCAN's guided attention, ORT's encoder-decoder
    attention) and FFN: three sublayers."""

    def __init__(
        self,
        self_attn: MultiHeadAttention,
        cross_attn: MultiHeadAttention,
        ffn: FeedForward,
        dim: int,
        pre_norm: bool,
        causal: bool,
        dropout: float,
    ):
        super().__init__()
        self.self_attn, self.cross_attn, self.ffn = self_attn, cross_attn, ffn
        self.pre_norm, self.causal = pre_norm, causal
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        x = _residual(
            x, self.norm1, self.pre_norm, self.drop, lambda h: self.self_attn(h, key_mask=mask, causal=self.causal)
        )
        x = _residual(
            x, self.norm2, self.pre_norm, self.drop, lambda h: self.cross_attn(h, memory, key_mask=memory_mask)
        )
        return _residual(x, self.norm3, self.pre_norm, self.drop, self.ffn)


def _residual(
    x: torch.Tensor, norm: nn.LayerNorm, pre_norm: bool, drop: nn.Dropout, fn: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    if pre_norm:
        return x + drop(fn(norm(x)))
    return norm(x + drop(fn(x)))


class SharedStack(nn.Module):
    """Layers applied in the order ``pattern`` gives (ACORT §4.2): ``pattern[i]`` names the
    independent layer used at depth i, so shared depths reuse the very same module, LayerNorms
    included, and its parameters exist once."""

    def __init__(self, make_layer: Callable[[], nn.Module], pattern: tuple[int, ...]):
        super().__init__()
        self.pattern = tuple(pattern)
        self.blocks = nn.ModuleList(make_layer() for _ in range(max(pattern) + 1))

    def __iter__(self):
        return (self.blocks[i] for i in self.pattern)

    def __len__(self) -> int:
        return len(self.pattern)

    def extra_repr(self) -> str:
        return f"pattern={self.pattern}"
