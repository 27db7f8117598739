"""Family ``retrieval``: image and text towers whose global vectors come from ``pooling``.

T-EMDE's setting: each tower is an encoder; its tokens are pooled by mean, attention or a T-EMDE
sketch. The similarity head follows T-EMDE §3.3: the two global vectors are concatenated (not
subtracted), mapped by Linear + ReLU, then scored by a final Linear. Computing the first Linear as
``W_i g_i + W_t g_t`` scores every image-text pair of a batch without materialising the pairs'
concatenations.
"""

from __future__ import annotations

import torch
from torch import nn

from ..config import ArchConfig
from .base import ArchModel, encoder_stack, make_pooling


class Retrieval(ArchModel):
    SECTIONS = {
        "embeddings": ("embed_regions", "embed_tokens", "pos_embed"),
        "encoder": ("image_encoder", "text_encoder", "image_norm", "text_norm"),
        "head": ("pool_image", "pool_text", "sim_image", "sim_text", "sim_out"),
    }

    def __init__(self, config: ArchConfig):
        super().__init__(config)
        c = config
        assert c.region_features is not None and c.vocab_size is not None and c.caption_tokens is not None  # defaults
        self.embed_regions = nn.Linear(c.region_features, c.d_model)
        self.embed_tokens = nn.Embedding(c.vocab_size, c.d_model, padding_idx=0)
        self.pos_embed = nn.Parameter(torch.zeros(1, c.caption_tokens, c.d_model))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.image_encoder = encoder_stack(c, pre_norm=True)
        self.text_encoder = encoder_stack(c, pre_norm=True)
        self.image_norm, self.text_norm = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.pool_image, self.pool_text = make_pooling(c), make_pooling(c)
        g = self.pool_image.out_dim
        self.sim_image = nn.Linear(g, c.d_model)  # the concatenation's Linear, split by input half
        self.sim_text = nn.Linear(g, c.d_model, bias=False)
        self.sim_out = nn.Linear(c.d_model, 1)

    def embed_image(self, regions: torch.Tensor, region_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed_regions(regions)
        for layer in self.image_encoder:
            x = layer(x, mask=region_mask)
        return self.pool_image(self.image_norm(x), region_mask)

    def embed_text(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = tokens != 0
        x = self.embed_tokens(tokens) + self.pos_embed[:, : tokens.shape[1]]
        for layer in self.text_encoder:
            x = layer(x, mask=mask)
        return self.pool_text(self.text_norm(x), mask)

    def score(self, image: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        """(Bi, g), (Bt, g) global vectors -> (Bi, Bt) similarity of every pair."""
        hidden = torch.relu(self.sim_image(image)[:, None, :] + self.sim_text(text)[None, :, :])
        return self.sim_out(hidden).squeeze(-1)

    def forward(
        self, regions: torch.Tensor, tokens: torch.Tensor, region_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """regions (B, R, F), tokens (B, T) -> (B, B) image-text scores (diagonal = matching pairs)."""
        return self.score(self.embed_image(regions, region_mask), self.embed_text(tokens))

    def example_inputs(self, batch=1, device="cpu"):
        c = self.config
        regions = torch.randn(batch, c.image_regions, c.region_features, device=device)
        return regions, torch.randint(1, c.vocab_size, (batch, c.caption_tokens), device=device)
