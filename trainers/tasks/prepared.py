"""Preprocessing of a user's data set, cached next to the data under a fingerprint of its inputs.

A task that reads a data folder derives things from it once (a vocabulary, an answer list, an index
of feature files, images decoded to an array) and stores them in ``<data>/.lwnas/<task>-<fingerprint>/``.
The fingerprint covers the task's options and every input file (the full content of small text files,
size and modification time of bulk files), so editing the questions or adding an image re-builds it,
and parallel trials share one copy. Where the data folder is read-only the copy goes to
``$LWNAS_CACHE/prepared/`` instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from searchspace import ConfigError

from .cache import cache_dir
from .data_files import regular_file

# bump when what a task derives from the same inputs changes, so old caches are not read
FORMAT_VERSION = 2  # 2: vqa keeps official answer scores, captions keep PTB-tokenized references
# text files up to this size are fingerprinted by content; larger files (features, images) by size and mtime
CONTENT_LIMIT = 64 << 20


def positive_option(name: str, value: Any, task: str) -> int:
    """A task option that must be a whole number >= 1, or a ConfigError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError([(f"task_options.{name}", f"task `{task}` needs a positive whole number, got {value!r}")])
    return value


def needs_path(task: str) -> str:
    """The message for a data task constructed without its data."""
    return (
        f"task `{task}` needs a data path: --data FOLDER on `lwnas train` or `lwnas sweep`, or "
        f"task_options: {{path: FOLDER}} in the study or configuration file"
    )


def fingerprint(task: str, options: dict[str, Any], files: Iterable[Path]) -> str:
    """A short hash of the task, its options and the input files."""
    h = hashlib.sha256(json.dumps([FORMAT_VERSION, task, options], sort_keys=True, default=str).encode())
    for f in sorted(files):
        st = regular_file(f, task).stat()  # a FIFO would block the read below; a link loop cannot be read
        h.update(f"{f}\0{st.st_size}\0".encode())
        if f.suffix in (".json", ".txt") and st.st_size <= CONTENT_LIMIT:
            h.update(hashlib.sha256(f.read_bytes()).digest())
        else:
            h.update(str(st.st_mtime_ns).encode())
    return h.hexdigest()[:16]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def prepared(root: Path, key: str, build: Callable[[Path], None]) -> Path:
    """The folder holding ``key``'s preprocessing of the data at ``root``, built by ``build(folder)`` once.

    ``build`` writes into a private temporary folder that is renamed into place when complete, so a
    killed build leaves nothing that looks finished and concurrent builders do not see each other's halves.
    """
    base = root / ".lwnas" if root.is_dir() else root.parent / ".lwnas"
    if not _writable(base):
        base = cache_dir() / "prepared"
        base.mkdir(parents=True, exist_ok=True)
    final = base / key
    if (final / "done").exists():
        return final
    tmp = base / f".{key}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        build(tmp)
        (tmp / "done").write_text("")
        try:
            os.replace(tmp, final)
        except OSError:  # another process finished first: use its copy
            if not (final / "done").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def save_json(folder: Path, name: str, value: Any) -> None:
    (folder / name).write_text(json.dumps(value))


def load_json(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


def load_array(folder: Path, name: str) -> np.ndarray:
    """A cached array, memory-mapped (pages are shared between the processes that read it)."""
    return np.load(folder / f"{name}.npy", mmap_mode="r")
