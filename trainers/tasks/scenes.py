"""Procedural captioned scenes shared by ``scene-captions`` and ``scene-retrieval``.

A scene has two salient objects and four clutter regions. Each object is an adjective-noun pair
drawn from Zipf-distributed vocabularies (3,000 nouns, 1,000 adjectives), seen through a fixed
random feature vector per word plus noise; clutter regions are noise with small boxes. The caption
is ``a <adj> <noun> <relation> a <adj> <noun>``, the larger object first and the relation read off
the two boxes (left, right, above, below). Word ids: pad 0, BOS 1, EOS 2, then the words, so the
vocabulary is several thousand words with a long tail: the regime where radix encoding matters.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .base import Split, Task
from .cache import cached

NOUNS, ADJECTIVES = 3000, 1000
RELATIONS = ("left", "right", "above", "below")
SPECIALS = ("<pad>", "<bos>", "<eos>")
FUNCTION_WORDS = ("a", *RELATIONS)
VOCAB = len(SPECIALS) + len(FUNCTION_WORDS) + NOUNS + ADJECTIVES
A_ID = len(SPECIALS)
RELATION_IDS = {r: A_ID + 1 + i for i, r in enumerate(RELATIONS)}
NOUN_BASE = A_ID + len(FUNCTION_WORDS)
ADJ_BASE = NOUN_BASE + NOUNS
REGIONS, REGION_FEATURES, CAPTION_WORDS = 6, 64, 7
SPLIT_SIZES = {"train": 20000, "val": 1000, "test": 1000}
ZIPF_EXPONENT = 1.1


def word_name(word_id: int) -> str:
    """Readable name of a word id (for logs and examples)."""
    if word_id < NOUN_BASE:
        return (*SPECIALS, *FUNCTION_WORDS)[word_id]
    return f"noun{word_id - NOUN_BASE}" if word_id < ADJ_BASE else f"adj{word_id - ADJ_BASE}"


def _zipf(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    p = 1.0 / np.arange(1, size + 1) ** ZIPF_EXPONENT
    return rng.choice(size, n, p=p / p.sum())


def generate(n: int, seed: int) -> dict[str, torch.Tensor]:
    """``n`` scenes: regions (n, 6, 64), boxes (n, 6, 4), captions (n, 7) word ids."""
    world = np.random.default_rng(12345)  # the word-feature "world" is the same for every split
    noun_vec = world.normal(0, 1, (NOUNS, REGION_FEATURES)).astype(np.float32)
    adj_vec = world.normal(0, 1, (ADJECTIVES, REGION_FEATURES)).astype(np.float32)
    rng = np.random.default_rng(seed)
    nouns, adjs = _zipf(rng, NOUNS, 2 * n).reshape(n, 2), _zipf(rng, ADJECTIVES, 2 * n).reshape(n, 2)
    size = np.sort(rng.uniform(0.15, 0.45, (n, 2)), axis=1)[:, ::-1]  # object 0 is the larger
    corner = rng.uniform(0, 1 - size[..., None], (n, 2, 2))
    obj_boxes = np.concatenate([corner, corner + size[..., None]], axis=-1)  # (n, 2, 4)
    clutter = rng.uniform(0, 0.9, (n, REGIONS - 2, 2))
    clutter_boxes = np.concatenate([clutter, clutter + rng.uniform(0.02, 0.1, (n, REGIONS - 2, 2))], -1)
    feats = rng.normal(0, 0.3, (n, REGIONS, REGION_FEATURES)).astype(np.float32)
    feats[:, :2] += noun_vec[nouns] + 0.5 * adj_vec[adjs]
    boxes = np.concatenate([obj_boxes, clutter_boxes], axis=1).astype(np.float32)
    centre = (obj_boxes[..., :2] + obj_boxes[..., 2:]) / 2  # (n, 2, 2)
    dx, dy = centre[:, 1, 0] - centre[:, 0, 0], centre[:, 1, 1] - centre[:, 0, 1]
    # relation of object 0 to object 1 along the axis where they are further apart
    relation = np.where(np.abs(dx) >= np.abs(dy), np.where(dx > 0, 0, 1), np.where(dy > 0, 2, 3))
    captions = np.stack(
        [
            np.full(n, A_ID),
            ADJ_BASE + adjs[:, 0],
            NOUN_BASE + nouns[:, 0],
            np.array([RELATION_IDS[RELATIONS[r]] for r in relation]),
            np.full(n, A_ID),
            ADJ_BASE + adjs[:, 1],
            NOUN_BASE + nouns[:, 1],
        ],
        axis=1,
    )
    order = np.argsort(rng.uniform(size=(n, REGIONS)), axis=1)  # region order carries no information
    feats = np.take_along_axis(feats, order[..., None], axis=1)
    boxes = np.take_along_axis(boxes, order[..., None], axis=1)
    return {
        "regions": torch.from_numpy(feats),
        "boxes": torch.from_numpy(boxes),
        "captions": torch.from_numpy(captions.astype(np.int64)),
    }


class SceneTask(Task):
    """Base of the tasks over these scenes: the same cached splits, a configurable train size."""

    caption_tokens = CAPTION_WORDS  # words the model reads or writes per caption

    def __init__(self, train_size: int = SPLIT_SIZES["train"]):
        self.sizes = dict(SPLIT_SIZES, train=train_size)

    def input_sizes(self):
        return {
            "image_regions": REGIONS,
            "region_features": REGION_FEATURES,
            "caption_tokens": self.caption_tokens,
            "vocab_size": VOCAB,
        }

    def load(self, seed: int = 0) -> dict[str, Split]:
        # Fixed data whatever the training seed; each split from its own generator seed.
        return {
            split: cached(f"scenes-v1-{split}-{n}", functools.partial(generate, n, 2000 + i))
            for i, (split, n) in enumerate(self.sizes.items())
        }
