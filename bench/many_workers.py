"""Many concurrent trials: `lwnas sweep` (the installed script, as a user runs it) over a sleep-based task
plugin (``tests/plugins/sleep_task.py``: each epoch sleeps ``--sleep`` seconds on a few samples), with
``--concurrent`` trials at once on fractional CPUs, then checks storage: every trial number once, every
trial finished with its whole budget, and as many Ray trial directories as stored trials.

Utilisation = busy trial-seconds (each trial's recorded training wall time) / (wall x concurrency),
with wall both the whole `lwnas sweep` command (Ray's start and every actor's start included) and the
span from the first trial's start to the last one's end as storage records them.

    python bench/many_workers.py --concurrent 20 --trials 40 --epochs 2 --sleep 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from _common import HelpFormatter, LoadMonitor, all_cores, log

PLUGIN = Path(__file__).resolve().parents[1] / "tests" / "plugins" / "sleep_task.py"


def study_spec(concurrent: int, trials: int, epochs: int, sleep: float) -> dict:
    cpus = round(0.9 * all_cores() / concurrent, 4)  # all trials fit at once on this machine's cores
    return {"name": "many-workers", "task": "sleep_task:SleepDigits", "task_options": {"sleep_s": sleep},
            "objectives": [{"metric": "accuracy", "direction": "maximize"}, {"metric": "params", "direction": "minimize"}],
            "budget": {"trials": trials, "epochs": epochs},
            "tuner": {"sampler": "random", "scheduler": "none", "max_concurrent": concurrent, "seed": 0,
                      "cpus_per_trial": cpus},
            "training": {"batch_size": 16, "threads": 1},
            "space": {"d_model": {"choice": [16, 32]}, "heads": 2, "layers": 1,
                      "lr": {"float": [1.0e-3, 5.0e-3], "log": True}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--concurrent", type=int, default=20, help="trials running at once")
    parser.add_argument("--trials", type=int, default=40, help="trials in the sweep")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per trial")
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds each epoch sleeps")
    args = parser.parse_args()

    import optuna

    from tuners.storage import record_of

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monitor = LoadMonitor(threads=1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copy(PLUGIN, tmp / "sleep_task.py")
        spec = study_spec(args.concurrent, args.trials, args.epochs, args.sleep)
        (tmp / "study.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        url = f"sqlite:///{tmp / 'many.db'}"
        env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               "LWNAS_CACHE": str(tmp / "cache"), "RAY_USAGE_STATS_ENABLED": "0", "RAY_ADDRESS": "local"}
        log(f"lwnas sweep: {args.trials} trials, {args.concurrent} at once, {spec['tuner']['cpus_per_trial']} CPUs each")
        t0 = time.perf_counter()
        done = subprocess.run(["lwnas", "sweep", "study.yaml", "--storage", url], cwd=tmp, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"lwnas sweep failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        trials = optuna.load_study(study_name="many-workers", storage=url).trials
        ray_trials = sum(1 for p in (tmp / "cache" / "ray_results").glob("*/*") if p.is_dir())
    records = [record_of(t) for t in trials]
    numbers = [t.number for t in trials]
    busy = sum(r.wall_time or 0.0 for r in records)
    starts = [t.datetime_start for t in trials if t.datetime_start]
    ends = [t.datetime_complete for t in trials if t.datetime_complete]
    span = (max(ends) - min(starts)).total_seconds() if starts and ends else None
    print(json.dumps({
        "concurrent": args.concurrent, "trials": args.trials, "epochs": args.epochs, "sleep_s": args.sleep,
        "cpus_per_trial": spec["tuner"]["cpus_per_trial"],
        "lwnas_sweep_wall_s": round(wall, 1), "trials_span_s": round(span, 1) if span else None,
        "busy_trial_s": round(busy, 1),
        "utilisation_command": round(busy / (wall * args.concurrent), 3),
        "utilisation_span": round(busy / (span * args.concurrent), 3) if span else None,
        "stored_trials": len(trials), "numbers_each_once": sorted(numbers) == list(range(args.trials)),
        "complete_full_budget": sum(1 for t, r in zip(trials, records) if t.state.name == "COMPLETE"
                                    and len(r.epochs) == args.epochs),
        "ray_trial_dirs": ray_trials,
        "machine": monitor.report(),
    }, indent=2))


if __name__ == "__main__":
    main()
