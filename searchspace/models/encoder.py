"""Family ``encoder``: ViT-style classifier over an h x w grid of patch features.

No CLS token: Couplformer's coupled attention needs the tokens to form the full grid, so the
sequence is pooled (``pooling``) before the classification head.
"""

from __future__ import annotations

import torch
from torch import nn

from ..config import ArchConfig
from .base import ArchModel, encoder_stack, make_pooling


class EncoderClassifier(ArchModel):
    SECTIONS = {"embeddings": ("patch_embed", "pos_embed"), "encoder": ("encoder", "norm"), "head": ("pool", "head")}

    def __init__(self, config: ArchConfig):
        super().__init__(config)
        c = config
        assert c.grid is not None and c.patch_features is not None and c.num_classes is not None  # family defaults
        tokens = c.grid[0] * c.grid[1]
        self.patch_embed = nn.Linear(c.patch_features, c.d_model)
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, c.d_model))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.drop = nn.Dropout(c.dropout)
        self.encoder = encoder_stack(c, pre_norm=True, kernel=c.attention)
        self.norm = nn.LayerNorm(c.d_model)
        self.pool = make_pooling(c)
        self.head = nn.Linear(self.pool.out_dim, c.num_classes)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        """(B, h*w, patch_features) -> (B, num_classes) logits."""
        x = self.drop(self.patch_embed(patches) + self.pos_embed)  # (B, T, d)
        for layer in self.encoder:
            x = layer(x)
        return self.head(self.pool(self.norm(x)))

    def example_inputs(self, batch=1, device="cpu"):
        c = self.config
        return (torch.randn(batch, c.grid[0] * c.grid[1], c.patch_features, device=device),)
