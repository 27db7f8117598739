"""Shared pieces of every model family: the layer factories and the ``ArchModel`` base."""

from __future__ import annotations

import math

import torch
from torch import nn

from ..config import COUPLED_DEFAULT, ArchConfig
from ..layers import DecoderLayer, EncoderLayer, FeedForward, MultiHeadAttention, Pool, SharedStack, build_pooling


class ArchModel(nn.Module):
    """A model built from one ``ArchConfig``.

    ``SECTIONS`` maps each cost-breakdown section (``embeddings``, ``encoder``, ``decoder``,
    ``head``) to the names of the top-level children it owns, so the cost model can attribute
    parameters and MAdds without knowing the family.
    """

    SECTIONS: dict[str, tuple[str, ...]] = {}

    def __init__(self, config: ArchConfig):
        super().__init__()
        self.config = config

    def example_inputs(self, batch: int = 1, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
        """Inputs of the configured sizes, in ``forward``'s argument order (for the cost model)."""
        raise NotImplementedError(f"{type(self).__name__} must define example_inputs")


def make_pooling(cfg: ArchConfig) -> Pool:
    """The family's pooling (``pooling``; a sketch sized by ``sketch_n``, ``sketch_k``, ``sketch_d``)."""
    if cfg.pooling is None:
        raise ValueError(f"family {cfg.family} has no `pooling`")
    return build_pooling(cfg.pooling, cfg.d_model, cfg.sketch_n, cfg.sketch_k, cfg.sketch_d, cfg.dropout)


def make_attention(cfg: ArchConfig, stack: str, kernel: str = "standard", relation_dim: int = 0) -> MultiHeadAttention:
    return MultiHeadAttention(
        cfg.d_model,
        cfg.heads,
        groups=cfg.groups,
        g_mha=cfg.g_mha,
        weight_sharing=cfg.weight_sharing,
        qk_expansion=cfg.qk_expansion,
        g_lml=cfg.g_lml,
        attention_sharing=cfg.attention_sharing_of(stack),
        kernel=kernel,
        grid=cfg.grid if kernel == "coupled" else None,
        relation_dim=relation_dim,
        dropout=cfg.dropout,
        qkv_bias=cfg.qkv_bias,
        coupled_scale=cfg.coupled_scale or COUPLED_DEFAULT,
    )


def make_ffn(cfg: ArchConfig) -> FeedForward:
    return FeedForward(
        cfg.d_model,
        cfg.ffn_dim,
        groups=cfg.groups,
        g_ffn=cfg.g_ffn,
        g_il=cfg.g_il,
        weight_sharing=cfg.weight_sharing,
        dropout=cfg.dropout,
    )


def encoder_stack(cfg: ArchConfig, pre_norm: bool, kernel: str = "standard", relation_dim: int = 0) -> SharedStack:
    def layer() -> EncoderLayer:
        attn = make_attention(cfg, "encoder", kernel, relation_dim)
        return EncoderLayer(attn, make_ffn(cfg), cfg.d_model, pre_norm, cfg.dropout)

    return SharedStack(layer, cfg.sharing_pattern("encoder"))


def decoder_stack(cfg: ArchConfig, pre_norm: bool, causal: bool) -> SharedStack:
    def layer() -> DecoderLayer:
        return DecoderLayer(
            make_attention(cfg, "decoder"),
            make_attention(cfg, "decoder"),
            make_ffn(cfg),
            cfg.d_model,
            pre_norm,
            causal,
            cfg.dropout,
        )

    return SharedStack(layer, cfg.sharing_pattern("decoder"))


def sinusoidal_positions(length: int, dim: int, device=None) -> torch.Tensor:
    """(length, dim) fixed sinusoidal encodings (Vaswani et al.), as ORT's decoder uses."""
    pos = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(length, dim, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : dim // 2]
    return pe
