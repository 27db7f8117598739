"""Search cost: the training compute each search strategy needs to reach 99 % of the true front's hypervolume,
as a ratio to what full-trial NSGA-II needs, on the shipped tables (issue 31).

For each table and strategy the table's study (sampler nsga2, 2 workers, seed 0, reduction factor 3, the
table's budget of epochs) is replayed ``--seeds`` times by ``tuners.simulate.simulator`` until it reaches 99 %
of the true hypervolume or trains ``--cap`` x the table's architectures. ``compute_ratio`` is the median over
seeds of (the strategy's recorded training seconds to 99 % in that seed) / (full NSGA-II's median over its
seeds), with its interquartile range; a seed that never got there counts as infinite. Where the compute goes:
the trials trained in full, the trials pruned and the points screened, medians over seeds.

Without ``--simulate-only``, each strategy named by ``--real`` is also swept for real by ``lwnas``'s driver
(``--real-trials`` trials each, ``--real-repeats`` sweeps with tuner seeds 0, 1, ...) on the table's task, and
its hypervolume (each architecture it trained in full at its table value) and epochs are compared with the
replays' at the same trial budget: ``real_sweep.within_spread`` says whether each real sweep lies in the
replays' range. Prints one JSON object per line: one per table and strategy, then the machine's load.

    python bench/search_cost.py --simulate-only
    python bench/search_cost.py --tables tests/data/tiny-digits.lwtable.json.gz --real full,sh-1 --real-trials 8
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import math
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TABLES = str(ROOT / "studies" / "tables" / "*.lwtable.json.gz")
BASELINE = "full"


def study_of(table, strategy: str, trials: int, seed: int = 0, concurrent: int = 2):
    """The table's study with nsga2 proposing, the strategy given and a trial budget."""
    from searchspace.study import study_from_dict
    from tuners.planning.check import task_family

    spec = {
        "name": f"{table.study}-{strategy}-{seed}",
        "task": table.task,
        "task_options": table.task_options,
        "family": table.family,
        "objectives": [{"metric": o.metric, "direction": o.direction} for o in table.objectives],
        "budget": {"trials": trials, "epochs": table.epochs},
        "tuner": {"sampler": "nsga2", "max_concurrent": concurrent, "seed": seed, "reduction_factor": 3},
        "search": {"strategy": strategy},
        "training": table.training,
        "space": table.space,
    }
    return study_from_dict(spec, task_family=task_family)


_ARM: dict = {}  # what forked replay workers read: the table, the study and the replay's limits


def _replay_seed(seed: int):
    from tuners.simulate.simulator import replay

    return replay(_ARM["study"], _ARM["table"], seed, **_ARM["limits"])


def simulate(table, strategy: str, seeds: int, cap: float, lacking: str = "error", jobs: int = 1):
    """``seeds`` replays of the strategy until 99 % of the true hypervolume, on ``jobs`` processes (forked)."""
    target = 0.99 * table.true_hypervolume()
    trials = max(1, int(cap * len(table.entries)))
    started = time.perf_counter()
    _ARM.update(study=study_of(table, strategy, trials), table=table, limits={"stop_at": target, "lacking": lacking})
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            runs = pool.map(_replay_seed, range(seeds))
    else:
        runs = [_replay_seed(s) for s in range(seeds)]
    return runs, time.perf_counter() - started


NEVER = 1e300  # a seed that never reached 99 %: infinite compute (a stand-in numpy interpolates without NaN)


def _percentiles(values, qs) -> list[float]:
    values = np.minimum(np.asarray(values, dtype=float), NEVER)
    return [math.inf if v > 1e200 else float(v) for v in np.percentile(values, qs)]


def _median_iqr(values) -> dict:
    q1, med, q3 = _percentiles(values, [25, 50, 75])
    return {"median": _num(med), "q1": _num(q1), "q3": _num(q3)}


def _num(value: float) -> float | None:
    return None if not math.isfinite(value) else round(float(value), 4)


