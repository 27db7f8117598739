"""The import graph of the product packages: no cycles, no upward imports (docs/architecture.md).

Every import counts, at module level or inside a function (a lazy import is still a dependency), read
from the source with ``ast`` so nothing is imported to check it. Layers, lowest first: ``searchspace``,
``trainers``, ``tuners``, ``dashboards``; inside ``tuners``, its subpackages in ``TUNERS_LAYERS`` order.
A module may import its own layer or one below, never one above.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("searchspace", "trainers", "tuners", "dashboards")
TUNERS_LAYERS = ("store", "fronts", "planning", "driver", "simulate", "export", "cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> tuple[int, int]:
    """(package rank, rank inside tuners) of a module; a package's own ``__init__`` sits at the bottom of it."""
    parts = module.split(".")
    top = PACKAGES.index(parts[0])
    if parts[0] == "tuners" and len(parts) > 1 and parts[1] in TUNERS_LAYERS:
        return top, TUNERS_LAYERS.index(parts[1]) + 1
    return top, 0


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_upward_imports():
    upward = sorted(
        f"{source} imports {target}"
        for source, targets in graph().items()
        for target in targets
        if layer(target) > layer(source)
    )
    assert upward == []


def test_every_tuners_module_lives_in_a_layer():
    """``tuners/`` holds only its subpackages (and its own ``__init__``): no flat modules beside them."""
    flat = sorted(p.name for p in (ROOT / "tuners").glob("*.py") if p.name != "__init__.py")
    assert flat == []
    assert sorted(p.name for p in (ROOT / "tuners").iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(
        TUNERS_LAYERS
    )


def test_the_checker_sees_a_cycle_and_an_upward_import():
    """The checks above can fail: a made-up graph with both faults is caught."""
    edges = {"tuners.store.a": {"tuners.cli.b"}, "tuners.cli.b": {"tuners.store.a"}}
    assert cycles(edges) == [["tuners.cli.b", "tuners.store.a"]]
    assert layer("tuners.cli.b") > layer("tuners.store.a")
    assert layer("dashboards.app") > layer("tuners.cli.main")
