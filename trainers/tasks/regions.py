"""Per-image region features in the layout bottom-up-attention extractors write: one ``.npz`` per image.

Each file holds the features as ``x`` (bottom-up-attention.pytorch, openvqa) or ``features``, shape
(regions, F), and the boxes as ``bbox`` or ``boxes`` (regions, 4: x1, y1, x2, y2), in pixels when the
file also holds ``image_w`` and ``image_h`` (they are then divided by them), otherwise already in 0..1.
The image id is the last run of digits in the file name (``COCO_train2014_000000000009.jpg.npz`` and
``9.npz`` both name image 9), or for names without digits the name itself (Flickr30k's files are
numbered, so both work). Or one HDF5 file of all images (``_index_hdf5``; docs/tasks.md). The index
(where each image is, how many regions, the boxes made relative) is built once per fingerprint; the
features are read per batch.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .lazy import ArrayRows, HDF5Rows, RegionRows

FEATURE_KEYS, BOX_KEYS = ("x", "features"), ("bbox", "boxes")
HDF5_SUFFIXES = (".h5", ".hdf5")
# dataset names in one HDF5 file: ours first, then those of bottom-up-attention's trainval_36 files
# What one HDF5 file of region features may declare: its index (ids, counts, boxes) is read whole, so a shape
# beyond these is refused before any read (an `image_ids` of 10**10 rows would ask 80 GB of memory first).
MAX_H5_IMAGES = 20_000_000  # Visual Genome holds 108,077 images, COCO 123,287
MAX_H5_REGIONS = 10_000  # regions per image: bottom-up features give 10 to 100
MAX_H5_WIDTH = 65_536  # features per region: bottom-up features give 2,048
H5_FEATURES, H5_BOXES, H5_IDS = ("features", "image_features", "x"), ("boxes", "image_bb", "bbox"), ("image_ids", "ids")
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
                raise ValueError(
                    f"holds no features: expected an array `x` or `features`, found "
                    f"{', '.join(sorted(members)) or 'nothing'}"
                )
            shape, dtype = _member_shape(archive, key + ".npy")
            for other in members - {key}:
                _member_shape(archive, other + ".npy")  # boxes and sizes are read below: check them first
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ValueError(f"is not a readable .npz archive ({exc})") from None
    if len(shape) != 2 or not np.issubdtype(dtype, np.floating) or shape[0] == 0:
        raise ValueError(f"`{key}` must be a non-empty (regions, features) float array, found shape {shape} of {dtype}")
    boxes: np.ndarray | None = None
    box_key = next((k for k in BOX_KEYS if k in members), None)
    if box_key:
        try:
            with np.load(path) as f:  # allow_pickle is off: an object array is refused, never unpickled
                boxes = np.asarray(f[box_key], dtype=np.float32)
                size = [float(f[k]) for k in ("image_w", "image_h") if k in members]
        except (zipfile.BadZipFile, EOFError, OSError, TypeError) as exc:
            raise ValueError(f"cannot read `{box_key}`, `image_w` or `image_h` ({exc})") from None
        if boxes.shape != (shape[0], 4):
            raise ValueError(
                f"`{box_key}` has shape {boxes.shape} but there are {shape[0]} regions (expected ({shape[0]}, 4))"
            )
        if len(size) == 2:
            if not all(np.isfinite(v) and v > 0 for v in size):
                raise ValueError(
                    f"`image_w` and `image_h` must be positive sizes in pixels, got {size[0]:g} and {size[1]:g}"
                )
            boxes = boxes / np.array(size * 2, dtype=np.float32)
        elif boxes.size and boxes.max() > 1.5:
            raise ValueError(
                f"`{box_key}` is in pixels (up to {boxes.max():.0f}) but the file has no `image_w` and "
                f"`image_h` to make it relative"
            )
    return key, shape[0], shape[1], boxes


@dataclass
class RegionIndex:
    """Where each image's features are, with the boxes made relative (cached by ``prepared``)."""

    images: list[str]  # image keys
    files: list[str]  # per image: its .npz, or the one HDF5 file
    keys: list[str]  # per image: the features' array or dataset name
    rows: np.ndarray  # (N,) per image: its row in the HDF5 datasets (0 for .npz files)
    counts: np.ndarray  # (N,) regions per image
    boxes: np.ndarray  # (N, R, 4) relative, zero-padded; zeros when the files hold none
    has_boxes: bool
    features: int

    @property
    def regions(self) -> int:
        return int(self.counts.max())

    def position(self) -> dict[str, int]:
        return {key: i for i, key in enumerate(self.images)}

    def columns(self, index: np.ndarray, regions: int | None = None) -> dict:
        """Lazy ``regions``, ``boxes`` and ``region_mask`` columns for the images at ``index``."""
        r = regions or self.regions
        mask = np.arange(r)[None, :] < self.counts[:, None]
        hdf5 = self.files and self.files[0].endswith(HDF5_SUFFIXES)
        features = (
            HDF5Rows(self.files[0], self.keys[0], self.rows[index], r, self.features)
            if hdf5
            else RegionRows(self.files, self.keys, index, r, self.features)
        )
        return {
            "regions": features,
            "boxes": ArrayRows(self.boxes[:, :r], index, dtype=torch.float32),
            "region_mask": ArrayRows(mask, index, dtype=torch.bool),
        }


