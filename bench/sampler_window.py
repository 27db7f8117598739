"""TPE and GP with and without a window (tuners/driver/windowed_sampler.py): ask latency and search quality.

``latency``: for each study size a synthetic two-objective study (``dashboards.sample``, written in
batches) is created in SQLite; each arm opens it as a sweep driver does (``tuners.store.connection.open_storage``
+ ``optuna.load_study``) and asks + tells ``--asks`` points of the quickstart space with a constraint,
as bench/ask_latency.py does. Arms: TPE over every trial (``tpe``), TPE over a window (``tpe-wN``, last
N finished trials plus the current front), GP over a window (``gp-wN``; GP over every trial is not run:
its first ask took 162 s at 1,000 trials). The first ask pays Optuna's one-time read of every stored
trial; p50/p99 are over the other asks; ``inner_sees`` is how many trials the windowed sampler's inner
sampler saw at its last ask.

``quality``: hypervolume after ``--trials`` trials on a cheap synthetic two-objective problem, several
seeds, arms: TPE over every trial, TPE over the last N trials (``recent``), TPE over the last N plus
the front (``recent+front``), and random search as the floor. Problems: ``quickstart`` (the quickstart
space's knobs, accuracy from dashboards.sample's formula with noise 0.03 seen by the sampler, params
as cost, params <= 80,000 as a constraint; the hypervolume is of the noise-free accuracy of the points
evaluated) and ``zdt1`` (ZDT1 over 5 floats, an int and a categorical). Sequential asks, in memory.

    python bench/sampler_window.py latency --sizes 1000,10000,100000 --window 2000
    python bench/sampler_window.py quality --trials 500 --window 50 --seeds 0,1,2,3
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
import uuid
import warnings
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log
from ask_latency import _suggest, suggest


def tpe(seed: int):
    import optuna

    return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=10)  # as make_sampler


def gp(seed: int):
    import optuna

    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=10)


def windowed(inner, window: int, keep_front: bool = True):
    from tuners.driver.windowed_sampler import WindowedSampler

    return WindowedSampler(inner, window, keep_front=keep_front)


# ---- latency -----------------------------------------------------------------------------------
def latency_cell(url: str, name: str, sampler, asks: int) -> dict:
    import optuna

    from tuners.store.connection import open_storage

    study = optuna.load_study(study_name=name, storage=open_storage(url), sampler=sampler)
    times = []
    for i in range(asks):
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest(trial)
        trial.set_constraint("params", float(params["d_model"] * 100 - 5000))
        study.tell(trial, [0.5 + 0.001 * i, float(params["d_model"] * 100)])
        times.append(time.perf_counter() - t0)
    rest = sorted(times[1:])
    p99 = rest[min(len(rest) - 1, math.ceil(0.99 * len(rest)) - 1)]
    cell = {
        "first_ask_s": round(times[0], 3),
        "p50_ms": round(1000 * statistics.median(rest), 1),
        "p99_ms": round(1000 * p99, 1),
        "asks": asks,
    }
    if hasattr(sampler, "seen_trials"):
        cell["inner_sees"] = len(sampler.seen_trials())
    return cell


def latency(args) -> dict:
    from dashboards.sample import seed_study

    arms = {"tpe": lambda: tpe(0), f"tpe-w{args.window}": lambda: windowed(tpe(0), args.window)}
    if args.gp_window:
        arms[f"gp-w{args.gp_window}"] = lambda: windowed(gp(0), args.gp_window)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        for size in map(int, args.sizes.split(",")):
            name = f"bench-window-{size}-{uuid.uuid4().hex[:6]}"
            t0 = time.perf_counter()
            seed_study(url, name=name, trials=size, seed=0)
            write_s = round(time.perf_counter() - t0, 1)
            for arm, make in arms.items():
                if arm == "tpe" and args.full_tpe_max and size > args.full_tpe_max:
                    out.append({"stored_trials": size, "arm": arm, "skipped": f"--full-tpe-max {args.full_tpe_max}"})
                    continue
                asks = args.gp_asks if arm.startswith("gp") else args.asks
                log(f"{size} stored trials, {arm}")
                out.append(
                    {"stored_trials": size, "arm": arm, "write_s": write_s, **latency_cell(url, name, make(), asks)}
                )
                log(json.dumps(out[-1]))
    return {"cells": out}


# ---- quality -------------------------------------------------------------------------------------
class _NoNoise:
    @staticmethod
    def normal(loc, scale):
        return 0.0


def quickstart_point(trial) -> dict:
    """Every knob of the quickstart space that the cost formula reads (conditional ones where active)."""
    from dashboards.sample import DISTRIBUTIONS

    params = {
        k: _suggest(trial, k, DISTRIBUTIONS[k])
        for k in ("d_model", "layers", "g_mha", "g_ffn", "layer_sharing", "attention", "pooling", "lr")
    }
    if params["g_mha"] or params["g_ffn"]:
        params.update({k: _suggest(trial, k, DISTRIBUTIONS[k]) for k in ("groups", "weight_sharing")})
    if params["pooling"] == "sketch":
        params.update({k: _suggest(trial, k, DISTRIBUTIONS[k]) for k in ("sketch_n", "sketch_k")})
    return params


def quickstart_problem():
    """(directions, evaluate(trial, rng) -> (values seen, true values, constraint), reference point)."""
    from dashboards.sample import MAX_PARAMS, accuracy_of, costs_of

    def evaluate(trial, rng):
        params = quickstart_point(trial)
        size = costs_of(params)["params"]
        seen = [accuracy_of(params, size, rng), float(size)]
        return seen, [accuracy_of(params, size, _NoNoise()), float(size)], float(size - MAX_PARAMS)

    return ["maximize", "minimize"], evaluate, [0.0, 1.1 * MAX_PARAMS]


def zdt1_problem():
    """ZDT1 (Zitzler, Deb, Thiele 2000) with its 7 tail variables as 5 floats, an int and a categorical."""
    levels = ["0.0", "0.25", "0.5", "0.75", "1.0"]

    def evaluate(trial, rng):
        f1 = trial.suggest_float("x0", 0.0, 1.0)
        tail = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(1, 6)]
        tail.append(trial.suggest_int("steps", 0, 10) / 10)
        tail.append(float(trial.suggest_categorical("level", levels)))
        g = 1 + 9 * sum(tail) / len(tail)
        values = [f1, g * (1 - math.sqrt(f1 / g))]
        return values, values, 0.0

    return ["minimize", "minimize"], evaluate, [1.1, 11.0]  # f2 <= g <= 10


PROBLEMS = {"quickstart": quickstart_problem, "zdt1": zdt1_problem}


def run_search(problem: str, sampler, trials: int, seed: int, checkpoints: list[int]) -> dict:
    import numpy as np
    import optuna

    from searchspace.study import Objective
    from tuners.fronts import objectives

    directions, evaluate, ref = PROBLEMS[problem]()
    goals = [Objective(f"f{i}", d) for i, d in enumerate(directions)]
    study = optuna.create_study(directions=directions, sampler=sampler)
    rng = np.random.default_rng(seed)
    feasible_true, out, t0 = [], {}, time.perf_counter()
    for n in range(1, trials + 1):
        trial = study.ask()
        seen, true, violation = evaluate(trial, rng)
        trial.set_constraint("c", violation)
        study.tell(trial, seen)
        if violation <= 0:
            feasible_true.append(true)
        if n in checkpoints:
            points = objectives.minimised(np.array(feasible_true, dtype=float), goals)
            out[n] = float(objectives.hypervolume(points, objectives.minimised(np.array(ref), goals)))
    return {"hypervolume": out, "seconds": round(time.perf_counter() - t0, 1)}


def quality(args) -> dict:
    import optuna

    checkpoints = sorted({*map(int, args.checkpoints.split(",")), args.trials})
    arms = {
        "tpe": lambda s: tpe(s),
        "recent": lambda s: windowed(tpe(s), args.window, keep_front=False),
        "recent+front": lambda s: windowed(tpe(s), args.window, keep_front=True),
        "random": lambda s: optuna.samplers.RandomSampler(seed=s),
    }
    runs, summary = [], []
    for problem in args.problems.split(","):
        for seed in map(int, args.seeds.split(",")):
            for arm, make in arms.items():
                log(f"{problem} seed {seed} {arm}")
                runs.append(
                    {
                        "problem": problem,
                        "seed": seed,
                        "arm": arm,
                        **run_search(problem, make(seed), args.trials, seed, checkpoints),
                    }
                )
                log(json.dumps(runs[-1]))
        for arm in arms:
            for n in checkpoints:
                hv = [r["hypervolume"][n] for r in runs if r["problem"] == problem and r["arm"] == arm]
                summary.append(
                    {
                        "problem": problem,
                        "arm": arm,
                        "trials": n,
                        "mean": round(statistics.mean(hv), 4),
                        "std": round(statistics.stdev(hv), 4) if len(hv) > 1 else None,
                        "min": round(min(hv), 4),
                        "max": round(max(hv), 4),
                    }
                )
    return {"window": args.window, "runs": runs, "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("part", choices=("latency", "quality"), help="what to measure")
    parser.add_argument(
        "--window", type=int, help="the windowed TPE arms' window (default: 2000 for latency, 50 for quality)"
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="latency: stored trials, comma-separated")
    parser.add_argument("--gp-window", type=int, default=100, help="latency: the GP arm's window (0: no GP arm)")
    parser.add_argument("--asks", type=int, default=20, help="latency: ask + tell per TPE cell")
    parser.add_argument("--gp-asks", type=int, default=5, help="latency: ask + tell per GP cell")
    parser.add_argument(
        "--full-tpe-max",
        type=int,
        default=0,
        help="latency: skip TPE over every trial above this many stored trials (0: never skip)",
    )
    parser.add_argument(
        "--problems", default="quickstart,zdt1", help=f"quality: comma-separated: {', '.join(PROBLEMS)}"
    )
    parser.add_argument("--trials", type=int, default=500, help="quality: trials per search")
    parser.add_argument("--seeds", default="0,1,2,3", help="quality: one search per seed and arm")
    parser.add_argument(
        "--checkpoints", default="100,250", help="quality: also report the hypervolume after these trials"
    )
    args = parser.parse_args()
    if args.window is None:
        args.window = 2000 if args.part == "latency" else 50

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")  # GPSampler is experimental; its warning is not a measurement
    monitor = LoadMonitor(threads=1)
    result = latency(args) if args.part == "latency" else quality(args)
    print(json.dumps({"part": args.part, **result, "machine": monitor.report()}, indent=2))


if __name__ == "__main__":
    main()
