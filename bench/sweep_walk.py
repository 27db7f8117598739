"""The walk of one study file through `lwnas sweep`'s driver process: how often control moves between lwnas's
own files from the command line to the moment the first trial is handed to Ray.

It runs the real command in this process (`lwnas sweep STUDY --trials 1 --epochs 1`, on a SQLite file and a
Ray cache in a temporary folder: a real sweep, made tiny, because the first trial is only handed to Ray inside
Ray Tune's run, after Ray has started) and follows the main thread with `sys.settrace`. Only call and return
events of lwnas's product modules count (`searchspace`, `trainers`, `tuners`, `dashboards`); Ray, Optuna,
torch, the other libraries and the trial workers (other processes) are not followed, and neither is code that
runs while a module is imported (module bodies, class bodies, decorators). The trace ends when a product
`suggest` returns a trial's config to Ray's own code (the first trial handed over); the one trial then trains
for one epoch, untraced, and the sweep ends.

The trace is reduced to the sequence of product files control is in (entered by a call, or by a return to a
caller further up). Inside the two leaf packages, `searchspace` and `trainers`, a move between two of the
package's own files is folded into the stay of the file control entered the package through (validating one
configuration alone moves between config.py and knob_fields.py once per knob: thousands of moves that say
nothing about where the study goes); every_move keeps them. Printed as JSON:

  files           distinct product files the walk stays in
  stays           maximal runs in one file, i.e. the number of entries into a file from another product file
  returns         entries into a file that was visited before (a back-and-forth between files)
  climbs_back_up  calls from a lower layer into a higher one (a callback up, or a lower layer calling its caller)
  top_repeated    the files entered more than once, most entries first
  every_move      files, stays and returns without the folding (every move between two product files)
  steps           (with --steps) every stay: its file, how it was entered and the function entered

The layers, highest first, are those docs/architecture.md states (read from its two tables, where each
package and each subpackage of `tuners/` names what it imports): a layer is above every layer it imports,
directly or not, so

  dashboards > tuners.cli > tuners.simulate > tuners.driver > tuners.planning > tuners.fronts > tuners.store
  > trainers > searchspace, with tuners.export above tuners.planning (and beside driver and simulate)

Calls between layers neither of which imports the other (export and driver) are not climbs. Run from the
repository root (quick: Ray's start and one one-epoch trial, ~20-40 s on two cores):

    python bench/sweep_walk.py --steps
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("searchspace", "trainers", "tuners", "dashboards")
FOLDED = ("searchspace", "trainers")  # leaf packages: a move between two of their own files is theirs
TUNERS_LAYERS = ("store", "fronts", "planning", "driver", "simulate", "export", "cli")


def layer_imports(doc: Path) -> dict[str, set[str]]:
    """Each layer's direct imports, as docs/architecture.md's package table and ``tuners/`` table state them.

    Layers are ``searchspace``, ``trainers``, ``dashboards`` and ``tuners.SUB`` for each subpackage of ``tuners``.
    """
    text = doc.read_text()
    packages: dict[str, set[str]] = {}
    subpackages: dict[str, set[str]] = {}
    for row in re.findall(r"^\| `([a-z_/]+)/` \|.*\| ([^|\n]*) \|$", text, re.M):
        name, imports = row
        named = set(re.findall(r"`([a-z_]+)`", imports))
        if name in PACKAGES:
            packages[name] = named
        elif name.startswith("tuners/") and name.count("/") == 1:
            sub = name.split("/")[1]
            if "every subpackage above" in imports:
                named = set(subpackages)
            subpackages[sub] = named
    missing = [p for p in PACKAGES if p not in packages] + [s for s in TUNERS_LAYERS if s not in subpackages]
    if missing:
        raise SystemExit(f"{doc} states no imports for {', '.join(missing)}: its layer tables changed")

    def expand(names: set[str]) -> set[str]:  # package names to layers
        out = set()
        for n in names:
            out |= {f"tuners.{s}" for s in subpackages} if n == "tuners" else {n}
        return out

    layers: dict[str, set[str]] = {}
    for name in ("searchspace", "trainers", "dashboards"):
        layers[name] = expand(packages[name])
    for sub, named in subpackages.items():
        layers[f"tuners.{sub}"] = {f"tuners.{n}" for n in named} | expand(packages["tuners"])
    return layers


def below(layers: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each layer's transitive imports: the layers below it."""
    closed = {name: set(imports) for name, imports in layers.items()}
    changed = True
    while changed:
        changed = False
        for imports in closed.values():
            more = set().union(*(closed.get(i, set()) for i in imports)) - imports
            if more:
                imports |= more
                changed = True
    return closed


