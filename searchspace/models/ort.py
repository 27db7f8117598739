"""Family ``ort``: ACORT's captioning baseline, the Object Relation Transformer (Herdade et al. 2019).

Region features -> ``Linear(2048, d)`` + ReLU; a pre-LN encoder whose self-attention adds ORT's
box-relation term (h x ``Linear(64, 1)`` per layer on a 64-d sinusoidal embedding of pairwise box
geometry); a pre-LN decoder with masked self-attention and cross-attention; token embedding scaled
by sqrt(d) plus sinusoidal positions; an untied output layer ``Linear(d, V)`` with bias. With
``radix_base`` v the tokens are radix digits and V = v + 3 (ACORT §4.1).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..config import ArchConfig
from ..radix import RadixCodec
from .base import ArchModel, decoder_stack, encoder_stack, sinusoidal_positions

RELATION_DIM = 64  # ORT's geometry embedding width (dim_g)


def box_relation_embedding(boxes: torch.Tensor, dim: int = RELATION_DIM, wave_len: float = 1000.0) -> torch.Tensor:
    """(B, R, 4) boxes (x0, y0, x1, y1) in 0-1 image coordinates -> (B, R, R, dim) sinusoidal embedding
    of pairwise geometry: log(|cx_i - cx_j| / w_i), log(|cy_i - cy_j| / h_i), log(w_i / w_j), log(h_i / h_j).

    As in the authors' released ``BoxRelationalEmbedding`` (jiahuei/sparse-image-captioning, from the
    ORT code), w and h are the box sizes plus 1.0 and the size ratios run i over j; the ORT paper
    writes log(w_j / w_i) and no offset (docs/paper-fidelity.md).
    """
    x0, y0, x1, y1 = boxes.unbind(-1)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    # With 0-1 boxes the +1.0 keeps w, h >= 1; the clamp only matters for boxes outside that range,
    # where the authors' log would give -inf or NaN.
    w, h = (x1 - x0 + 1.0).clamp(min=1e-3), (y1 - y0 + 1.0).clamp(min=1e-3)
    dx = torch.log(((cx[:, :, None] - cx[:, None, :]).abs() / w[:, :, None]).clamp(min=1e-3))
    dy = torch.log(((cy[:, :, None] - cy[:, None, :]).abs() / h[:, :, None]).clamp(min=1e-3))
    dw = torch.log(w[:, :, None] / w[:, None, :])
    dh = torch.log(h[:, :, None] / h[:, None, :])
    position = torch.stack([dx, dy, dw, dh], dim=-1) * 100.0  # (B, R, R, 4)
    freqs = torch.arange(dim // 8, device=boxes.device, dtype=boxes.dtype)
    inv = 1.0 / (wave_len ** (freqs / (dim // 8)))
    angles = (position.unsqueeze(-1) * inv).flatten(-2)  # (B, R, R, dim/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class ORT(ArchModel):
    SECTIONS = {
        "embeddings": ("embed_regions", "embed_tokens"),
        "encoder": ("encoder", "encoder_norm"),
        "decoder": ("decoder", "decoder_norm"),
        "head": ("generator",),
    }

    def __init__(self, config: ArchConfig):
        super().__init__(config)
        c = config
        assert c.vocab_size is not None and c.region_features is not None  # filled by the family's defaults
        self.codec = RadixCodec(c.radix_base, c.vocab_size) if c.radix_base else None
        self.num_tokens = self.codec.vocab_size if self.codec else c.vocab_size
        self.embed_regions = nn.Sequential(nn.Linear(c.region_features, c.d_model), nn.ReLU(), nn.Dropout(c.dropout))
        self.encoder = encoder_stack(c, pre_norm=True, relation_dim=RELATION_DIM)
        self.encoder_norm = nn.LayerNorm(c.d_model)
        self.embed_tokens = nn.Embedding(self.num_tokens, c.d_model)
        self.drop = nn.Dropout(c.dropout)
        self.decoder = decoder_stack(c, pre_norm=True, causal=True)
        self.decoder_norm = nn.LayerNorm(c.d_model)
        self.generator = nn.Linear(c.d_model, self.num_tokens)

    @property
    def sequence_length(self) -> int:
        """Decoder input length: one token per word, or ``digits`` per word with radix encoding, plus BOS."""
        per_word = self.codec.digits if self.codec else 1
        words = self.config.caption_tokens
        assert words is not None  # filled by the family's defaults
        return words * per_word + 1

    def encode(self, regions: torch.Tensor, boxes: torch.Tensor, region_mask: torch.Tensor | None = None):
        relation = box_relation_embedding(boxes)  # shared by every encoder layer
        x = self.embed_regions(regions)
        for layer in self.encoder:
            x = layer(x, mask=region_mask, relation=relation)
        return self.encoder_norm(x)

    def decode(self, memory: torch.Tensor, tokens: torch.Tensor, region_mask: torch.Tensor | None = None):
        t = tokens.shape[1]
        y = self.embed_tokens(tokens) * math.sqrt(self.config.d_model)
        y = self.drop(y + sinusoidal_positions(t, self.config.d_model, tokens.device).to(y.dtype))
        mask = tokens != 0
        for layer in self.decoder:
            y = layer(y, memory, mask=mask, memory_mask=region_mask)
        return self.generator(self.decoder_norm(y))  # (B, T, V)

    def forward(
        self, regions: torch.Tensor, boxes: torch.Tensor, tokens: torch.Tensor, region_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """regions (B, R, F), boxes (B, R, 4), tokens (B, T) decoder input -> (B, T, V) logits."""
        return self.decode(self.encode(regions, boxes, region_mask), tokens, region_mask)

    def example_inputs(self, batch=1, device="cpu"):
        c = self.config
        regions = torch.randn(batch, c.image_regions, c.region_features, device=device)
        xy = torch.rand(batch, c.image_regions, 2, device=device) * 0.5
        boxes = torch.cat([xy, xy + 0.1 + torch.rand(batch, c.image_regions, 2, device=device) * 0.4], dim=-1)
        tokens = torch.randint(1, self.num_tokens, (batch, self.sequence_length), device=device)
        return regions, boxes, tokens