def real_sweeps(table, strategy: str, trials: int, repeats: int, seeds: int) -> dict:
    """``repeats`` real sweeps of ``strategy`` at ``trials`` trials, against the replays at that budget."""
    from tuners.driver.sweep import SweepOptions, run_sweep
    from tuners.simulate.simulator import replays
    from tuners.store.record import record_of

    true_hv = table.true_hypervolume()
    runs = replays(study_of(table, strategy, trials), table, seeds)
    sim_hv = [r.steps[-1].hypervolume / true_hv for r in runs]
    sim_epochs = [r.steps[-1].epochs for r in runs]
    real = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(repeats):
            study = study_of(table, strategy, trials, seed=seed)
            started = time.perf_counter()
            with contextlib.redirect_stdout(sys.stderr):  # the sweep prints its front: stdout keeps the JSON
                ot = run_sweep(study, SweepOptions(storage=f"sqlite:///{Path(tmp) / 'real.db'}", quiet=True))
            records = [record_of(t) for t in ot.trials]
            complete = {}
            for r in records:
                if r.outcome == "complete":
                    entry = table.entry(r.params)
                    complete[entry.key] = entry
            hv = table.hypervolume_of(list(complete.values())) / true_hv
            epochs = sum(len(r.epochs) for r in records)
            real.append(
                {
                    "seed": seed,
                    "hypervolume_fraction": round(hv, 4),
                    "epochs": epochs,
                    "wall_s": round(time.perf_counter() - started, 1),
                    "within_spread": bool(
                        min(sim_hv) - 1e-9 <= hv <= max(sim_hv) + 1e-9 and min(sim_epochs) <= epochs <= max(sim_epochs)
                    ),
                }
            )
    return {
        "trials": trials,
        "sweeps": real,
        "replays": {
            "seeds": seeds,
            "hypervolume_fraction": {"min": round(min(sim_hv), 4), **_median_iqr(sim_hv), "max": round(max(sim_hv), 4)},
            "epochs": {"min": min(sim_epochs), **_median_iqr(sim_epochs), "max": max(sim_epochs)},
        },
        "within_spread": all(r["within_spread"] for r in real),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--tables", default=DEFAULT_TABLES, help="table files (a glob or comma-separated paths)")
    parser.add_argument("--strategies", default="all", help="comma-separated strategies, or all")
    parser.add_argument("--seeds", type=int, default=20, help="replays per strategy (seeds 0 .. N-1)")
    parser.add_argument("--cap", type=float, default=4.0, help="trial budget of a replay, x the table's architectures")
    parser.add_argument(
        "--partial", action="store_true", help="tables of part of their space: points they lack are out of bounds"
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes the replays of a strategy run on")
    parser.add_argument("--simulate-only", action="store_true", help="replays only: no real sweep")
    parser.add_argument("--real", default="", help="strategies to confirm by real sweeps (without --simulate-only)")
    parser.add_argument("--real-trials", type=int, default=40, help="trial budget of each real sweep")
    parser.add_argument("--real-repeats", type=int, default=3, help="real sweeps per strategy (tuner seeds 0 ..)")
    args = parser.parse_args()

    from searchspace.study import STRATEGIES
    from tuners.simulate.table import load_table

    paths = sorted(p for part in args.tables.split(",") for p in glob.glob(part))
    if not paths:
        raise SystemExit(f"no table matches --tables {args.tables}")
    strategies = list(STRATEGIES) if args.strategies == "all" else args.strategies.split(",")
    if BASELINE in strategies:
        strategies.remove(BASELINE)
    strategies.insert(0, BASELINE)
    monitor = LoadMonitor(threads=1)
    for path in paths:
        table = load_table(path)
        true_hv = table.true_hypervolume()
        baseline: float | None = None
        for strategy in strategies:
            if strategy == "proxy-screen" and not any(e.scores for e in table.entries):
                continue  # no training-free scores in this table
            lacking = "outside" if args.partial else "error"
            runs, seconds = simulate(table, strategy, args.seeds, args.cap, lacking, args.jobs)
            to99 = [r.compute_to(0.99 * true_hv) for r in runs]
            costs = [math.inf if c is None else c for c in to99]
            if strategy == BASELINE:
                baseline = _percentiles(costs, [50])[0]
            ratios = [c / baseline if baseline and math.isfinite(baseline) else math.nan for c in costs]
            result = {
                "task": table.task,
                "table": Path(path).name,
                "architectures": len(table.entries),
                "partial": args.partial,
                "front": len(table.true_front()),
                "strategy": strategy,
                "compute_ratio": _num(_percentiles(ratios, [50])[0]),
                "compute_ratio_iqr": [_num(q) for q in _percentiles(ratios, [25, 75])],
                "compute_to_99_s": _median_iqr(costs),
                "reached_99": sum(c is not None for c in to99),
                "seeds": len(runs),
                "trials_complete": _median_iqr([r.complete for r in runs]),
                "trials_pruned": _median_iqr([r.pruned for r in runs]),
                "points_screened": _median_iqr([r.screened for r in runs]),
                "epochs": _median_iqr([r.steps[-1].epochs if r.steps else 0 for r in runs]),
                "replay_s": round(seconds, 1),
                "real_sweep": None,
            }
            if not args.simulate_only and strategy in args.real.split(","):
                log(f"{Path(path).name}: real sweeps of {strategy}")
                result["real_sweep"] = real_sweeps(table, strategy, args.real_trials, args.real_repeats, args.seeds)
            print(json.dumps(result), flush=True)
    print(json.dumps({"machine": monitor.report()}))


if __name__ == "__main__":
    main()
