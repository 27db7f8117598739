"""The lightweight-Transformer architecture space: knobs, validated configurations and models.

The knob vocabulary and the study language import without torch; the models (which need it) load
on first use of ``FAMILY_MODELS``, ``ArchModel``, ``build_model`` or ``RadixCodec``.
"""

from typing import Any

from .config import FAMILIES, FAMILY_DEFAULTS, ArchConfig, knob_names
from .errors import ConfigError
from .sharing import format_pattern, generate_pattern, parse_pattern

_LAZY = {"FAMILY_MODELS": "models", "ArchModel": "models", "build_model": "models", "RadixCodec": "radix"}

__all__ = [
    "FAMILIES",
    "FAMILY_DEFAULTS",
    "FAMILY_MODELS",
    "ArchModel",
    "ArchConfig",
    "ConfigError",
    "RadixCodec",
    "build_model",
    "format_pattern",
    "generate_pattern",
    "knob_names",
    "parse_pattern",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'searchspace' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value
