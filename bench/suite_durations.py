"""The suite's seconds per test module, written to tests/durations.json for the order pytest-xdist hands modules out.

The suite runs with ``--dist loadscope`` (pyproject.toml): each module goes whole to one worker (its module-scoped
fixtures run once), in the order tests/conftest.py sorts them: the longest first, by this file. Handing out the
long modules first keeps the run from ending on one worker still busy with a long module begun late while the
others idle. The figures only order the modules; nothing checks a test's time against them.

Run it after adding or slowing a module (a module missing from the file is ordered by its markers); either runs
the suite itself (``--durations=0``) or reads the log of a run that printed them:

    python bench/suite_durations.py                      # runs the suite, then writes tests/durations.json
    python bench/suite_durations.py --from-log ci.log    # the durations a `pytest --durations=0` run printed

Prints JSON: the modules, the seconds counted, the load while it ran.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "durations.json"
# pytest's `--durations=0` lines: "12.34s call     tests/test_x.py::test_y[param]"
LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(tests/\S+?\.py)::")


def module_seconds(text: str) -> dict[str, float]:
    """Seconds per module (setup, call and teardown of each of its tests) from pytest's durations report."""
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        match = LINE.match(line)
        if match:
            seconds[match.group(2)] = seconds.get(match.group(2), 0.0) + float(match.group(1))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--from-log", type=Path, help="read this pytest log instead of running the suite")
    parser.add_argument("--out", type=Path, default=TARGET, help="where to write the seconds per module")
    args = parser.parse_args()
    monitor = LoadMonitor(threads=1)
    if args.from_log:
        text = args.from_log.read_text(errors="replace")
    else:
        log("running the suite with --durations=0 (as .ci/run runs it, plus the report)")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        text = done.stdout
    seconds = module_seconds(text)
    if not seconds:
        sys.exit("no durations found: the log must come from `pytest --durations=0`")
    ordered = {m: round(s, 1) for m, s in sorted(seconds.items(), key=lambda item: -item[1])}
    args.out.write_text(json.dumps(ordered, indent=1) + "\n")
    machine = monitor.report()
    summary = {"bench": "suite_durations", "modules": len(ordered), "seconds": round(sum(ordered.values()), 1)}
    print(json.dumps({**summary, "written": str(args.out), "machine": machine}, indent=2))


if __name__ == "__main__":
    main()
