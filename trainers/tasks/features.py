"""``features``: bring-your-own data from ``.npz`` / ``.npy`` files.

A file ``data.npz`` (or a directory of ``.npy`` files with these names) holds:

* ``regions`` (N, R, F) float: region or patch features (e.g. bottom-up VQA features);
* ``labels`` (N,) int: the class or answer index;
* ``tokens`` (N, T) int, optional: token ids, 0 = padding (e.g. questions). With tokens the task
  trains family ``mcan``; without, family ``encoder`` over the regions as a 1 x R grid;
* ``split`` (N,) int, optional: 0 train, 1 validation, 2 test; otherwise a seeded 80/10/10 split.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import accuracy
from . import data_files
from .base import Split, Task, batches


def _check_declared_size(name: str, fp, size: int) -> None:
    """Refuse an ``.npy`` whose header declares more bytes than it holds: numpy would allocate the
    declared size before reading (a 100-byte file can ask for terabytes)."""
    version = np.lib.format.read_magic(fp)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read_header(fp)
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if declared > size - fp.tell():
        raise ValueError(
            f"features: `{name}` declares shape {shape} of {dtype} ({declared:,} bytes) but holds "
            f"{max(0, size - fp.tell()):,} bytes"
        )


def _read(path: Path) -> dict[str, np.ndarray]:
    try:
        if data_files.folder(path, "features"):
            for p in path.glob("*.npy"):
                data_files.regular_file(p, "features")
                with p.open("rb") as fp:
                    _check_declared_size(p.name, fp, p.stat().st_size)
            arrays = {p.stem: np.load(p) for p in path.glob("*.npy")}
        elif path.suffix == ".npz":
            data_files.regular_file(path, "features")
            if not zipfile.is_zipfile(path):
                raise ValueError(f"features: {path} is not an .npz archive (a zip of .npy files)")
            with np.load(path) as f:
                for info in f.zip.infolist():
                    with f.zip.open(info) as fp:
                        _check_declared_size(info.filename, fp, info.file_size)
                arrays = dict(f)
        else:
            raise ValueError(f"features: {path} is neither an .npz file nor a directory of .npy files")
    except MemoryError:
        raise ValueError(f"features: {path} does not fit in memory") from None
    except (zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"features: {path} is a damaged .npz archive: {exc}") from None
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
    path_options = ("path",)

    def __init__(self, path: str | Path | None = None):
        if path is None:
            raise ValueError("task `features` needs a data path (lwnas train ... --data FILE.npz)")
        self.path = Path(path)
        if not self.path.exists():
            raise ValueError(f"features: no such file or directory: {self.path}")
        self.arrays = _read(self.path)
        self.family = "mcan" if "tokens" in self.arrays else "encoder"

    def input_sizes(self):
        n, r, f = self.arrays["regions"].shape
        classes = int(self.arrays["labels"].max()) + 1
        if self.family == "encoder":
            return {"grid": (1, r), "patch_features": f, "num_classes": classes}
        tokens = self.arrays["tokens"]
        return {
            "question_tokens": tokens.shape[1],
            "image_regions": r,
            "region_features": f,
            "vocab_size": int(tokens.max()) + 1,
            "num_answers": classes,
        }

    def load(self, seed: int = 0) -> dict[str, Split]:
        a = self.arrays
        n = len(a["labels"])
        if "split" in a:
            which = a["split"].astype(int)
        else:
            order = np.random.default_rng(0).permutation(n)
            which = np.zeros(n, dtype=int)
            which[order[int(0.8 * n) : int(0.9 * n)]] = 1
            which[order[int(0.9 * n) :]] = 2
        tensors = {
            "regions": torch.as_tensor(a["regions"], dtype=torch.float32),
            "labels": torch.as_tensor(a["labels"], dtype=torch.long),
        }
        if "tokens" in a:
            tensors["tokens"] = torch.as_tensor(a["tokens"], dtype=torch.long)
        return {
            name: {k: v[torch.from_numpy(which == i)] for k, v in tensors.items()}
            for i, name in enumerate(("train", "val", "test"))
        }

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
