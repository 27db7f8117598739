"""Line coverage of the product packages by the whole test suite, subprocesses included.

Most of what the suite runs happens in other processes: the installed `lwnas` script, Ray's trial workers,
the dashboard's Streamlit server. Each Python process started while this script runs the suite measures
itself (coverage's own `.pth` hook, ``COVERAGE_PROCESS_START``) into one folder; the parts are combined and
reported over `searchspace`, `trainers`, `tuners` and `dashboards`. Prints JSON: the percentage, statements
and misses (total and per package), the suite's exit code and its wall time, with the load.

    python bench/suite_coverage.py                    # the whole suite, as .ci/run runs it
    python bench/suite_coverage.py -- -m "not slow"   # pytest's own arguments after --

Measuring slows the suite down (about 20%), so its wall time is not CI's. The hostile-input tests audit
every file a run writes outside its folder; the coverage data folder is named to them as the measurement's
own (``LWNAS_AUDIT_IGNORE``), so they still refuse every other write.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("searchspace", "trainers", "tuners", "dashboards")

RCFILE = """\
[run]
source = {packages}
parallel = true
concurrency = thread, multiprocessing
sigterm = true
data_file = {data}/.coverage

[report]
# a cluster test's workers run a copy of the packages that Ray unpacked (runtime_env py_modules), and the knob
# table test a copy of the tree: neither is this checkout's source
ignore_errors = true
omit = */py_modules_files/*
"""


def run_suite(folder: Path, pytest_args: list[str]) -> tuple[int, float]:
    """The suite under coverage, every Python subprocess measuring itself; (exit code, wall seconds)."""
    data = folder / "data"
    data.mkdir()
    rcfile = folder / "coveragerc"
    rcfile.write_text(RCFILE.format(packages=", ".join(PACKAGES), data=data))
    env = {**os.environ, "COVERAGE_PROCESS_START": str(rcfile), "LWNAS_AUDIT_IGNORE": str(data)}
    t0 = time.perf_counter()
    rc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args], cwd=ROOT, env=env
    ).returncode
    return rc, time.perf_counter() - t0


def report(folder: Path) -> dict:
    """Combine the processes' data and read the totals back as coverage's JSON report."""
    rc = ["--rcfile", str(folder / "coveragerc")]
    subprocess.run([sys.executable, "-m", "coverage", "combine", "-q", *rc], cwd=ROOT, check=True)
    out = folder / "coverage.json"
    subprocess.run([sys.executable, "-m", "coverage", "json", "-q", "-o", str(out), *rc], cwd=ROOT, check=True)
    files = json.loads(out.read_text())["files"]
    per_package: dict[str, list[int]] = {p: [0, 0] for p in PACKAGES}
    for path, entry in files.items():
        package = Path(path).parts[0]
        if package in per_package:
            per_package[package][0] += entry["summary"]["num_statements"]
            per_package[package][1] += entry["summary"]["missing_lines"]
    statements = sum(s for s, _ in per_package.values())
    missing = sum(m for _, m in per_package.values())
    return {
        "coverage_percent": round(100 * (statements - missing) / statements, 2),
        "statements": statements,
        "missing": missing,
        "packages": {
            p: {"statements": s, "missing": m, "percent": round(100 * (s - m) / s, 2)}
            for p, (s, m) in per_package.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--keep", type=Path, help="keep the combined data and coveragerc in this folder")
    parser.add_argument("pytest_args", nargs="*", help="pytest's arguments (after --)")
    args = parser.parse_args()
    monitor = LoadMonitor(threads=1)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="lwnas-coverage-"))
    folder.mkdir(parents=True, exist_ok=True)
    log(f"coverage data in {folder}")
    rc, wall = run_suite(folder, args.pytest_args)
    result = {"bench": "suite_coverage", "pytest_exit_code": rc, "suite_wall_s": round(wall, 1), **report(folder)}
    machine = monitor.report()
    machine.pop("others_cpu_share_during_run")  # the suite runs in other processes: all of it would count
    print(json.dumps({**result, "machine": machine}, indent=2))


if __name__ == "__main__":
    main()
