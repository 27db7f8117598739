"""docs/architecture.md stays true to the tree: it names every module of the four packages, and every
module path it names exists (a renamed or removed module fails here, not in a reader's hands)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("searchspace", "trainers", "tuners", "dashboards")
DOC = ROOT / "docs" / "architecture.md"
# a path into one of the packages: `tuners/store/keys.py`, `searchspace/layers/`, `tuners/cli/main.py:run`
PATH = re.compile(rf"\b((?:{'|'.join(PACKAGES)})(?:/[A-Za-z_][A-Za-z0-9_]*)*(?:\.py|/))")


def _modules() -> list[str]:
    return sorted(
        str(p.relative_to(ROOT))
        for package in PACKAGES
        for p in (ROOT / package).rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    )


def test_every_module_is_mentioned():
    text = DOC.read_text()
    missing = [m for m in _modules() if m not in text]
    assert not missing, f"docs/architecture.md does not mention: {missing}"


def test_every_path_it_names_exists():
    named = set(PATH.findall(DOC.read_text()))
    assert len(named) > 100  # the module map: the pattern still finds what it should
    stale = sorted(p for p in named if not (ROOT / p).exists())
    assert not stale, f"docs/architecture.md names paths that do not exist: {stale}"
