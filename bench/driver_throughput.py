"""Driver throughput without training: lwnas's real searcher, storage and trial-record path fed
synthetic results, with 1k / 10k / ... trials already in the study, on SQLite and PostgreSQL.

No Ray workers run: the bench calls ``StudySearcher``'s public Ray ``Searcher`` methods
(``suggest``, ``on_trial_result``, ``on_trial_complete``) the way Ray's driver loop does, one trial
after another, each trial reporting ``--epochs`` synthetic epochs. Before measuring, the study is
prefilled with N finished trials shaped like a sweep's (parameters, the planned record's user
attributes, one key per epoch) through Optuna's public ``Study.add_trials``. The samplers run on the
same prefilled study one after another (each adds ``--measure`` trials, a small share of N).

Printed per backend x stored trials x sampler: completed trials/s, epoch records/s (the
``on_trial_result`` calls alone), ``suggest`` latency p50/p99 and, inside it, the static-cost share
(the cost model runs once per point) and Optuna's ask/tell share; and the driver's peak RSS.

    python bench/driver_throughput.py --sizes 1000 10000 --backends sqlite postgresql
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

STUDY = {
    "name": "throughput", "task": "digits", "objectives": ["accuracy", "params"],
    "tuner": {"sampler": "random", "seed": 0, "max_concurrent": 1, "cpus_per_trial": 1},
    "training": {"threads": 1, "batch_size": 64},
    "budget": {"trials": 1000000, "epochs": 5},
    "space": {"d_model": {"choice": [16, 32, 64]}, "heads": {"choice": [2, 4]}, "layers": {"int": [1, 3]},
              "pooling": {"choice": ["mean", "attention"]}, "lr": {"float": [1.0e-3, 4.0e-3], "log": True}},
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def epoch_result(epoch: int, rng) -> dict:
    return {"epoch": epoch, "val_accuracy": rng.random(), "train_loss": rng.random(), "epoch_time": 0.1,
            "wall_time": 0.1 * epoch, "samples_per_s": 1000.0, "lr": 1e-3, "host": "bench", "node": "n0"}


def prefill_storage(url: str):
    """A storage for prefilling only: commits skip the disk flush (SQLite ``synchronous=OFF``, PostgreSQL
    ``synchronous_commit=off``), so 10k trials take minutes, not tens of minutes. The measured driver
    opens the study with lwnas's own ``open_storage``, flushes included."""
    import optuna
    from sqlalchemy import event

    if url.startswith("sqlite"):
        storage = optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
        event.listen(storage.engine, "connect", lambda conn, _: conn.execute("PRAGMA synchronous=OFF"))
        storage.engine.dispose()  # the connections opened so far lack the pragma
        return storage
    return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"options": "-c synchronous_commit=off"}})


def prefill(url: str, name: str, study, n: int, epochs: int, seed: int) -> float:
    """Add ``n`` finished trials shaped like a sweep's through Optuna's public ``add_trials``; seconds taken."""
    import random

    import optuna

    from searchspace.convert import optuna_suggest
    from tuners import storage as keys

    rng = random.Random(seed)
    suggest = optuna_suggest(study.space)
    scratch = optuna.create_study(directions=["maximize", "minimize"],
                                  sampler=optuna.samplers.RandomSampler(seed=seed))
    frozen = []
    for number in range(n):
        trial = scratch.ask()
        suggest(trial)
        point = study.space.resolve(trial.params)
        attrs = {keys.CONFIG: keys.plain(point.config.to_dict()), keys.TASK: study.task, keys.SEED: number,
                 keys.COSTS: {"params": 1000 + number, "madds": 10000 + number},
                 keys.TRAINING: {"epochs": epochs, "seed": number, "batch_size": 64},
                 keys.OUTCOME: "complete", keys.BUDGET_USED: epochs, keys.WALL_TIME: 0.1 * epochs}
        for e in range(1, epochs + 1):
            attrs[keys.epoch_key(e)] = {k: v for k, v in epoch_result(e, rng).items() if k not in ("host", "node")}
        frozen.append(optuna.trial.create_trial(params=trial.params, distributions=trial.distributions,
                                                values=[rng.random(), 1000 + number], user_attrs=attrs))
    storage = prefill_storage(url)
    t0 = time.perf_counter()
    optuna.load_study(study_name=name, storage=storage).add_trials(frozen)
    seconds = time.perf_counter() - t0
    storage.engine.dispose()
    return seconds


