"""Per-image region features in the layout bottom-up-attention extractors write: one ``.npz`` per image.

Each file holds the features as ``x`` (bottom-up-attention.pytorch, openvqa) or ``features``, shape
(regions, F), and the boxes as ``bbox`` or ``boxes`` (regions, 4: x1, y1, x2, y2), in pixels when the
file also holds ``image_w`` and ``image_h`` (they are then divided by them), otherwise already in 0..1.
The image id is the last run of digits in the file name (``COCO_train2014_000000000009.jpg.npz`` and
``9.npz`` both name image 9), or for names without digits the name itself (Flickr30k's files are
numbered, so both work). The index (which file, how many regions, the boxes made relative) is built
once per fingerprint; the features are read per batch.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .lazy import ArrayRows, RegionRows

FEATURE_KEYS, BOX_KEYS = ("x", "features"), ("bbox", "boxes")
_ID = re.compile(r"(\d+)\D*$")


def image_key(name: str) -> str:
    """The id a feature file or an image file name stands for (see the module docstring)."""
    stem = name[:-4] if name.endswith(".npz") else name
    digits = _ID.search(stem)
    return str(int(digits.group(1))) if digits else stem.split(".")[0]


def _member_shape(archive: zipfile.ZipFile, member: str) -> tuple[tuple[int, ...], np.dtype]:
    """An array's shape and dtype from its ``.npy`` header, without reading its data; refused when the header
    declares more bytes than the member holds (numpy would allocate the declared size before reading)."""
    with archive.open(member) as fp:
        version = np.lib.format.read_magic(fp)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(fp)
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if declared > archive.getinfo(member).file_size - fp.tell():
            raise ValueError(f"`{member[:-4]}` declares shape {shape} of {dtype} ({declared:,} bytes) but holds fewer")
    return shape, dtype


def _read_one(path: Path) -> tuple[str, int, int, np.ndarray | None]:
    """(feature key, regions, feature size, relative boxes or None) of one file; ValueError naming what is wrong."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = {n[:-4] for n in archive.namelist() if n.endswith(".npy")}
            key = next((k for k in FEATURE_KEYS if k in members), None)
            if key is None:
                raise ValueError(f"holds no features: expected an array `x` or `features`, found "
                                 f"{', '.join(sorted(members)) or 'nothing'}")
            shape, dtype = _member_shape(archive, key + ".npy")
            for other in members - {key}:
                _member_shape(archive, other + ".npy")  # boxes and sizes are read below: check them first
    except zipfile.BadZipFile:
        raise ValueError("is not an .npz archive") from None
    if len(shape) != 2 or not np.issubdtype(dtype, np.floating) or shape[0] == 0:
        raise ValueError(f"`{key}` must be a non-empty (regions, features) float array, found shape {shape} of {dtype}")
    boxes = None
    box_key = next((k for k in BOX_KEYS if k in members), None)
    if box_key:
        with np.load(path) as f:  # allow_pickle is off: an object array is refused, never unpickled
            boxes = np.asarray(f[box_key], dtype=np.float32)
            size = [float(f[k]) for k in ("image_w", "image_h") if k in members]
        if boxes.shape != (shape[0], 4):
            raise ValueError(f"`{box_key}` has shape {boxes.shape} but there are {shape[0]} regions (expected ({shape[0]}, 4))")
        if len(size) == 2:
            boxes = boxes / np.array(size * 2, dtype=np.float32)
        elif boxes.size and boxes.max() > 1.5:
            raise ValueError(f"`{box_key}` is in pixels (up to {boxes.max():.0f}) but the file has no `image_w` and "
                             f"`image_h` to make it relative")
    return key, shape[0], shape[1], boxes


@dataclass
class RegionIndex:
    """Which file holds each image's features, with the boxes made relative (cached by ``prepared``)."""

    files: list[str]
    keys: list[str]
    counts: np.ndarray  # (N,) regions per image
    boxes: np.ndarray  # (N, R, 4) relative, zero-padded; zeros when the files hold none
    has_boxes: bool
    features: int

    @property
    def regions(self) -> int:
        return int(self.counts.max())

    def position(self) -> dict[str, int]:
        return {image_key(Path(f).name): i for i, f in enumerate(self.files)}

    def columns(self, index: np.ndarray, regions: int | None = None) -> dict:
        """Lazy ``regions``, ``boxes`` and ``region_mask`` columns for the images at ``index``."""
        r = regions or self.regions
        mask = np.arange(r)[None, :] < self.counts[:, None]
        return {"regions": RegionRows(self.files, self.keys, index, r, self.features),
                "boxes": ArrayRows(self.boxes[:, :r], index, dtype=torch.float32),
                "region_mask": ArrayRows(mask, index, dtype=torch.bool)}


def build_index(folder: Path, out: Path, wanted: set[str] | None = None) -> None:
    """Index the ``.npz`` files of ``folder`` (only those of ``wanted`` image keys, when given) into ``out``."""
    files = sorted(p for p in folder.glob("*.npz") if wanted is None or image_key(p.name) in wanted)
    if not files:
        raise ValueError(f"{folder}: no per-image feature files (*.npz)" + (" for the images the data names" if wanted else ""))
    keys, counts, boxes, feature_sizes = [], [], [], set()
    for p in files:
        try:
            key, r, f, b = _read_one(p)
        except ValueError as exc:
            raise ValueError(f"{p}: {exc}") from None
        keys.append(key)
        counts.append(r)
        boxes.append(b)
        feature_sizes.add(f)
    if len(feature_sizes) > 1:
        raise ValueError(f"{folder}: feature files disagree on the feature size ({sorted(feature_sizes)})")
    has_boxes = all(b is not None for b in boxes)
    padded = np.zeros((len(files), max(counts), 4), dtype=np.float32)
    for i, b in enumerate(boxes):
        if b is not None:
            padded[i, : len(b)] = b
    np.save(out / "boxes.npy", padded)
    np.save(out / "counts.npy", np.asarray(counts, dtype=np.int64))
    (out / "files.txt").write_text("\n".join(f"{key}\t{p}" for key, p in zip(keys, files)))
    (out / "meta.txt").write_text(f"{feature_sizes.pop()}\t{int(has_boxes)}")


def load_index(out: Path) -> RegionIndex:
    lines = [line.split("\t", 1) for line in (out / "files.txt").read_text().splitlines()]
    features, has_boxes = (out / "meta.txt").read_text().split("\t")
    return RegionIndex([p for _, p in lines], [k for k, _ in lines], np.load(out / "counts.npy"),
                       np.load(out / "boxes.npy", mmap_mode="r"), bool(int(has_boxes)), int(features))
