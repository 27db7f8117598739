"""The lightweight-Transformer architecture space: knobs, validated configurations and models."""

from .config import FAMILIES, FAMILY_DEFAULTS, ArchConfig, knob_names
from .errors import ConfigError
from .models import FAMILY_MODELS, ArchModel, build_model
from .radix import RadixCodec
from .sharing import format_pattern, generate_pattern, parse_pattern

__all__ = ["FAMILIES", "FAMILY_DEFAULTS", "FAMILY_MODELS", "ArchConfig", "ArchModel", "ConfigError", "RadixCodec",
           "build_model", "format_pattern", "generate_pattern", "knob_names", "parse_pattern"]
