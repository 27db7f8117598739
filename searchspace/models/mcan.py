"""Family ``mcan``: LW-Transformer's VQA baseline (MCAN encoder-decoder, Yu et al. 2019).

Question tokens go through a self-attention encoder; image regions through decoder layers of
self-attention, guided attention to the encoded question and FFN; all blocks post-LN. Both
outputs are pooled (``pooling``; MCAN uses attention pooling, AttFlat), fused by a sum, normalised
and classified. The paper counts parameters and MAdds of the 6+6 layers only (its footnote 3):
``encoder`` + ``decoder`` in the cost breakdown. The question embedding here is a plain lookup
table, where MCAN uses GloVe + LSTM (outside the counted layers either way).
"""

from __future__ import annotations

import torch
from torch import nn

from ..config import ArchConfig
from .base import ArchModel, decoder_stack, encoder_stack, make_pooling


class MCAN(ArchModel):
    SECTIONS = {
        "embeddings": ("embed_tokens", "embed_regions"),
        "encoder": ("encoder",),
        "decoder": ("decoder",),
        "head": ("pool_question", "pool_image", "proj_question", "proj_image", "norm", "classifier"),
    }

    def __init__(self, config: ArchConfig):
        super().__init__(config)
        c = config
        assert c.vocab_size is not None and c.region_features is not None and c.num_answers is not None  # defaults
        self.embed_tokens = nn.Embedding(c.vocab_size, c.d_model, padding_idx=0)
        self.embed_regions = nn.Linear(c.region_features, c.d_model)
        self.encoder = encoder_stack(c, pre_norm=False)
        self.decoder = decoder_stack(c, pre_norm=False, causal=False)
        self.pool_question, self.pool_image = make_pooling(c), make_pooling(c)
        self.proj_question = nn.Linear(self.pool_question.out_dim, c.d_model)
        self.proj_image = nn.Linear(self.pool_image.out_dim, c.d_model)
        self.norm = nn.LayerNorm(c.d_model)
        self.classifier = nn.Linear(c.d_model, c.num_answers)

    def forward(
        self, question: torch.Tensor, regions: torch.Tensor, region_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """question (B, Tq) token ids (0 = pad), regions (B, R, F) -> (B, num_answers) logits."""
        q_mask = question != 0
        q = self.embed_tokens(question)  # (B, Tq, d)
        for layer in self.encoder:
            q = layer(q, mask=q_mask)
        x = self.embed_regions(regions)  # (B, R, d)
        for layer in self.decoder:
            x = layer(x, q, mask=region_mask, memory_mask=q_mask)
        fused = self.proj_question(self.pool_question(q, q_mask)) + self.proj_image(self.pool_image(x, region_mask))
        return self.classifier(self.norm(fused))

    def example_inputs(self, batch=1, device="cpu"):
        c = self.config
        question = torch.randint(1, c.vocab_size, (batch, c.question_tokens), device=device)
        return question, torch.randn(batch, c.image_regions, c.region_features, device=device)
