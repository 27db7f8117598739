"""Checks on a data path before anything opens it.

A path a study, configuration, checkpoint or data folder names may be anything the file system holds: a FIFO
(whose open blocks until some writer appears, so the command would hang forever), a device, a socket, a loop
of symbolic links, or a link that leads out of the data folder. Each is refused with one line naming the path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def _stat(path: Path, what: str) -> os.stat_result:
    try:
        return os.stat(path)  # follows symbolic links, as the open would
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"{what}: {path} is a loop of symbolic links (it leads back to itself)") from None
        raise ValueError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None


def regular_file(path: Path, what: str) -> Path:
    """``path`` when it is a regular file (after following symbolic links); ValueError naming it otherwise."""
    kind = stat.S_IFMT(_stat(path, what).st_mode)
    if kind != stat.S_IFREG:
        described = _KINDS.get(kind, "not a regular file")
        raise ValueError(f"{what}: {path} is not a regular file ({described}): give a file of data")
    return path


def folder(path: Path, what: str) -> bool:
    """Whether ``path`` is a folder (after following links); ValueError for a loop of symbolic links."""
    return stat.S_ISDIR(_stat(path, what).st_mode)


def inside(path: Path, root: Path, what: str) -> Path:
    """``path`` when, links followed, it lies inside the data folder ``root``; ValueError naming both otherwise.

    A symbolic link that leads out of the data folder would make a data set train on files nobody gave it.
    """
    real, base = path.resolve(), root.resolve()
    if real != base and base not in real.parents:
        raise ValueError(
            f"{what}: {path} is a symbolic link to {real}, outside the data folder {base}: copy what it holds "
            f"into the data folder (lwnas reads only files inside it)"
        )
    return path