class Timed:
    """Wraps a callable and keeps how long each call took (for the shares inside ``suggest``)."""

    def __init__(self, fn):
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def measure(study, url: str, name: str, sampler: str, trials: int, epochs: int, seed: int) -> dict:
    """Drive ``trials`` synthetic trials through a fresh driver (searcher) on the stored study."""
    import random

    import optuna

    from tuners.constraints import StaticCosts
    from tuners.searcher import StudySearcher
    from tuners.storage import open_storage
    from tuners.study_check import make_task
    from tuners.sweep import make_sampler

    rng = random.Random(seed)
    storage = open_storage(url)
    ot_study = optuna.load_study(study_name=name, storage=storage, sampler=make_sampler(study))
    searcher = StudySearcher(study, ot_study, StaticCosts(study, make_task(study)), storage)
    static = searcher.static.evaluate = Timed(searcher.static.evaluate)
    ask = ot_study.ask = Timed(ot_study.ask)
    tell = ot_study.tell = Timed(ot_study.tell)
    suggest_s, results_s, complete_s = [], 0.0, 0.0
    t_start = time.perf_counter()
    for i in range(trials):
        trial_id = f"bench_{sampler}_{i:06d}"
        t0 = time.perf_counter()
        config = searcher.suggest(trial_id)
        suggest_s.append(time.perf_counter() - t0)
        assert config is not None
        t0 = time.perf_counter()
        last = None
        for e in range(1, epochs + 1):
            last = epoch_result(e, rng)
            searcher.on_trial_result(trial_id, last)
        t1 = time.perf_counter()
        searcher.on_trial_complete(trial_id, last)
        results_s += t1 - t0
        complete_s += time.perf_counter() - t1
    wall = time.perf_counter() - t_start
    storage.engine.dispose()
    return {
        "sampler": sampler, "trials": trials,
        "completed_trials_per_s": round(trials / wall, 1),
        "epoch_records_per_s": round(trials * epochs / results_s, 1),
        "suggest_ms": {"p50": round(1e3 * pct(suggest_s, 0.5), 2), "p99": round(1e3 * pct(suggest_s, 0.99), 2),
                       "mean": round(1e3 * statistics.fmean(suggest_s), 2)},
        "per_trial_ms": {"optuna_ask": round(1e3 * ask.seconds / trials, 2),
                         "static_cost": round(1e3 * static.seconds / trials, 2),
                         "suggest_other": round(1e3 * (sum(suggest_s) - ask.seconds - static.seconds) / trials, 2),
                         "epoch_records": round(1e3 * results_s / trials, 2),
                         "complete": round(1e3 * complete_s / trials, 2),
                         "optuna_tell_in_complete": round(1e3 * tell.seconds / trials, 2)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="trials stored before measuring")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--samplers", nargs="+", default=["random", "nsga2"])
    parser.add_argument("--measure", type=int, default=200, help="trials driven per sampler")
    parser.add_argument("--epochs", type=int, default=5, help="synthetic epochs per trial")
    parser.add_argument("--postgres", default=os.environ.get("LWNAS_TEST_POSTGRES",
                                                             "postgresql://postgres@127.0.0.1:5432/test"),
                        help="a PostgreSQL database the bench may write studies to (env LWNAS_TEST_POSTGRES)")
    args = parser.parse_args()

    import optuna

    from searchspace.study import study_from_dict
    from tuners.storage import open_storage
    from tuners.study_check import task_family
    from tuners.sweep import SweepOptions, open_study_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monitor = LoadMonitor(threads=1)
    spec = {**STUDY, "budget": {**STUDY["budget"], "epochs": args.epochs}}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            for size in args.sizes:
                name = f"throughput-{size}-{int(time.time())}"
                url = f"sqlite:///{Path(tmp) / f'{name}.db'}" if backend == "sqlite" else args.postgres
                base = study_from_dict({**spec, "name": name}, task_family=task_family)
                storage = open_storage(url, create=True)
                open_study_storage(base, SweepOptions(storage=url), False, storage)  # as `lwnas sweep` creates it
                log(f"{backend}: prefilling {size} trials")
                storage.engine.dispose()
                fill_s = prefill(url, name, base, size, args.epochs, seed=size)
                for sampler in args.samplers:
                    study = study_from_dict({**spec, "name": name, "tuner": {**spec["tuner"], "sampler": sampler}},
                                            task_family=task_family)
                    log(f"{backend}, {size} stored: {args.measure} trials with {sampler}")
                    row = measure(study, url, name, sampler, args.measure, args.epochs, seed=size)
                    results.append({"backend": backend, "stored_trials": size, "prefill_s": round(fill_s, 1), **row})
                    log(json.dumps(results[-1]))
                if backend == "postgresql":
                    optuna.delete_study(study_name=name, storage=url)
    print(json.dumps({
        "epochs_per_trial": args.epochs, "measured_trials_per_sampler": args.measure,
        "results": results,
        "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": monitor.report(),
    }, indent=2))


if __name__ == "__main__":
    main()
