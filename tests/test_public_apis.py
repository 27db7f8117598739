"""Project code uses only the public APIs of Ray and Optuna.

An AST scan of the project's packages: a private name (``_x``, not a dunder) may be read on one of
the project's own modules, on any object inside the file that defines the name, and on
``self``/``cls``/``super()`` when the project defines it (in a file that uses Ray or Optuna, another
one comes from their base classes); no private module or name is imported from Ray or Optuna.
Library upgrades change private names silently; this keeps them out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWN = ("searchspace", "trainers", "tuners", "dashboards", "bench")
LIBRARIES = ("ray", "optuna")  # whose private names are checked (a torch subclass in trainers/cost.py reads torch's)
BENCH_MODULES = tuple(p.stem for p in (ROOT / "bench").glob("*.py"))  # bench scripts import ``_common`` by name


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """Private names a file defines: functions, classes, module names and attributes it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if _private(n)}


def _own_module(module: str | None, level: int) -> bool:
    return level > 0 or (module or "").split(".")[0] in OWN + BENCH_MODULES


def _library(module: str | None) -> bool:
    return (module or "").split(".")[0] in LIBRARIES


def _own_aliases(tree: ast.AST) -> set[str]:
    """Names bound to the project's own modules (``from . import keys``, ``import tuners``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {(a.asname or a.name).split(".")[0] for a in node.names if _own_module(a.name, 0)}
        elif isinstance(node, ast.ImportFrom) and _own_module(node.module, node.level):
            aliases |= {a.asname or a.name for a in node.names}
    return aliases


def _is_self(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def private_uses(source: str, project_defined: set[str]) -> list[str]:
    """``line: code`` for each use of another library's private name in ``source``."""
    tree = ast.parse(source)
    local, aliases, found = _defined(tree), _own_aliases(tree), []
    uses_library = any(
        isinstance(n, ast.Import)
        and any(_library(a.name) for a in n.names)
        or isinstance(n, ast.ImportFrom)
        and n.level == 0
        and _library(n.module)
        for n in ast.walk(tree)
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _library(node.module):
            if any(_private(part) for part in (node.module or "").split(".")) or any(
                _private(a.name) for a in node.names
            ):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: {ast.unparse(node)}"
                for a in node.names
                if _library(a.name) and any(_private(p) for p in a.name.split("."))
            ]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            if _is_self(base):
                # in a file that uses Ray or Optuna, a private name the project never defines comes from
                # one of their base classes (``OptunaSearch._ot_trials``)
                ok = node.attr in project_defined or not uses_library
            elif isinstance(base, ast.Name) and base.id in aliases:
                ok = True
            else:
                ok = node.attr in local  # e.g. ``cfg._normalise()`` in the module of ArchConfig
            if not ok:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _project_files() -> list[Path]:
    return sorted(p for pkg in OWN for p in (ROOT / pkg).rglob("*.py"))


def _project_defined() -> set[str]:
    return set().union(*(_defined(ast.parse(p.read_text(encoding="utf-8"))) for p in _project_files()))


def test_no_project_file_touches_a_private_attribute_of_a_library():
    defined = _project_defined()
    found = {
        str(p.relative_to(ROOT)): uses
        for p in _project_files()
        if (uses := private_uses(p.read_text(encoding="utf-8"), defined))
    }
    assert found == {}


PLANTED = """
import optuna
from optuna.storages._cached_storage import _CachedStorage
from ray.tune.search import Searcher
from . import keys


class Mine(Searcher):
    def __init__(self, study):
        self._own = study

    def suggest(self, trial_id):
        keys._engine_kwargs("sqlite://")  # an own module: fine
        self._own.ask()  # defined here: fine
        frozen = self._own._storage.get_trial(trial_id)  # Optuna's study internals
        return self._metric, frozen._trial_id  # Ray's base-class field, Optuna's trial field
"""


def test_the_scan_catches_a_planted_private_use():
    uses = private_uses(PLANTED, {"_own"})
    assert sorted(u.split()[0] for u in uses) == ["15:", "16:", "16:", "3:"]
    assert any("_storage" in u for u in uses) and any("self._metric" in u for u in uses)
    assert any("_trial_id" in u for u in uses) and any("_cached_storage" in u for u in uses)
    assert not any("_engine_kwargs" in u or "_own.ask" in u for u in uses)
