"""The CLI and the study language start without torch, Ray or Streamlit (they load in the commands that need them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "ray", "streamlit")
LWNAS = Path(sys.executable).parent / "lwnas"


def heavy_modules_after(statement: str) -> list[str]:
    """The heavy packages in ``sys.modules`` after running ``statement`` in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_cli_and_the_study_language_import_no_heavy_package():
    assert (
        heavy_modules_after(
            "import tuners.cli.main, searchspace, searchspace.study, searchspace.space, "
            "searchspace.config, searchspace.knobs, searchspace.knobs_doc"
        )
        == []
    )


def test_the_models_still_load_on_first_use():
    # the same check sees torch once a model is asked for (searchspace loads it lazily)
    assert heavy_modules_after("from searchspace import build_model") == ["torch"]


def test_lwnas_help_imports_no_heavy_package():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(LWNAS), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "sweep" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "typer" in imported  # the listing is real
    assert sorted(m for m in imported if m.split(".")[0] in HEAVY) == []


def test_lwnas_status_imports_no_heavy_package(tmp_path):
    # a read command: the front table lives in tuners.fronts, below the driver that imports Ray
    from dashboards.sample import seed_study

    url = f"sqlite:///{tmp_path / 'read.db'}"
    seed_study(url, name="read", trials=12, seed=0)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(LWNAS), "status", "read", "--storage", url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Pareto front of read" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "optuna" in imported  # the listing is real
    assert sorted(m for m in imported if m.split(".")[0] in HEAVY) == []