def feature_source(root: Path, task: str) -> Path:
    """``root/features/`` (one .npz per image) or ``root/features.h5`` (one HDF5 file), whichever is there."""
    if (root / "features").is_dir():
        return root / "features"
    found = [root / f"features{s}" for s in HDF5_SUFFIXES if (root / f"features{s}").is_file()]
    if not found:
        raise ValueError(
            f"{task}: {root} has neither a `features` folder (one .npz of region features per image) "
            f"nor a `features.h5` file"
        )
    return found[0]


def missing_hint(source: Path, image: str) -> str:
    """Where an image's features were looked for, for messages."""
    return f" (expected a file such as {image}.npz)" if source.is_dir() else f" (its `image_ids` has no {image})"


def source_files(source: Path) -> list[Path]:
    """The files whose change changes the index (for the fingerprint)."""
    return sorted(source.glob("*.npz")) if source.is_dir() else [source]


def build_index(source: Path, out: Path, wanted: set[str] | None = None) -> None:
    """Index the features at ``source`` (only the images of ``wanted`` keys, when given) into ``out``."""
    if not source.is_dir():
        return _index_hdf5(source, out, wanted)
    files = sorted(p for p in source.glob("*.npz") if wanted is None or image_key(p.name) in wanted)
    if not files:
        raise ValueError(
            f"{source}: no per-image feature files (*.npz)" + (" for the images the data names" if wanted else "")
        )
    _refuse_repeated(
        [image_key(p.name) for p in files],
        lambda i, j: (
            f"{source}: {files[j].name} and {files[i].name} both hold the features of image {image_key(files[i].name)}"
        ),
    )
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
        raise ValueError(f"{source}: feature files disagree on the feature size ({sorted(feature_sizes)})")
    padded = np.zeros((len(files), max(counts), 4), dtype=np.float32)
    for i, b in enumerate(boxes):
        if b is not None:
            padded[i, : len(b)] = b
    _save(
        out,
        [image_key(p.name) for p in files],
        [str(p) for p in files],
        keys,
        np.zeros(len(files), dtype=np.int64),
        np.asarray(counts),
        padded,
        all(b is not None for b in boxes),
        feature_sizes.pop(),
    )


def _refuse_repeated(images: list[str], describe) -> None:
    """Two feature sources for one image: which one a question or caption would read is arbitrary."""
    seen: dict[str, int] = {}
    for i, key in enumerate(images):
        if key in seen:
            raise ValueError(describe(i, seen[key]))
        seen[key] = i


def _dataset(f, names: tuple[str, ...], path: Path, what: str, required: bool = True):
    name = next((n for n in names if n in f), None)
    if name is None and required:
        raise ValueError(
            f"{path}: holds no {what} (expected a dataset {' or '.join(f'`{n}`' for n in names)}; "
            f"found {', '.join(sorted(f.keys())) or 'nothing'})"
        )
    return name


