"""Running the installed ``lwnas`` on hostile inputs, as tests/test_hostile_inputs.py does.

Each command runs in its own process in a fresh folder, with HOME and TMPDIR inside it, bounded by a timeout,
and with Python's audit hook (tests/hostile/audit/sitecustomize.py) reporting any write, removal or process
start outside the folder as an ``AUDIT`` line on stderr.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

AUDIT = Path(__file__).resolve().parents[1] / "hostile" / "audit"
TIMEOUT_S = 120  # one command, on a machine under load 10: torch's import alone can take 20 s


def sandbox_env(root: Path, pythonpath: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a command confined to ``root`` (which holds ``home`` and ``tmp``)."""
    home, tmp = root / "home", root / "tmp"
    for folder in (home, tmp):
        folder.mkdir(exist_ok=True)
    # torch sets its inductor cache folders in the environment of a process that used them: not inherited
    inherited = {k: v for k, v in os.environ.items() if k not in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    inherited.pop("LWNAS_STORAGE", None)
    return {
        **inherited,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LWNAS_CACHE": str(tmp / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        "LWNAS_AUDIT_ROOT": str(root),
        "PYTHONPATH": os.pathsep.join(filter(None, [*pythonpath, str(AUDIT), os.environ.get("PYTHONPATH")])),
    }


def lwnas(root: Path, cwd: Path, *args: str, pythonpath: tuple[str, ...] = (), timeout: float = TIMEOUT_S):
    """``lwnas ARGS`` run in ``cwd`` as described in the module docstring; its CompletedProcess."""
    script = shutil.which("lwnas")
    assert script, "the lwnas script is not installed in this environment"
    return subprocess.run(
        [script, *args],
        cwd=cwd,
        env=sandbox_env(root, pythonpath),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
    )


def refused(result: subprocess.CompletedProcess, expected_audit: tuple[str, ...] = ()) -> str:
    """The one error line of a command that refused its input: non-zero exit, no traceback, nothing written
    or started outside its folder (no ``AUDIT`` line but those starting with one of ``expected_audit``: what a
    library lwnas uses does by itself, such as h5py asking ``uname -p``)."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output, output
    audit = [line for line in output.splitlines() if line.startswith("AUDIT") and not line.startswith(expected_audit)]
    assert not audit, output
    errors = [line for line in result.stderr.splitlines() if re.match(r"error\b", line)]
    assert len(errors) == 1, result.stderr
    return errors[0]
