"""Deterministic generated data, cached on disk so each process generates a data set once."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch


def cache_dir() -> Path:
    """``$LWNAS_CACHE`` or ``~/.cache/lwnas``."""
    return Path(os.environ.get("LWNAS_CACHE", Path.home() / ".cache" / "lwnas"))


def cached(key: str, build: Callable[[], dict]) -> dict:
    """Load ``key`` from the cache, or build it and store it atomically (safe with parallel trials)."""
    path = cache_dir() / f"{key}.pt"
    if path.exists():
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # a truncated file from a killed writer: rebuild it
            path.unlink(missing_ok=True)
    data = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(data, tmp)
    os.replace(tmp, path)
    return data
