"""Model families, all built from the same blocks and selected by ``family``."""

from __future__ import annotations

from ..config import ArchConfig
from .base import ArchModel
from .encoder import EncoderClassifier
from .mcan import MCAN
from .ort import ORT, box_relation_embedding
from .retrieval import Retrieval

FAMILY_MODELS: dict[str, type[ArchModel]] = {
    "encoder": EncoderClassifier,
    "mcan": MCAN,
    "ort": ORT,
    "retrieval": Retrieval,
}


def build_model(config: ArchConfig | dict) -> ArchModel:
    """Build the ``nn.Module`` for one configuration (validated first if given as a dict)."""
    if isinstance(config, dict):
        config = ArchConfig.from_dict(config)
    return FAMILY_MODELS[config.family](config)


__all__ = [
    "ArchModel",
    "EncoderClassifier",
    "FAMILY_MODELS",
    "MCAN",
    "ORT",
    "Retrieval",
    "box_relation_embedding",
    "build_model",
]
