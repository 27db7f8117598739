"""Start-up time of the `lwnas` command: `lwnas --help` against `python -c pass` (the interpreter
alone) and `python -c "import torch"` (what every command paid while the CLI imported torch).

The three commands run interleaved, each --runs times in fresh processes, in one run of this
script; prints JSON with the median wall time of each and the ratios. Run it from the repository
root with the environment's Python (the `lwnas` script beside it is the one measured):

    python bench/cli_startup.py --runs 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

LWNAS = str(Path(sys.executable).parent / "lwnas")
COMMANDS = {
    "python_pass": [sys.executable, "-c", "pass"],
    "lwnas_help": [LWNAS, "--help"],
    "python_import_torch": [sys.executable, "-c", "import torch"],
}


def timed(command: list[str]) -> float:
    """Wall seconds of one run of ``command`` (which must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (the median is reported)")
    args = parser.parse_args()
    for command in COMMANDS.values():  # warm the file cache so the first timed run is not an outlier
        timed(command)
    monitor = LoadMonitor(threads=1)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for i in range(args.runs):
        log(f"round {i + 1}/{args.runs}")
        for name, command in COMMANDS.items():  # interleaved: a burst of load hits all three alike
            times[name].append(timed(command))
    median = {name: round(statistics.median(t), 3) for name, t in times.items()}
    print(
        json.dumps(
            {
                "runs": args.runs,
                "median_s": median,
                "ratio_lwnas_help_over_python_pass": round(median["lwnas_help"] / median["python_pass"], 2),
                "ratio_lwnas_help_over_import_torch": round(median["lwnas_help"] / median["python_import_torch"], 3),
                "all_s": {name: [round(v, 3) for v in t] for name, t in times.items()},
                "machine": monitor.report(),  # the measured processes are children: their CPU counts as "others"
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
