"""The test suite's task plugins (tests/plugins), registered as entry points of group ``lwnas.tasks``.

``pip install -e tests/plugins`` registers them for good. Without it, ``register`` writes the same
registration (a ``.dist-info`` folder whose ``entry_points.txt`` is read from tests/plugins/pyproject.toml)
into a folder that goes on ``sys.path`` and ``PYTHONPATH`` with tests/plugins: that is how Python finds an
installed distribution's entry points, so every ``lwnas`` process and Ray worker the tests start resolves the
plugins by registration, exactly as an installed package's.
"""

from __future__ import annotations

import os
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
GROUP = "lwnas.tasks"


def declared() -> dict[str, str]:
    """The entry points tests/plugins/pyproject.toml declares: ``{name: "module:Class"}``."""
    project = tomllib.loads((PLUGINS / "pyproject.toml").read_text())["project"]
    return dict(project["entry-points"][GROUP])


def installed() -> bool:
    """Whether every test plugin is registered in this environment already."""
    found = {e.name: e.value for e in entry_points(group=GROUP)}
    return all(found.get(name) == value for name, value in declared().items())


def register(folder: Path) -> None:
    """Register the test plugins for this process and its children (see the module docstring)."""
    info = folder / "lwnas_test_plugins-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lwnas-test-plugins\nVersion: 0\n")
    lines = [f"[{GROUP}]", *(f"{name} = {value}" for name, value in declared().items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    paths = [str(PLUGINS), str(folder)]
    sys.path[:0] = [p for p in paths if p not in sys.path]
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in paths]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *inherited])