def _index_hdf5(path: Path, out: Path, wanted: set[str] | None) -> None:
    """One HDF5 file: ``image_ids`` (N,), ``features`` (N, R, F), optionally ``boxes`` (N, R, 4),
    ``num_boxes`` (N,) and ``image_w``, ``image_h`` (N,) (the layout of docs/tasks.md)."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ValueError(f"{path}: is not a readable HDF5 file ({exc})") from None
    with f:
        key = _dataset(f, H5_FEATURES, path, "features")
        ids_name = _dataset(f, H5_IDS, path, "image ids")
        feats, ids = f[key], f[ids_name]
        if len(feats.shape) != 3 or feats.dtype.kind != "f" or feats.shape[1] == 0:
            raise ValueError(
                f"{path}: `{key}` must be (images, regions, features) floats, found shape "
                f"{feats.shape} of {feats.dtype}"
            )
        n, r, width = feats.shape
        if n > MAX_H5_IMAGES or r > MAX_H5_REGIONS or width > MAX_H5_WIDTH:
            raise ValueError(
                f"{path}: `{key}` declares {n:,} images x {r:,} regions x {width:,} features; a features file "
                f"holds at most {MAX_H5_IMAGES:,} images of {MAX_H5_REGIONS:,} regions of {MAX_H5_WIDTH:,} "
                f"features (its index is read whole before training)"
            )
        if ids.shape != (n,) or ids.dtype.kind not in "iu":
            raise ValueError(
                f"{path}: `{ids_name}` must be {n} integers (one per row of `{key}`), found shape "
                f"{ids.shape} of {ids.dtype}"
            )
        images = [str(int(i)) for i in ids[:]]
        _refuse_repeated(images, lambda i, j: f"{path}: `{ids_name}` names image {images[i]} twice (rows {j} and {i})")
        rows = np.array([i for i, k in enumerate(images) if wanted is None or k in wanted], dtype=np.int64)
        if not len(rows):
            raise ValueError(f"{path}: holds none of the images the data names")
        for name in ("num_boxes", "image_w", "image_h"):  # one number per image, where given
            if name in f and (f[name].shape not in ((n,), (n, 1)) or f[name].dtype.kind not in "iuf"):
                raise ValueError(
                    f"{path}: `{name}` must be {n} numbers (one per row of `{key}`), found shape "
                    f"{f[name].shape} of {f[name].dtype}"
                )
        counts = np.full(n, r, dtype=np.int64)
        if "num_boxes" in f:
            counts = np.clip(np.asarray(f["num_boxes"][:], dtype=np.int64).reshape(n), 1, r)
        box_name = _dataset(f, H5_BOXES, path, "boxes", required=False)
        boxes = np.zeros((len(rows), r, 4), dtype=np.float32)
        if box_name:
            if f[box_name].shape != (n, r, 4):
                raise ValueError(f"{path}: `{box_name}` must have shape {(n, r, 4)}, found {f[box_name].shape}")
            boxes = np.asarray(f[box_name][:], dtype=np.float32)[rows]
            if "image_w" in f and "image_h" in f:
                size = np.stack([f["image_w"][:].reshape(n), f["image_h"][:].reshape(n)], 1).astype(np.float32)[rows]
                bad = np.flatnonzero(~(np.isfinite(size) & (size > 0)).all(1))
                if len(bad):
                    w, h = size[bad[0]]
                    raise ValueError(
                        f"{path}: `image_w` and `image_h` must be positive sizes in pixels, got {w:g} and "
                        f"{h:g} for image {images[rows[bad[0]]]} (row {rows[bad[0]]})"
                    )
                boxes = boxes / np.tile(size, 2)[:, None, :]
            elif boxes.size and boxes.max() > 1.5:
                raise ValueError(
                    f"{path}: `{box_name}` is in pixels (up to {boxes.max():.0f}) but the file has no "
                    f"`image_w` and `image_h` datasets to make it relative"
                )
    _save(
        out,
        [images[i] for i in rows],
        [str(path)] * len(rows),
        [key] * len(rows),
        rows,
        counts[rows],
        boxes,
        box_name is not None,
        width,
    )


def _save(out: Path, images, files, keys, rows, counts, boxes, has_boxes: bool, features: int) -> None:
    np.save(out / "boxes.npy", boxes)
    np.save(out / "counts.npy", np.asarray(counts, dtype=np.int64))
    np.save(out / "rows.npy", np.asarray(rows, dtype=np.int64))
    (out / "images.txt").write_text("\n".join("\t".join(x) for x in zip(images, keys, files)))
    (out / "meta.txt").write_text(f"{features}\t{int(has_boxes)}")


def load_index(out: Path) -> RegionIndex:
    lines = [line.split("\t", 2) for line in (out / "images.txt").read_text().splitlines()]
    features, has_boxes = (out / "meta.txt").read_text().split("\t")
    return RegionIndex(
        [i for i, _, _ in lines],
        [f for _, _, f in lines],
        [k for _, k, _ in lines],
        np.load(out / "rows.npy"),
        np.load(out / "counts.npy"),
        np.load(out / "boxes.npy", mmap_mode="r"),
        bool(int(has_boxes)),
        int(features),
    )
