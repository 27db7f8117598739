"""Feed-forward networks: the standard FFN and LW-Transformer's G-FFN (Eq. 7-8, Tab. III)."""

from __future__ import annotations

import torch
from torch import nn

from .grouped_linear import GroupedLinear


class FeedForward(nn.Module):
    """``fc2(dropout(relu(fc1(x))))``.

    Args:
        dim: model width d.
        hidden: inner width d_ff.
        groups: group count k used by the grouped layers.
        g_ffn: G-FFN: the second layer runs in k groups (Eq. 8); the first stays dense.
        g_il: G-IL: the first layer runs in k groups as well (Tab. III).
        weight_sharing: one set of group weights serves all k groups.
        dropout: dropout on the hidden activation.
    """

    def __init__(
        self,
        dim: int,
        hidden: int,
        groups: int = 1,
        g_ffn: bool = False,
        g_il: bool = False,
        weight_sharing: bool = False,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.fc1 = GroupedLinear(dim, hidden, groups if g_il else 1, weight_sharing)
        self.fc2 = GroupedLinear(hidden, dim, groups if g_ffn else 1, weight_sharing)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(self.act(self.fc1(x))))
