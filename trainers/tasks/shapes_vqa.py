"""``shapes-vqa``: procedurally generated relational VQA in the spirit of Sort-of-CLEVR.

Each scene holds six objects, one per colour, each with a shape and a position. Regions are the
objects' features (one-hot colour and shape, position, noise); questions are templated token
sequences, half non-relational (the shape or side of one object) and half relational (the shape of
the object closest to it, the colour of the one furthest from it, how many share its shape), which
need attention across regions. Answers are classified among 17 words.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import accuracy
from .base import Split, Task, batches
from .cache import cached

COLOURS = ("red", "green", "blue", "orange", "gray", "yellow")
SHAPES = ("circle", "square", "triangle")
ANSWERS = (*SHAPES, "yes", "no", *COLOURS, *map(str, range(1, 7)))
TEMPLATES = (
    "what shape is the {c} object",
    "is the {c} object on the left",
    "is the {c} object on the top",
    "what shape is the object closest to the {c} object",
    "what color is the object furthest from the {c} object",
    "how many objects have the shape of the {c} object",
)
WORDS = ("<pad>", *sorted({w for t in TEMPLATES for w in t.split() if w != "{c}"} | set(COLOURS)))
QUESTION_TOKENS = max(len(t.split()) for t in TEMPLATES)
REGION_FEATURES = 16  # 6 colour + 3 shape + 2 position + 5 noise
SPLIT_SIZES = {"train": 20000, "val": 2000, "test": 2000}


def generate(n: int, seed: int) -> dict[str, torch.Tensor]:
    """``n`` scenes with one question each; fully determined by ``seed``."""
    rng = np.random.default_rng(seed)
    objects = len(COLOURS)
    shape = rng.integers(0, len(SHAPES), (n, objects))
    pos = rng.uniform(0, 1, (n, objects, 2))
    feats = np.zeros((n, objects, REGION_FEATURES), dtype=np.float32)
    feats[:, :, :objects] = np.eye(objects)
    feats[np.arange(n)[:, None], np.arange(objects), objects + shape] = 1.0
    feats[:, :, 9:11] = pos
    feats[:, :, 11:] = rng.normal(0, 0.5, (n, objects, 5))
    template = rng.integers(0, len(TEMPLATES), n)
    target = rng.integers(0, objects, n)  # the colour the question names
    dist = np.linalg.norm(pos[:, :, None] - pos[:, None, :], axis=-1)  # (n, 6, 6)
    rows = np.arange(n)
    d_t = dist[rows, target].copy()
    d_t[rows, target] = np.inf
    closest = d_t.argmin(1)
    d_t[rows, target] = -np.inf
    furthest = d_t.argmax(1)
    same_shape = (shape == shape[rows, target][:, None]).sum(1)
    answer_word = np.select(
        [template == 0, template == 1, template == 2, template == 3, template == 4, template == 5],
        [
            np.array(SHAPES)[shape[rows, target]],
            np.where(pos[rows, target, 0] < 0.5, "yes", "no"),
            np.where(pos[rows, target, 1] < 0.5, "yes", "no"),
            np.array(SHAPES)[shape[rows, closest]],
            np.array(COLOURS)[furthest],
            same_shape.astype(str),
        ],
        default="",
    )
    index = {w: i for i, w in enumerate(WORDS)}
    questions = np.zeros((n, QUESTION_TOKENS), dtype=np.int64)
    for i in range(n):
        words = TEMPLATES[template[i]].format(c=COLOURS[target[i]]).split()
        questions[i, : len(words)] = [index[w] for w in words]
    order = np.argsort(rng.uniform(size=(n, objects)), axis=1)  # region order carries no information
    feats = np.take_along_axis(feats, order[:, :, None], axis=1)
    answers = np.array([ANSWERS.index(a) for a in answer_word])
    return {
        "question": torch.from_numpy(questions),
        "regions": torch.from_numpy(feats),
        "labels": torch.from_numpy(answers),
        "template": torch.from_numpy(template),
    }


class ShapesVQA(Task):
    name, family, metric = "shapes-vqa", "mcan", "accuracy"
    metrics = {
        "accuracy": "maximize",
        "loss": "minimize",
        "accuracy_relational": "maximize",
        "accuracy_non_relational": "maximize",
    }

    def __init__(self, train_size: int = SPLIT_SIZES["train"]):
        self.sizes = dict(SPLIT_SIZES, train=train_size)

    def input_sizes(self):
        return {
            "question_tokens": QUESTION_TOKENS,
            "image_regions": len(COLOURS),
            "region_features": REGION_FEATURES,
            "vocab_size": len(WORDS),
            "num_answers": len(ANSWERS),
        }

    def load(self, seed: int = 0) -> dict[str, Split]:
        # Fixed data whatever the training seed; each split from its own generator seed.
        return {
            split: cached(f"shapes-vqa-v1-{split}-{n}", functools.partial(generate, n, 1000 + i))
            for i, (split, n) in enumerate(self.sizes.items())
        }

    def loss(self, model, batch):
        return F.cross_entropy(model(batch["question"], batch["regions"]), batch["labels"])

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=512):
        device = next(model.parameters()).device
        logits = torch.cat(
            [model(b["question"], b["regions"]).float().cpu() for b in batches(data, batch_size, device=device)]
        )
        labels = data["labels"]
        relational = data["template"] >= 3
        correct = (logits.argmax(-1) == labels).float()
        return {
            "accuracy": accuracy(logits, labels),
            "loss": F.cross_entropy(logits, labels).item(),
            "accuracy_relational": correct[relational].mean().item(),
            "accuracy_non_relational": correct[~relational].mean().item(),
        }
