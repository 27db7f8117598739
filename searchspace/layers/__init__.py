"""PyTorch building blocks, one family per module (like timm's ``layers/``)."""

from .attention import MultiHeadAttention, ScaledDotProductAttention
from .blocks import DecoderLayer, EncoderLayer, SharedStack
from .coupled import CoupledAttention
from .grouped_linear import GroupedLinear
from .mlp import FeedForward
from .pooling import AttentionPool, MeanPool, Pool, SketchCoder, SketchPool, build_pooling

__all__ = [
    "AttentionPool",
    "CoupledAttention",
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "GroupedLinear",
    "MeanPool",
    "MultiHeadAttention",
    "Pool",
    "ScaledDotProductAttention",
    "SharedStack",
    "SketchCoder",
    "SketchPool",
    "build_pooling",
]
