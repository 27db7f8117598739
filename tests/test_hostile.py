"""Hostile and malformed study files (issue 21): each is refused with one located line, nothing runs.

Every file in tests/hostile/ starts with ``# expect: <the error line>`` (``{file}`` for its name). The
installed ``lwnas space validate FILE`` runs on a copy in a fresh folder, in its own process, under a
memory limit and a timeout, with HOME and TMPDIR inside that folder and Python's audit hook reporting
any write, removal or process start outside it (tests/hostile/audit/sitecustomize.py).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "hostile"
CASES = sorted(HOSTILE.glob("*.yaml"))
MEMORY_LIMIT = 3 << 30  # address space: torch's import alone maps about 1.5 GiB
TIMEOUT_S = 120
INJECTED = "injected-file"  # what the files' commands would write, were anything called


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def validate(case: Path, tmp_path: Path, *flags: str, pythonpath: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``lwnas space validate NAME [FLAGS]`` on a copy of ``case``, run as described in the module docstring
    (``pythonpath``: folders put first on the command's PYTHONPATH)."""
    work, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for folder in (work, home, tmp):
        folder.mkdir(exist_ok=True)
    if case.parent != work:
        shutil.copy(case, work / case.name)
    lwnas = shutil.which("lwnas")
    assert lwnas, "the lwnas script is not installed in this environment"
    # torch sets TORCHINDUCTOR_CACHE_DIR in the environment of a process that used its inductor (an earlier
    # test in this pytest run may have): a child would inherit a cache folder outside the test's own
    inherited = {k: v for k, v in os.environ.items() if k not in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    env = {
        **inherited,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LWNAS_CACHE": str(tmp / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LWNAS_AUDIT_ROOT": str(tmp_path),
        "PYTHONPATH": os.pathsep.join(
            filter(None, [*pythonpath, str(HOSTILE / "audit"), os.environ.get("PYTHONPATH")])
        ),
    }
    return subprocess.run(
        [lwnas, "space", "validate", case.name, *flags],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT_S,
        preexec_fn=_limit_memory,
    )


def expected_line(case: Path) -> str:
    first = case.read_bytes().split(b"\n", 1)[0].decode("ascii")
    assert first.startswith("# expect: "), f"{case.name} must start with `# expect: <error line>`"
    return first.removeprefix("# expect: ").replace("{file}", case.name)


def assert_refused_safely(result: subprocess.CompletedProcess, name: str, tmp_path: Path) -> list[str]:
    """Non-zero exit, no traceback, nothing written or started outside the folder; the error lines."""
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output, output
    assert "AUDIT" not in output, output
    assert not list(tmp_path.rglob(INJECTED)), "a command named in the file ran"
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and re.match(rf"error {re.escape(name)}(:\d+)?: ", errors[0]), result.stderr
    return errors


def test_the_suite_covers_enough_files():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_hostile_file_is_refused_with_its_line(case, tmp_path):
    result = validate(case, tmp_path)
    [error] = assert_refused_safely(result, case.name, tmp_path)
    assert error == expected_line(case)
    assert re.match(rf"error {re.escape(case.name)}:\d+: ", error), "the error names no line"


def test_oversized_file_is_refused_before_it_is_read(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    case = work / "huge.yaml"
    case.write_text("task: digits\nobjectives: [accuracy]\nspace: {d_model: 32}\n" + "# padding\n" * 200_000)
    [error] = assert_refused_safely(validate(case, tmp_path), case.name, tmp_path)
    assert error == "error huge.yaml: is larger than 1,048,576 bytes, the limit for a study or configuration file"


TRAP_PLUGIN = '''
from pathlib import Path

from trainers.tasks.digits import Digits


class TrapTask(Digits):
    """A valid task whose every call leaves a file behind: validation must call none of it."""

    name, family = "trap", "encoder"

    def __init__(self, **options):
        Path("constructed").write_text(repr(options))

    def input_sizes(self):
        Path("input-sizes-called").write_text("")
        return super().input_sizes()
'''


def test_plugin_task_is_checked_without_calling_it(tmp_path):
    """A plugin that implements the Task protocol validates, and nothing it defines is called (an unregistered
    class, imported because the command line allows it: the file alone could not)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "trap_task.py").write_text(TRAP_PLUGIN)
    case = work / "plugin.yaml"
    case.write_text(
        "task: trap_task:TrapTask\ntask_options: {anything: 1}\nobjectives: [accuracy, params]\n"
        "space:\n  d_model: {choice: [16, 32]}\n  heads: 4\n  layers: 1\n"
    )
    result = validate(case, tmp_path, "--allow-plugin", "trap_task:TrapTask", pythonpath=(str(work),))
    assert result.returncode == 0, result.stderr
    assert "ok plugin.yaml: 1 searched knobs" in result.stderr and "AUDIT" not in result.stderr
    assert sorted(p.name for p in work.iterdir()) == ["plugin.yaml", "trap_task.py"]


def test_features_file_declaring_terabytes_is_refused(tmp_path):
    """A study's data file is read by the `features` task: an .npy header that declares far more than
    the file holds is refused before numpy allocates what it declares."""
    import numpy as np
    from numpy.lib import format as npy_format

    work = tmp_path / "work"
    work.mkdir()
    header = work / "header.npy"
    with header.open("wb") as f:
        npy_format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    with zipfile.ZipFile(work / "bomb.npz", "w") as z:
        z.write(header, "regions.npy")
        np.save(work / "labels.npy", np.zeros(4, dtype=np.int64))
        z.write(work / "labels.npy", "labels.npy")
    case = work / "data.yaml"
    case.write_text(
        "task: features\nfamily: encoder\ntask_options: {path: bomb.npz}\nobjectives: [accuracy]\n"
        "space: {d_model: 32}\n"
    )
    [error] = assert_refused_safely(validate(case, tmp_path), case.name, tmp_path)
    assert error == (
        "error data.yaml:1: task: features: `regions.npy` declares shape (1000000000000,) of float32 "
        "(4,000,000,000,000 bytes) but holds 0 bytes"
    )
