"""``image-folder`` and ``cifar`` (family ``encoder``): image classification on your own images.

Both decode the images once into a cached ``(N, S, S, 3)`` uint8 array next to the data (see
``prepared``) and cut each batch into a ``grid`` of ``patch`` x ``patch`` pixel patches as it is read, so
coupled attention sees the image's rows and columns; accuracy.

* ``image-folder``: ``ROOT/<class>/*.png|jpg|jpeg`` (split 80/10/10 per class with a fixed seed), or
  ``ROOT/train/<class>/...`` with ``ROOT/val/<class>/...`` and optionally ``ROOT/test/<class>/...``
  (without `test`, half of each class of `val` is the test split). Images are resized to ``image_size``.
* ``cifar``: the python version of CIFAR-10 (``data_batch_1`` .. ``data_batch_5``, ``test_batch``) or
  CIFAR-100 (``train``, ``test``; the fine labels); 10% of the training images per class are validation.
  The batches are pickles: they are read with an unpickler that builds numpy arrays and nothing else.
"""

from __future__ import annotations

import codecs
import pickle
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from searchspace import ConfigError

from ..metrics import accuracy
from .base import Split, Task, batches
from .digits import _stratified_split
from .lazy import ArrayRows, PatchRows
from .prepared import fingerprint, load_array, load_json, needs_path, positive_option, prepared, save_json

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
SPLITS = ("train", "val", "test")


class _ImageTask(Task):
    family, metric = "encoder", "accuracy"
    metrics = {"accuracy": "maximize", "loss": "minimize"}
    path_options = ("path",)

    def __init__(self, path, image_size: int, patch: int):
        if path is None:
            raise ValueError(needs_path(self.name))
        self.path = Path(path)
        if not self.path.is_dir():
            raise ValueError(f"{self.name}: no such folder: {self.path}")
        self.image_size = positive_option("image_size", image_size, self.name)
        self.patch = positive_option("patch", patch, self.name)
        if image_size % patch:
            raise ConfigError([("task_options.patch", f"must divide the image size {image_size}, got {patch}")])
        self.folder = self._prepare()
        self.classes = load_json(self.folder, "classes.json")

    def _prepare(self) -> Path:
        """The folder of the prepared arrays (pixels, labels, split, classes.json), built on first use."""
        raise NotImplementedError

    def input_sizes(self):
        side = self.image_size // self.patch
        return {"grid": (side, side), "patch_features": self.patch * self.patch * 3, "num_classes": len(self.classes)}

    def load(self, seed: int = 0) -> dict[str, Split]:
        pixels, labels, split = (load_array(self.folder, n) for n in ("pixels", "labels", "split"))
        out: dict[str, Split] = {}
        for i, name in enumerate(SPLITS):
            index = np.flatnonzero(np.asarray(split) == i)
            out[name] = {"patches": PatchRows(pixels, index, self.patch), "labels": ArrayRows(labels, index)}
        return out

    def loss(self, model, batch):
        return F.cross_entropy(model(batch["patches"]), batch["labels"])

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=256):
        device = next(model.parameters()).device
        parts = [
            (model(b["patches"]).float().cpu(), b["labels"].cpu()) for b in batches(data, batch_size, device=device)
        ]
        logits, labels = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        return {"accuracy": accuracy(logits, labels), "loss": F.cross_entropy(logits, labels).item()}

    def _save(self, out: Path, pixels: np.ndarray, labels: np.ndarray, split: np.ndarray, classes: list[str]) -> None:
        np.save(out / "pixels.npy", pixels)
        np.save(out / "labels.npy", labels.astype(np.int64))
        np.save(out / "split.npy", split.astype(np.int8))
        save_json(out, "classes.json", classes)


def _split_of(labels: np.ndarray, fractions: tuple[float, ...], names: tuple[int, ...]) -> np.ndarray:
    """Per-item split ids: a stratified split of ``labels`` by a fixed seed into ``names``."""
    which = np.zeros(len(labels), dtype=np.int8)
    for name, idx in zip(names, _stratified_split(labels, 0, fractions)):
        which[idx.astype(np.int64)] = name  # an empty part comes back as a float array
    return which


