"""Helpers shared by the benchmark scripts: help formatting, logging to stderr, and a monitor
of how busy the machine was, so a reader can tell a clean run from a contended one."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keep the docstring's layout and show every default."""


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def all_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies over all cores from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return values[3] + values[4], sum(values[:8])  # idle + iowait; user..steal


class LoadMonitor:
    """How busy the machine is, so a reader can tell a clean run from a contended one: the share of
    all cores that other processes used just before the start (warned about on stderr) and during
    the run (busy CPU time minus this process's own), plus the 1-minute load averages (Linux)."""

    def __init__(self, threads: int, presample_s: float = 1.0):
        first = _cpu_times()
        time.sleep(presample_s)
        self.start = _cpu_times()
        self.before = self._share(first, self.start)
        self.load_start = os.getloadavg()[0]
        self.cpu0 = time.process_time()
        if self.before is not None and self.before > 0.2:
            log(
                f"warning: other work used {self.before:.0%} of the {all_cores()} cores just before the start: "
                f"timings are unreliable{'; --threads 1 is less affected' if threads > 1 else ''}"
            )

    @staticmethod
    def _share(a, b, own_jiffies: float = 0.0) -> float | None:
        if not a or not b or b[1] <= a[1]:
            return None
        busy = (b[1] - a[1]) - (b[0] - a[0]) - own_jiffies
        return round(max(busy, 0.0) / (b[1] - a[1]), 3)

    def report(self) -> dict:
        own = (time.process_time() - self.cpu0) * os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.0
        return {
            "others_cpu_share_before_start": self.before,
            "others_cpu_share_during_run": self._share(self.start, _cpu_times(), own),
            "loadavg_1min_start": round(self.load_start, 2),
            "loadavg_1min_end": round(os.getloadavg()[0], 2),
        }


def calibrate(fn, target_s: float) -> int:
    """Calls of ``fn`` that take about ``target_s`` seconds (from one timed call)."""
    t0 = time.perf_counter()
    fn()
    return max(1, math.ceil(target_s / max(time.perf_counter() - t0, 1e-9)))


# The small digits study both overhead benches sweep (sweep_overhead.py, trial_overhead.py), so their
# lwnas arms time the same trials.
OVERHEAD_STUDY = {
    "name": "overhead",
    "task": "digits",
    "objectives": ["accuracy", "params"],
    "tuner": {"sampler": "random", "seed": 0, "max_concurrent": 1, "cpus_per_trial": 1},
    "training": {"threads": 1, "batch_size": 64},
    "space": {
        "d_model": {"choice": [16, 32]},
        "heads": 4,
        "layers": 1,
        "pooling": {"choice": ["mean", "attention"]},
        "lr": {"float": [1.0e-3, 4.0e-3], "log": True},
    },
}
