"""Words of questions and captions: tokenising, vocabularies built from the training text, encoding."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .data_files import regular_file

PAD, UNK = "<pad>", "<unk>"
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[str]:
    """Lower-cased words; punctuation dropped (as the VQA and Karpathy preprocessing do)."""
    return _WORD.findall(text.lower())


def build_vocab(sentences: Iterable[list[str]], min_count: int, specials: tuple[str, ...]) -> list[str]:
    """``specials``, then the words seen at least ``min_count`` times, most frequent first (ties by spelling)."""
    counts = Counter(w for s in sentences for w in s)
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [*specials, *kept]


def encode(sentences: list[list[str]], vocab: list[str], length: int) -> np.ndarray:
    """(N, length) word ids, 0-padded and cut at ``length``; unknown words are ``<unk>``."""
    index = {w: i for i, w in enumerate(vocab)}
    unk = index[UNK]
    out = np.zeros((len(sentences), length), dtype=np.int32)
    for i, s in enumerate(sentences):
        ids = [index.get(w, unk) for w in s[:length]]
        out[i, : len(ids)] = ids
    return out


def read_json(path: Path, what: str) -> Any:
    """A JSON file, or ValueError naming it and where it stops being JSON.

    Read as bytes: JSON is UTF-8 (json detects UTF-16/32 too), whatever the locale's encoding is.
    """
    regular_file(path, what)
    try:
        return json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what}: {path} is not valid JSON: {exc}") from None
    except RecursionError:  # json's parser recurses once per level of nesting
        raise ValueError(f"{what}: {path} nests its arrays or objects too deeply to be data") from None


def field(entry: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``entry[key]`` checked to be a ``kind``; ValueError naming the entry and what is wrong."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is a {type(entry).__name__}, not an object")
    if key not in entry:
        raise ValueError(f"{where} has no `{key}`")
    value = entry[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValueError(f"{where}: `{key}` must be {names}, got {value!r:.60}")
    return value