def layer_of(path: str) -> str:
    """``tuners/cli/sweep.py`` -> ``tuners.cli``; ``trainers/tasks/digits.py`` -> ``trainers``."""
    parts = path.split("/")
    return f"tuners.{parts[1]}" if parts[0] == "tuners" and len(parts) > 2 else parts[0]


class Moves:
    """One reduction of the trace: the sequence of stays, each a maximal run of control in one file."""

    def __init__(self) -> None:
        self.steps: list[dict[str, str]] = []
        self.current: str | None = None

    def enter(self, path: str, via: str, function: str) -> None:
        if path != self.current:
            self.steps.append({"file": path, "via": via, "function": function})
            self.current = path

    def counts(self) -> dict[str, int]:
        seen: set[str] = set()
        returns = 0
        for step in self.steps:
            returns += step["file"] in seen
            seen.add(step["file"])
        return {"files": len(seen), "stays": len(self.steps), "returns": returns}


class Walk:
    """The trace of the main thread, reduced to the product files control moves through.

    Two reductions: ``walk`` folds the moves between two files of one leaf package (``searchspace``, ``trainers``)
    into the stay of the file control entered that package through (inside it, every knob's check calling its
    field's metadata is thousands of moves and the package's own business; the walk is the study crossing
    modules of the product); ``every_move`` keeps every move between two product files.
    """

    def __init__(self, roots: dict[str, str], lower: dict[str, set[str]]):
        self.roots, self.lower = roots, lower  # {absolute folder: package}, layers below each layer
        self.files: dict[str, str | None] = {}  # co_filename -> product path, or None
        self.walk, self.every_move = Moves(), Moves()
        self.shown: dict[int, str] = {}  # id of a running product frame -> the file its stay in the walk is in
        self.climbs: list[dict[str, str]] = []
        self.entry: Any = None  # the code object of the function that runs the command: the walk's bottom
        self.done = False
        self.handed: str | None = None

    def product(self, filename: str) -> str | None:
        if filename not in self.files:
            path = None
            for folder in self.roots:
                if filename.startswith(folder):
                    path = os.path.relpath(filename, ROOT).replace(os.sep, "/")
                    break
            self.files[filename] = path
        return self.files[filename]

    def _importing(self, frame: FrameType | None) -> bool:
        """Whether ``frame`` runs inside a module's import (a ``<module>`` frame above the command's entry)."""
        while frame is not None and frame.f_code is not self.entry:
            if frame.f_code.co_name == "<module>":
                return True
            frame = frame.f_back
        return False

    def _caller(self, frame: FrameType | None) -> FrameType | None:
        """The nearest traced product frame at or above ``frame`` (library frames in between are skipped)."""
        while frame is not None and frame.f_code is not self.entry:
            if id(frame) in self.shown:
                return frame
            frame = frame.f_back
        return None

    def trace(self, frame: FrameType, event: str, arg: Any):
        if self.done or event != "call":
            return None
        path = self.product(frame.f_code.co_filename)
        if path is None or frame.f_code.co_name == "<module>" or self._importing(frame):
            return None
        caller = self._caller(frame.f_back)
        function = frame.f_code.co_qualname
        shown = path
        if caller is not None:
            caller_path = self.product(caller.f_code.co_filename) or ""
            if layer_of(caller_path) == layer_of(path) in FOLDED:
                shown = self.shown[id(caller)]  # a move inside a leaf package: folded into the package's stay
            elif layer_of(caller_path) in self.lower.get(layer_of(path), set()):
                self.climbs.append({"from": caller_path, "to": path, "function": function})
        self.shown[id(frame)] = shown
        self.walk.enter(shown, "call", function)
        self.every_move.enter(path, "call", function)
        frame.f_trace_lines = False
        return self.local

    def local(self, frame: FrameType, event: str, arg: Any):
        if self.done:
            return None
        if event != "return":
            return self.local
        self.shown.pop(id(frame), None)
        if frame.f_code.co_name == "suggest" and isinstance(arg, dict) and frame.f_back is not None:
            if self.product(frame.f_back.f_code.co_filename) is None:  # a config returned to Ray: handed over
                self.done = True
                self.handed = f"{self.product(frame.f_code.co_filename)}:{frame.f_code.co_qualname}"
                sys.settrace(None)
                return None
        caller = self._caller(frame.f_back)
        if caller is not None:
            function = caller.f_code.co_qualname
            self.walk.enter(self.shown[id(caller)], "return", function)
            self.every_move.enter(self.product(caller.f_code.co_filename) or "", "return", function)
        return self.local

    def report(self, steps: bool, top: int) -> dict[str, Any]:
        entries = Counter(step["file"] for step in self.walk.steps)
        out: dict[str, Any] = {
            **self.walk.counts(),
            "climbs_back_up": len(self.climbs),
            "top_repeated": [{"file": f, "stays": n} for f, n in entries.most_common(top) if n > 1],
            "climbs": self.climbs,
            "every_move": {
                **self.every_move.counts(),
                "top_repeated": [
                    {"file": f, "stays": n}
                    for f, n in Counter(s["file"] for s in self.every_move.steps).most_common(top)
                    if n > 1
                ],
            },
            "handed_to_ray_by": self.handed,
            "file_list": sorted({step["file"] for step in self.walk.steps}),
        }
        if steps:
            out["steps"] = self.walk.steps
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument(
        "--study",
        type=Path,
        default=Path("studies/quickstart.yaml"),
        help="the study file to follow (a relative path starts at the repository root if it is not in the working "
        "directory)",
    )
    parser.add_argument("--steps", action="store_true", help="print every stay (file, how entered, function)")
    parser.add_argument("--top", type=int, default=8, help="how many of the most repeated files to name")
    args = parser.parse_args()
    if not args.study.exists() and not args.study.is_absolute():
        args.study = ROOT / args.study

    import searchspace
    import trainers
    import tuners
    from tuners.cli.main import app

    roots = {str(Path(m.__path__[0]).resolve()) + os.sep: m.__name__ for m in (searchspace, trainers, tuners)}
    import dashboards  # imports nothing heavy: its package only

    roots[str(Path(dashboards.__path__[0]).resolve()) + os.sep] = "dashboards"
    walk = Walk(roots, below(layer_imports(ROOT / "docs/architecture.md")))
    monitor = LoadMonitor(threads=1)
    with tempfile.TemporaryDirectory(prefix="lwnas-walk-") as tmp:
        os.environ["LWNAS_CACHE"] = str(Path(tmp) / "cache")  # Ray's results of this sweep go with the folder
        command = [
            "sweep",
            str(args.study),
            "--storage",
            f"sqlite:///{tmp}/walk.db",
            "--trials",
            "1",
            "--epochs",
            "1",
            "--name",
            "sweep-walk",
        ]
        log(f"lwnas {' '.join(command)} (traced until the first trial is handed to Ray)")

        def run_command() -> int:
            try:
                app(command, standalone_mode=False)
            except SystemExit as exc:
                return int(exc.code or 0)
            return 0

        walk.entry = run_command.__code__
        t0 = time.perf_counter()
        # stdout is this script's JSON: what the sweep prints there (its front) goes to stderr with its progress
        with contextlib.redirect_stdout(sys.stderr):
            sys.settrace(walk.trace)
            try:
                code = run_command()
            finally:
                sys.settrace(None)
        seconds = time.perf_counter() - t0
    assert threading.current_thread() is threading.main_thread()
    result = walk.report(args.steps, args.top)
    if walk.handed is None:
        raise SystemExit(f"the sweep ended (exit {code}) before any trial was handed to Ray: nothing to report")
    result.update(
        {
            "study": os.path.relpath(args.study.resolve(), ROOT),
            "command": f"lwnas {' '.join(command[:2])} --trials 1 --epochs 1 (storage and Ray cache in a temp folder)",
            "exit_code": code,
            "seconds_whole_command": round(seconds, 1),
            "load": monitor.report(),
        }
    )
    sys.stdout.write(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