def _check_splits(task: str, where: Path, split: np.ndarray, hint: str) -> None:
    """Refuse data whose train, val or test split holds no image (training or evaluation would fail on it)."""
    sizes = {name: int((split == i).sum()) for i, name in enumerate(SPLITS)}
    empty = [name for name, n in sizes.items() if n == 0]
    if empty:
        found = ", ".join(f"{n} {name}" for name, n in sizes.items())
        raise ValueError(
            f"{task}: {where}: the {' and '.join(empty)} split{'s are' if len(empty) > 1 else ' is'} "
            f"empty ({found} images); {hint}"
        )


class ImageFolder(_ImageTask):
    name = "image-folder"

    def __init__(self, path: str | Path | None = None, image_size: int = 32, patch: int = 4):
        super().__init__(path, image_size, patch)

    def _layout(self) -> dict[str, Path]:
        """The folder of class folders for each split given on disk (one entry when the split is ours)."""
        subs = {p.name for p in self.path.iterdir() if p.is_dir() and not p.name.startswith(".")}
        if "train" in subs and subs <= set(SPLITS):
            if "val" not in subs:
                raise ValueError(f"image-folder: {self.path} has `train` but no `val` folder beside it")
            return {s: self.path / s for s in SPLITS if s in subs}
        return {"all": self.path}

    def _files(self, folder: Path, classes: list[str] | None) -> list[tuple[Path, str]]:
        found = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not found:
            raise ValueError(f"image-folder: {folder} has no class folders (expected {folder}/<class>/<image>.png)")
        if classes is not None and (extra := sorted(set(found) - set(classes))):
            raise ValueError(f"image-folder: {folder} has classes the training folder lacks: {', '.join(extra)}")
        out = []
        for name in found:
            images = sorted(p for p in (folder / name).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if not images:
                raise ValueError(f"image-folder: class folder {folder / name} has no images (.png, .jpg, .jpeg)")
            out += [(p, name) for p in images]
        return out

    def _prepare(self) -> Path:
        layout = self._layout()
        first = next(iter(layout.values()))
        classes = sorted(p.name for p in first.iterdir() if p.is_dir() and not p.name.startswith("."))
        files = {s: self._files(folder, None if s in ("all", "train") else classes) for s, folder in layout.items()}
        if len(classes) == 1:  # a classifier of one class learns nothing and scores accuracy 1.0
            raise ValueError(
                f"image-folder: {first} has one class folder ({classes[0]}); an image-folder task needs at least "
                f"2 classes (one folder of images per class)"
            )
        inputs = [p for listed in files.values() for p, _ in listed]
        key = f"{self.name}-{fingerprint(self.name, {'image_size': self.image_size}, inputs)}"
        return prepared(self.path, key, lambda out: self._build(out, files, classes))

    def _build(self, out: Path, files: dict[str, list[tuple[Path, str]]], classes: list[str]) -> None:
        from PIL import Image, UnidentifiedImageError

        listed = [item for s in files for item in files[s]]
        pixels = np.lib.format.open_memmap(
            out / "pixels.npy", mode="w+", dtype=np.uint8, shape=(len(listed), self.image_size, self.image_size, 3)
        )
        for i, (p, _) in enumerate(listed):
            try:
                with Image.open(p) as im:
                    pixels[i] = np.asarray(im.convert("RGB").resize((self.image_size,) * 2, Image.Resampling.BILINEAR))
            except (UnidentifiedImageError, Image.DecompressionBombError, OSError) as exc:
                raise ValueError(f"image-folder: {p} is not a readable image ({exc})") from None
        pixels.flush()
        labels = np.array([classes.index(c) for _, c in listed])
        if "all" in files:
            split = _split_of(labels, (0.8, 0.1, 0.1), (0, 1, 2))
        else:
            split = np.concatenate(
                [np.full(len(files["train"]), 0)]
                + (
                    [np.full(len(files["val"]), 1), np.full(len(files["test"]), 2)]
                    if "test" in files
                    else [_split_of(labels[len(files["train"]) :], (0.5, 0.5), (1, 2))]
                )
            )
        _check_splits(
            self.name,
            self.path,
            split,
            "each class is split 80/10/10, so a class needs 8 images to give val and test one each"
            if "all" in files
            else "without a test folder each class of val is halved into val and test, so it needs 2 images"
            if "test" not in files
            else "each of train, val and test needs images",
        )
        np.save(out / "labels.npy", labels.astype(np.int64))
        np.save(out / "split.npy", split.astype(np.int8))
        save_json(out, "classes.json", classes)


# What the CIFAR pickles may build: numpy arrays and their dtypes (numpy 1 and 2 module names).
_CIFAR_GLOBALS = {
    (m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}
_CODECS = ("_codecs", "encode")  # how protocol 2 from Python 3 writes bytes: text -> bytes, nothing more


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == _CODECS:
            return codecs.encode
        if (module, name) not in _CIFAR_GLOBALS:
            raise pickle.UnpicklingError(
                f"refers to {module}.{name}; a CIFAR batch holds only numpy arrays, lists and strings"
            )
        with warnings.catch_warnings():  # the released batches name numpy.core, which numpy 2 calls deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            return super().find_class(module, name)


def read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(N, 32, 32, 3) uint8 images and (N,) labels of one CIFAR python batch; ValueError naming what is wrong."""
    try:
        with path.open("rb") as fp:
            batch = _ArraysOnly(fp, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"cifar: {path} is not a readable CIFAR batch: {exc}") from None
    if not isinstance(batch, dict):
        raise ValueError(f"cifar: {path} holds a {type(batch).__name__}, not a batch (a dict with `data` and `labels`)")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    label_key = next((k for k in ("labels", "fine_labels") if k in batch), None)
    missing = [k for k, ok in (("data", "data" in batch), ("labels", label_key)) if not ok]
    if missing:
        raise ValueError(
            f"cifar: {path} lacks `{'` and `'.join(missing)}` (has: {', '.join(map(str, batch)) or 'nothing'})"
        )
    data, labels = np.asarray(batch["data"]), np.asarray(batch[label_key])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(
            f"cifar: {path}: `data` must be (N, 3072) uint8 (32x32 pixels, red then green then blue), "
            f"found shape {data.shape} of {data.dtype}"
        )
    if labels.shape != (len(data),) or not np.issubdtype(labels.dtype, np.integer) or (labels < 0).any():
        raise ValueError(
            f"cifar: {path}: `{label_key}` must be {len(data)} non-negative integers, found shape "
            f"{labels.shape} of {labels.dtype}"
        )
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


class Cifar(_ImageTask):
    name = "cifar"

    def __init__(self, path: str | Path | None = None, patch: int = 4):
        super().__init__(path, 32, patch)

    def _batches(self) -> tuple[list[Path], list[Path]]:
        train = sorted(self.path.glob("data_batch_*")) or [p for p in [self.path / "train"] if p.is_file()]
        test = [p for p in (self.path / "test_batch", self.path / "test") if p.is_file()]
        if not train or not test:
            raise ValueError(
                f"cifar: {self.path} lacks the {'training' if not train else 'test'} batches "
                f"(CIFAR-10: data_batch_1..5 and test_batch; CIFAR-100: train and test)"
            )
        return train, test[:1]

    def _prepare(self) -> Path:
        train, test = self._batches()
        key = f"{self.name}-{fingerprint(self.name, {}, train + test)}"
        return prepared(self.path, key, lambda out: self._build(out, train, test))

    def _build(self, out: Path, train: list[Path], test: list[Path]) -> None:
        read = [read_cifar_batch(p) for p in train + test]
        pixels = np.concatenate([r[0] for r in read])
        labels = np.concatenate([r[1] for r in read])
        n_train = sum(len(r[1]) for r in read[: len(train)])
        split = np.concatenate([_split_of(labels[:n_train], (0.9, 0.1), (0, 1)), np.full(len(labels) - n_train, 2)])
        _check_splits(
            self.name,
            self.path,
            split,
            "10% of each class of the training batches is validation, so a "
            "class needs 5 training images to give it one",
        )
        self._save(out, pixels, labels, split, [str(i) for i in range(int(labels.max()) + 1)])
