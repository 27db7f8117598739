"""Columns of a split that read their rows when a batch asks for them.

``batches`` slices every column of a split with a tensor of row indices; these classes answer that
slice from a memory-mapped array or from per-item files, so a sweep's workers share the operating
system's page cache instead of each holding the whole data set.
"""

from __future__ import annotations

import numpy as np
import torch


def _rows(idx) -> np.ndarray:
    return idx.cpu().numpy() if isinstance(idx, torch.Tensor) else np.asarray(idx)


class ArrayRows:
    """Rows ``index[i]`` of an array (often a memmap), returned as a tensor of ``dtype``."""

    def __init__(self, array: np.ndarray, index: np.ndarray | None = None, dtype: torch.dtype = torch.long):
        self.array, self.dtype = array, dtype
        self.index = np.arange(len(array)) if index is None else np.asarray(index)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, idx) -> torch.Tensor:
        rows = self.index[_rows(idx)]
        order = np.argsort(rows, kind="stable")  # memmaps read fastest in file order
        out = np.empty((len(rows), *self.array.shape[1:]), dtype=self.array.dtype)
        out[order] = self.array[rows[order]]
        return torch.as_tensor(out, dtype=self.dtype)


class PatchRows:
    """Images (N, H, W, 3) uint8 -> (B, gh * gw, p * p * 3) float patches, scaled to about zero mean and unit spread.

    The grid's rows and columns are the image's, so coupled attention sees them.
    """

    def __init__(self, pixels: np.ndarray, index: np.ndarray, patch: int):
        self.pixels, self.index, self.patch = pixels, np.asarray(index), patch

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, idx) -> torch.Tensor:
        x = torch.as_tensor(self.pixels[self.index[_rows(idx)]])  # (B, H, W, 3)
        b, h, w, c = x.shape
        p = self.patch
        x = x.reshape(b, h // p, p, w // p, p, c).permute(0, 1, 3, 2, 4, 5).reshape(b, (h // p) * (w // p), p * p * c)
        return (x.float() / 255.0 - 0.5) / 0.25


class RegionRows:
    """Region features read from one ``.npz`` file per image, zero-padded to ``regions`` rows."""

    def __init__(self, files: list[str], key: list[str], index: np.ndarray, regions: int, features: int):
        self.files, self.key, self.index = files, key, np.asarray(index)
        self.regions, self.features = regions, features

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, idx) -> torch.Tensor:
        images = self.index[_rows(idx)]
        out = np.zeros((len(images), self.regions, self.features), dtype=np.float32)
        for row, image in enumerate(images):
            with np.load(self.files[image]) as f:  # reads only this member of the archive; never unpickles
                x = f[self.key[image]][: self.regions]
            out[row, : len(x)] = x
        return torch.from_numpy(out)


class HDF5Rows:
    """Region features read from one HDF5 dataset (images, regions, features), cut to ``regions`` rows.

    Each process opens the file itself on its first read (an open HDF5 handle must not cross a fork).
    """

    def __init__(self, path: str, key: str, rows: np.ndarray, regions: int, features: int):
        self.path, self.key, self.rows, self.regions, self.features = path, key, np.asarray(rows), regions, features
        self._open: tuple[int, object] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def _dataset(self):
        import os

        import h5py

        if self._open is None or self._open[0] != os.getpid():
            self._open = (os.getpid(), h5py.File(self.path, "r")[self.key])
        return self._open[1]

    def __getitem__(self, idx) -> torch.Tensor:
        rows = self.rows[_rows(idx)]
        unique, inverse = np.unique(rows, return_inverse=True)  # h5py reads increasing, distinct rows
        x = np.asarray(self._dataset()[unique, : self.regions], dtype=np.float32)[inverse]
        return torch.from_numpy(x)

    def __getstate__(self):
        return {**self.__dict__, "_open": None}
