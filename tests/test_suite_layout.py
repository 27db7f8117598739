"""The test suite's own layout: no test module imports another (shared test code lives in tests/helpers/, shared
fixtures in tests/conftest.py), and the markers the suite applies are registered (pyproject.toml)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_test_module_imports_another():
    test_modules = {p.stem for p in TESTS.rglob("test_*.py")}
    offenders = {
        str(path.relative_to(TESTS)): sorted(
            name for name in _imported(path) if name.split(".")[-1] in test_modules | {"conftest"}
        )
        for path in TESTS.rglob("*.py")
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert not offenders, f"move what these import into tests/helpers/ or tests/conftest.py: {offenders}"


def test_the_markers_the_suite_uses_are_registered():
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    registered = {line.split(":")[0] for line in config["markers"]}
    assert {"slow", "postgres", "browser", "cluster"} <= registered
    assert "--strict-markers" in config["addopts"]  # a misspelt marker is an error, not a silent no-op
