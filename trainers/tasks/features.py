"""``features``: bring-your-own data from ``.npz`` / ``.npy`` files.

A file ``data.npz`` (or a directory of ``.npy`` files with these names) holds:

* ``regions`` (N, R, F) float: region or patch features (e.g. bottom-up VQA features);
* ``labels`` (N,) int: the class or answer index;
* ``tokens`` (N, T) int, optional: token ids, 0 = padding (e.g. questions). With tokens the task
  trains family ``mcan``; without, family ``encoder`` over the regions as a 1 x R grid;
* ``split`` (N,) int, optional: 0 train, 1 validation, 2 test; otherwise a seeded 80/10/10 split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import accuracy
from .base import Split, Task, batches


def _read(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        raise ValueError(f"features: no such data file {path}")
    if path.is_dir():
        arrays = {p.stem: np.load(p) for p in path.glob("*.npy")}
    elif path.suffix == ".npz":
        with np.load(path) as f:
            arrays = dict(f)
    else:
        raise ValueError(f"features: {path} is neither an .npz file nor a directory of .npy files")
    for key in ("regions", "labels"):
        if key not in arrays:
            raise ValueError(f"features: {path} lacks `{key}` (has: {', '.join(sorted(arrays)) or 'nothing'})")
    n = len(arrays["labels"])
    for key, value in arrays.items():
        if len(value) != n:
            raise ValueError(f"features: `{key}` has {len(value)} rows but `labels` has {n}")
    return arrays


class Features(Task):
    name, metric = "features", "accuracy"
    metrics = {"accuracy": "maximize", "loss": "minimize"}

    def __init__(self, path: str | Path | None = None):
        if path is None:
            raise ValueError("task `features` needs a data path (lwnas train ... --data FILE.npz)")
        self.path = Path(path)
        self.arrays = _read(self.path)
        self.family = "mcan" if "tokens" in self.arrays else "encoder"

    def input_sizes(self):
        n, r, f = self.arrays["regions"].shape
        classes = int(self.arrays["labels"].max()) + 1
        if self.family == "encoder":
            return {"grid": (1, r), "patch_features": f, "num_classes": classes}
        tokens = self.arrays["tokens"]
        return {"question_tokens": tokens.shape[1], "image_regions": r, "region_features": f,
                "vocab_size": int(tokens.max()) + 1, "num_answers": classes}

    def load(self, seed: int = 0) -> dict[str, Split]:
        a = self.arrays
        n = len(a["labels"])
        if "split" in a:
            which = a["split"].astype(int)
        else:
            order = np.random.default_rng(0).permutation(n)
            which = np.zeros(n, dtype=int)
            which[order[int(0.8 * n):int(0.9 * n)]] = 1
            which[order[int(0.9 * n):]] = 2
        tensors = {"regions": torch.as_tensor(a["regions"], dtype=torch.float32),
                   "labels": torch.as_tensor(a["labels"], dtype=torch.long)}
        if "tokens" in a:
            tensors["tokens"] = torch.as_tensor(a["tokens"], dtype=torch.long)
        return {name: {k: v[torch.from_numpy(which == i)] for k, v in tensors.items()}
                for i, name in enumerate(("train", "val", "test"))}

    def _logits(self, model, batch):
        if self.family == "mcan":
            return model(batch["tokens"], batch["regions"])
        return model(batch["regions"])

    def loss(self, model, batch):
        return F.cross_entropy(self._logits(model, batch), batch["labels"])

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=256):
        device = next(model.parameters()).device
        logits = torch.cat([self._logits(model, b).float().cpu() for b in batches(data, batch_size, device=device)])
        return {"accuracy": accuracy(logits, data["labels"]), "loss": F.cross_entropy(logits, data["labels"]).item()}
