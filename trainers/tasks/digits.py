"""``digits``: scikit-learn's 8x8 handwritten digits (real data shipped with the package).

Each image is cut into 2x2-pixel patches: a 4x4 grid of tokens with 4 features each, so coupled
attention sees the image's rows and columns; 10-way accuracy. 1,797 images, split 60/20/20 stratified by a fixed seed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import accuracy
from .base import Split, Task, batches


def _digits() -> tuple[np.ndarray, np.ndarray]:
    """(images (N, 8, 8), labels) of scikit-learn's digits, as ``sklearn.datasets.load_digits`` reads them.

    The file is read from scikit-learn's folder without importing scikit-learn, which costs every trial
    worker and every ``lwnas train`` of a digits model over a second (it imports scipy and pandas).
    """
    spec = importlib.util.find_spec("sklearn")
    folders = spec.submodule_search_locations if spec is not None else None
    path = Path(folders[0]) / "datasets" / "data" / "digits.csv.gz" if folders else None
    if path is None or not path.is_file():  # another layout of scikit-learn: let it read its own file
        from sklearn.datasets import load_digits

        data = load_digits()
        return data.images, data.target
    table = np.loadtxt(path, delimiter=",")  # what load_digits does: 64 pixels and the label per row
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(int)


def _stratified_split(labels: np.ndarray, seed: int, fractions=(0.6, 0.2, 0.2)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    parts: list[list[int]] = [[] for _ in fractions]
    for label in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == label))
        cuts = np.cumsum([int(round(f * len(idx))) for f in fractions[:-1]])
        for part, chunk in zip(parts, np.split(idx, cuts)):
            part.extend(chunk.tolist())
    return [np.sort(np.array(p)) for p in parts]


class Digits(Task):
    name, family, metric = "digits", "encoder", "accuracy"
    metrics = {"accuracy": "maximize", "loss": "minimize"}

    def input_sizes(self):
        return {"grid": (4, 4), "patch_features": 4, "num_classes": 10}

    def load(self, seed: int = 0) -> dict[str, Split]:
        images, target = _digits()
        x = torch.tensor(images, dtype=torch.float32) / 16.0  # (N, 8, 8)
        x = x.reshape(-1, 4, 2, 4, 2).permute(0, 1, 3, 2, 4).reshape(-1, 16, 4)  # (N, 4x4 patches, 2x2 pixels)
        x = (x - x.mean()) / x.std()
        y = torch.tensor(target, dtype=torch.long)
        # The split is fixed (seed 0) whatever the training seed, so results compare across seeds.
        train, val, test = _stratified_split(target, 0)
        return {
            name: {"patches": x[idx], "labels": y[idx]}
            for name, idx in (("train", train), ("val", val), ("test", test))
        }

    def loss(self, model, batch):
        return F.cross_entropy(model(batch["patches"]), batch["labels"])

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=256):
        device = next(model.parameters()).device
        logits = torch.cat([model(b["patches"]).float().cpu() for b in batches(data, batch_size, device=device)])
        return {"accuracy": accuracy(logits, data["labels"]), "loss": F.cross_entropy(logits, data["labels"]).item()}
