"""Audit hook for the hostile-input suite (tests/test_hostile.py puts this folder on PYTHONPATH).

Python reports every file opened for writing, every directory made or file removed, and every
process started through ``sys.addaudithook``; each one outside ``LWNAS_AUDIT_ROOT`` is printed as an
``AUDIT`` line on stderr, which the test refuses. It observes the real ``lwnas`` run; it blocks nothing.
"""

import os
import sys

_ROOT = os.environ.get("LWNAS_AUDIT_ROOT")
# folders a measuring harness owns (bench/suite_coverage.py: each process's coverage data), not the run's writes
_IGNORED = tuple(os.path.realpath(p) + os.sep for p in os.environ.get("LWNAS_AUDIT_IGNORE", "").split(os.pathsep) if p)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS = {
    "os.mkdir",
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.chmod",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_PROCESS_EVENTS = {
    "os.system",
    "subprocess.Popen",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "pty.spawn",
    "os.startfile",
}


def _outside(path) -> bool:
    if isinstance(path, int):
        return False  # a descriptor already open
    real = os.path.realpath(os.fsdecode(path))
    return real != os.devnull and not real.startswith((_ROOT + os.sep, *_IGNORED))


def _hook(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writes and path is not None and _outside(path):
            sys.stderr.write(f"AUDIT open for writing outside the test folder: {path!r}\n")
    elif event in _PATH_EVENTS and args and _outside(args[0]):
        sys.stderr.write(f"AUDIT {event} outside the test folder: {args[0]!r}\n")
    elif event in _PROCESS_EVENTS:
        sys.stderr.write(f"AUDIT {event}: {args!r}\n"[:300])


if _ROOT:
    _ROOT = os.path.realpath(_ROOT)
    sys.addaudithook(_hook)
