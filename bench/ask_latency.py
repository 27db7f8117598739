"""Optuna ask + tell latency per sampler as a study grows: 1k, 10k, 100k stored trials, one run.

For each size a synthetic two-objective study (``dashboards.sample``, written in batches by
``TrialStore.insert``) is created; then for each sampler the study is opened as a sweep driver opens it
(``tuners.store.connection.open_storage`` + ``optuna.load_study`` with the sampler settings of
``tuners/driver/samplers.py:make_sampler`` at a large budget) and ``--asks`` points are asked (the quickstart
space's knobs, as stored) and told. The first ask pays Optuna's one-time read of every stored trial
into its cache (``first_ask_s``); p50/p99 are over the remaining asks. A cell whose first ask passes
``--cell-limit`` seconds stops there and says so, and the sampler is skipped at larger sizes (GP fits
a model over every trial).

    python bench/ask_latency.py --sizes 1000,10000,100000
    python bench/ask_latency.py --sizes 1000,10000 --storage postgresql://postgres@127.0.0.1:5432/bench
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log


def make_sampler(name: str, seed: int):
    """The samplers as tuners/driver/samplers.py:make_sampler builds them for a budget of 150 trials or more."""
    import optuna

    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=50, seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=10)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=10)
    return optuna.samplers.RandomSampler(seed=seed)


def suggest(trial) -> dict:
    """The quickstart space as dashboards.sample stores it (conditional knobs only where active)."""
    from dashboards.sample import DISTRIBUTIONS

    params = {}
    for knob in ("d_model", "layers", "g_mha", "g_ffn", "layer_sharing", "attention", "pooling", "lr"):
        params[knob] = _suggest(trial, knob, DISTRIBUTIONS[knob])
    if params["g_mha"] or params["g_ffn"]:
        params["groups"] = _suggest(trial, "groups", DISTRIBUTIONS["groups"])
    if params["pooling"] == "sketch":
        params["sketch_n"] = _suggest(trial, "sketch_n", DISTRIBUTIONS["sketch_n"])
    return params


def _suggest(trial, name: str, dist):
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    if isinstance(dist, FloatDistribution):
        return trial.suggest_float(name, dist.low, dist.high, log=dist.log)
    return trial.suggest_int(name, dist.low, dist.high)


def one_cell(url: str, name: str, sampler: str, asks: int, limit: float) -> dict:
    import optuna

    from tuners.store.connection import open_storage

    study = optuna.load_study(study_name=name, storage=open_storage(url), sampler=make_sampler(sampler, 0))
    times = []
    for i in range(asks):
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest(trial)
        trial.set_constraint("params", float(params["d_model"] * 100 - 5000))  # every lwnas trial has its constraints
        study.tell(trial, [0.5 + 0.001 * i, float(params["d_model"] * 100)])
        times.append(time.perf_counter() - t0)
        if times[0] > limit:
            return {"first_ask_s": round(times[0], 3), "stopped": f"first ask over --cell-limit {limit:g} s"}
    rest = sorted(times[1:])
    p99 = rest[min(len(rest) - 1, math.ceil(0.99 * len(rest)) - 1)]
    return {
        "first_ask_s": round(times[0], 3),
        "p50_ms": round(1000 * statistics.median(rest), 1),
        "p99_ms": round(1000 * p99, 1),
        "asks": asks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="stored trials, comma-separated")
    parser.add_argument("--samplers", default="random,nsga2,tpe,gp")
    parser.add_argument("--asks", type=int, default=30, help="ask + tell per sampler and size")
    parser.add_argument("--storage", help="a database URL to use (default: a temporary SQLite file)")
    parser.add_argument("--cell-limit", type=float, default=120.0, help="stop a cell whose first ask takes longer")
    args = parser.parse_args()

    import optuna

    from dashboards.sample import seed_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    import warnings

    warnings.simplefilter("ignore")  # GPSampler is experimental; its warning is not a measurement
    out, stopped = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        url = args.storage or f"sqlite:///{Path(tmp) / 'bench.db'}"
        monitor = LoadMonitor(threads=1)
        for size in map(int, args.sizes.split(",")):
            # one study per size; each sampler's asks add --asks trials that the next one sees (negligible)
            name = f"bench-ask-{size}-{uuid.uuid4().hex[:6]}"
            t0 = time.perf_counter()
            seed_study(url, name=name, trials=size, seed=0)
            write_s = time.perf_counter() - t0
            for sampler in args.samplers.split(","):
                log(f"{size} stored trials, {sampler}")
                if sampler in stopped:  # it only gets slower with more trials
                    out.append(
                        {"stored_trials": size, "sampler": sampler, "stopped": f"stopped at {stopped[sampler]:,}"}
                    )
                    continue
                try:
                    cell = one_cell(url, name, sampler, args.asks, args.cell_limit)
                except Exception as exc:  # noqa: BLE001 - a sampler that cannot run here is reported, not fatal
                    cell = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
                out.append({"stored_trials": size, "sampler": sampler, "write_s": round(write_s, 1), **cell})
                if "stopped" in cell:
                    stopped[sampler] = size
                log(json.dumps(out[-1]))
            if args.storage:
                optuna.delete_study(study_name=name, storage=url)
    print(json.dumps({"backend": url.split(":", 1)[0], "cells": out, "machine": monitor.report()}, indent=2))


if __name__ == "__main__":
    main()
