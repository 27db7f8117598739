"""Driver throughput without training: lwnas's real searcher, storage and trial-record path fed
synthetic results, with 1k / 10k / 100k trials already in the study, on SQLite and PostgreSQL.

No Ray workers run: the bench calls ``StudySearcher``'s public Ray ``Searcher`` methods
(``suggest``, ``on_trial_result``, ``on_trial_complete``) the way Ray's driver loop does, one trial
after another, each trial reporting ``--epochs`` synthetic epochs. Before measuring, the study is
prefilled with N finished trials shaped like a sweep's (parameters, the planned record with real static
costs, the study's constraint, one key per epoch, outcome attributes; complete, pruned, failed and
infeasible) in batched INSERTs (``tuners.store.trial_store.TrialStore.insert``, which writes what ``add_trials``
writes). Each sampler then drives ``--measure`` trials per arm on that study, one fresh driver per arm, the
arms taking turns in blocks of ``--block`` trials (the load of a shared machine swings within minutes):

* ``before``: the planned record as six attributes and every commit flushed to disk (lwnas until issue 15);
* ``after``: one ``plan`` attribute and the driver's storage as ``lwnas sweep`` opens it now
  (``open_storage(url, flush_each_commit=False)``).

A new driver's first trial includes Optuna's read of every stored trial into its cache (start-up, as a
resumed sweep pays it): it is reported apart (``first_trial_s``) and left out of the rates. The cost model
is warm (the prefill costed every architecture of this small space), so the driver's own path is timed;
``bench/cost_speed.py`` times the cost model.

Printed per backend x stored trials x sampler x arm: completed trials/s, epoch records/s (the
``on_trial_result`` calls alone), ``suggest`` latency p50/p99 and its shares (Optuna's ask, static cost,
the rest), SQL statements and commits per trial (SQLAlchemy engine events), the memory a driver's start-up added
(Optuna's cache of the stored trials), the process's peak RSS, and the 1-minute load average beside each row.

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
    "name": "throughput",
    "task": "digits",
    "objectives": ["accuracy", "params"],
    "tuner": {"sampler": "random", "seed": 0, "max_concurrent": 1, "cpus_per_trial": 1},
    "training": {"threads": 1, "batch_size": 64},
    "constraints": {"params": {"max": 150000}},  # as sweeps use them: a few points of this space break it
    "budget": {"trials": 1000000, "epochs": 5},
    "space": {
        "d_model": {"choice": [16, 32, 64]},
        "heads": {"choice": [2, 4]},
        "layers": {"int": [1, 3]},
        "pooling": {"choice": ["mean", "attention"]},
        "lr": {"float": [1.0e-3, 4.0e-3], "log": True},
    },
}


# before: the planned record as six attributes and every commit flushed to disk (lwnas until this change);
# after: the planned record as one attribute, the driver's storage as `lwnas sweep` opens it now (no flush per commit)
ARMS = {"before": True, "after": False, "after_no_ping": False}
# a candidate, measured only: "after" without SQLAlchemy's pre-ping (one round trip per connection checkout,
# i.e. per Optuna storage call, on PostgreSQL; lwnas keeps it so the driver survives a server restart)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def epoch_result(epoch: int, rng) -> dict:
    return {
        "epoch": epoch,
        "val_accuracy": rng.random(),
        "train_loss": rng.random(),
        "epoch_time": 0.1,
        "wall_time": 0.1 * epoch,
        "samples_per_s": 1000.0,
        "lr": 1e-3,
        "host": "bench",
        "node": "n0",
    }


def sweep_like_trials(study, static, n: int, epochs: int, seed: int) -> list:
    """``n`` finished trials shaped like a sweep's: the driver's planned record (real static costs, cached per
    architecture), the study's constraint, one key per epoch, outcome attributes; 85% complete, 10% pruned,
    5% failed, as ``dashboards.sample`` mixes them."""
    import numpy as np
    import optuna
    from optuna.trial import TrialState

    from searchspace.convert import optuna_search_space
    from trainers.loop import TrainSettings
    from tuners.store import keys
    from tuners.store.record import TrialRecord, planned_attrs, trial_seed, trial_training

    rng = np.random.default_rng(seed)
    distributions = optuna_search_space(study.space)
    frozen = []
    for number in range(n):
        params = study.space.sample(rng)
        point = study.space.resolve(params)
        config = static.adapt(point.config)
        verdict = static.evaluate(config)
        record_seed = trial_seed(study.tuner.seed, number)
        training = trial_training(study, point.training, record_seed, study.tuner.cpus_per_trial)
        record = TrialRecord(
            number=number,
            config=config.to_dict(),
            task=study.task,
            seed=record_seed,
            training=TrainSettings.from_dict(training).to_dict(),
            costs=verdict.costs,
        )
        u = rng.random()
        used = epochs if u < 0.85 else int(rng.integers(1, epochs)) if u < 0.95 else int(rng.integers(0, epochs))
        attrs = {**planned_attrs(record), keys.BUDGET_USED: used, keys.HOST: "bench", keys.NODE: "n0"}
        ticks = [epoch_result(e, rng) for e in range(1, used + 1)]
        attrs.update(
            {keys.epoch_key(r["epoch"]): {k: v for k, v in r.items() if k not in ("host", "node")} for r in ticks}
        )
        if ticks:
            attrs[keys.WALL_TIME] = ticks[-1]["wall_time"]
        state, values = TrialState.FAIL, None
        if not verdict.feasible:
            state, values, outcome = TrialState.COMPLETE, [0.0, verdict.costs["params"]], "infeasible"
        elif u < 0.85:
            state, values, outcome = (
                TrialState.COMPLETE,
                [ticks[-1]["val_accuracy"], verdict.costs["params"]],
                "complete",
            )
        else:
            state, outcome = (TrialState.PRUNED, "pruned") if u < 0.95 else (TrialState.FAIL, "failed")
        attrs[keys.OUTCOME] = outcome
        constraints = {c.metric: c.violation(verdict.costs[c.metric]) for c in study.constraints}
        frozen.append(
            optuna.trial.create_trial(
                state=state,
                values=values,
                params=params,
                distributions={k: distributions[k] for k in params},
                user_attrs=keys.plain(attrs),
                constraints=constraints,
            )
        )
    return frozen


def prefill(storage, name: str, study, static, n: int, epochs: int, seed: int, distinct: int = 0) -> float:
    """Append ``n`` sweep-shaped trials in batched INSERTs (``TrialStore.insert``); seconds taken to write.
    ``distinct`` > 0 builds that many trials and repeats them (building one costs ~1 ms, ~10 ms under load)."""
    from tuners.store.trial_store import TrialStore

    built = sweep_like_trials(study, static, min(n, distinct or n), epochs, seed)
    frozen = [built[i % len(built)] for i in range(n)]
    t0 = time.perf_counter()
    TrialStore.of(storage, name).insert(frozen)
    return time.perf_counter() - t0


def per_field_plan_searcher():
    """The driver as it was before the ``plan`` attribute: each planned field an attribute of its own."""
    from tuners.driver.searcher import StudySearcher
    from tuners.store import keys
    from tuners.store.record import planned_attrs

    class PerFieldPlanSearcher(StudySearcher):
        def _write_plan(self, ot_trial, record) -> None:
            for key, value in planned_attrs(record)[keys.PLAN].items():
                ot_trial.set_user_attr(key, value)

    return PerFieldPlanSearcher


def no_ping(url: str):
    """The after arm's storage without ``pool_pre_ping`` (a measured candidate, not what lwnas opens)."""
    import optuna

    from tuners.store.connection import engine_kwargs, skip_commit_flush

    if not url.startswith("postgresql"):
        raise SystemExit(
            "--arms after_no_ping: only PostgreSQL pings (pool_pre_ping); use it with --backends postgresql"
        )
    storage = optuna.storages.RDBStorage(url, engine_kwargs={**engine_kwargs(url), "pool_pre_ping": False})
    skip_commit_flush(storage.engine)
    return storage


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


def drop_study(url: str, name: str) -> None:
    """Delete a bench study: its trials' rows in one DELETE per table (Optuna's ``delete_study`` removes them
    one ORM object at a time, minutes for 100k trials), then the study itself through Optuna."""
    import optuna
    from sqlalchemy import delete, select

    from tuners.store import tables as t
    from tuners.store.connection import open_storage

    storage = open_storage(url)
    engine = t.bulk_engine(storage)
    if engine is not None:
        ids = select(t.trials.c.trial_id).where(t.trials.c.study_id == storage.get_study_id_from_name(name))
        with engine.begin() as conn:
            for table in (
                t.trial_values,
                t.trial_params,
                t.trial_user_attributes,
                t.trial_system_attributes,
                t.trial_intermediate_values,
            ):
                conn.execute(delete(table).where(table.c.trial_id.in_(ids)))
            conn.execute(delete(t.trials).where(t.trials.c.trial_id.in_(ids)))
    optuna.delete_study(study_name=name, storage=storage)
    storage.engine.dispose()


class Traffic:
    """Counts the SQL statements and commits the driver's engine sends (SQLAlchemy's public engine events)."""

    def __init__(self, engine):
        from sqlalchemy import event

        self.statements = self.commits = 0
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._commit)

    def _statement(self, *_):
        self.statements += 1

    def _commit(self, *_):
        self.commits += 1


class GcTime:
    """Seconds Python's garbage collector ran (``gc.callbacks``), by generation: with a 100k-trial study in
    Optuna's cache the heap holds millions of objects, and each full collection walks all of them."""

    def __init__(self):
        import gc

        self.seconds, self._t0 = [0.0, 0.0, 0.0], 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._t0


GC = GcTime()


def rss_mib() -> float:
    """This process's resident memory now (Linux), MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Driver:
    """One arm's driver (storage, Optuna study, searcher) on the stored study, with its timers and counters.

    ``static`` is the prefill's cost model, warm for every architecture of this small space: the driver's
    own path is measured here, the cost model's speed by ``bench/cost_speed.py``."""

    def __init__(self, study, static, url: str, name: str, arm: str, epochs: int, seed: int):
        import random

        import optuna

        from tuners.driver.samplers import make_sampler
        from tuners.driver.searcher import StudySearcher
        from tuners.store.connection import open_storage

        self.arm, self.epochs, self.rng = arm, epochs, random.Random(seed)
        self.label = f"{study.tuner.sampler}_{arm}"
        rss0 = rss_mib()
        self.storage = open_storage(url, flush_each_commit=ARMS[arm]) if arm != "after_no_ping" else no_ping(url)
        ot_study = optuna.load_study(study_name=name, storage=self.storage, sampler=make_sampler(study))
        searcher_class = StudySearcher if arm != "before" else per_field_plan_searcher()
        self.searcher = searcher_class(study, ot_study, static, self.storage)
        self.static = self.searcher.static.evaluate = Timed(self.searcher.static.evaluate)
        self.ask = ot_study.ask = Timed(ot_study.ask)
        self.tell = ot_study.tell = Timed(ot_study.tell)
        # a new driver's first ask reads every stored trial into Optuna's cache: start-up, reported apart
        self.startup_s = sum(self.run_trial("start"))
        self.startup_rss_mib = rss_mib() - rss0  # this driver's cache of the stored study
        for timer in (self.static, self.ask, self.tell):
            timer.seconds = 0.0
        self.traffic = Traffic(self.storage.engine)
        self.suggest_s, self.results_s, self.complete_s, self.wall_s, self.done = [], 0.0, 0.0, 0.0, 0
        self.gc_s = 0.0

    def run_trial(self, tag: str) -> tuple[float, float, float]:
        """One trial as Ray's driver loop makes it: suggest, one result per epoch, complete."""
        trial_id = f"bench_{self.label}_{tag}"
        t0 = time.perf_counter()
        assert self.searcher.suggest(trial_id) is not None
        t1 = time.perf_counter()
        last = None
        for e in range(1, self.epochs + 1):
            last = epoch_result(e, self.rng)
            self.searcher.on_trial_result(trial_id, last)
        t2 = time.perf_counter()
        self.searcher.on_trial_complete(trial_id, last)
        return t1 - t0, t2 - t1, time.perf_counter() - t2

    def run(self, trials: int, profiler=None) -> None:
        if profiler:
            profiler.enable()
        gc0 = sum(GC.seconds)
        t0 = time.perf_counter()
        for _ in range(trials):
            s, r, c = self.run_trial(f"{self.done:06d}")
            self.suggest_s.append(s)
            self.results_s += r
            self.complete_s += c
            self.done += 1
        self.wall_s += time.perf_counter() - t0
        self.gc_s += sum(GC.seconds) - gc0
        if profiler:
            profiler.disable()

    def report(self) -> dict:
        n, s = self.done, self.suggest_s
        self.storage.engine.dispose()
        return {
            "arm": self.arm,
            "trials": n,
            "first_trial_s": round(self.startup_s, 2),
            "completed_trials_per_s": round(n / self.wall_s, 2),
            "epoch_records_per_s": round(n * self.epochs / self.results_s, 1),
            "suggest_ms": {
                "p50": round(1e3 * pct(s, 0.5), 1),
                "p99": round(1e3 * pct(s, 0.99), 1),
                "mean": round(1e3 * statistics.fmean(s), 1),
            },
            "per_trial_ms": {
                "optuna_ask": round(1e3 * self.ask.seconds / n, 1),
                "static_cost": round(1e3 * self.static.seconds / n, 1),
                "suggest_other": round(1e3 * (sum(s) - self.ask.seconds - self.static.seconds) / n, 1),
                "epoch_records": round(1e3 * self.results_s / n, 1),
                "complete": round(1e3 * self.complete_s / n, 1),
                "optuna_tell_in_complete": round(1e3 * self.tell.seconds / n, 1),
            },
            "per_trial_sql": {
                "statements": round(self.traffic.statements / n, 1),
                "commits": round(self.traffic.commits / n, 1),
            },
            "driver_cache_rss_mib": round(self.startup_rss_mib, 1),
            "gc_ms_per_trial": round(1e3 * self.gc_s / n, 1),  # garbage collection inside the measured trials
        }


def measure(
    study,
    static,
    url: str,
    name: str,
    arms: list[str],
    trials: int,
    epochs: int,
    seed: int,
    block: int,
    profile: str | None = None,
) -> list[dict]:
    """Drive ``trials`` synthetic trials per arm, the arms taking turns in blocks of ``block`` trials (the
    machine's load swings within minutes: alternating keeps it the same for both arms)."""
    import cProfile

    drivers = [Driver(study, static, url, name, arm, epochs, seed) for arm in arms]
    profilers = {d.arm: cProfile.Profile() for d in drivers} if profile else {}
    for turn in range(0, trials, block):
        for d in drivers if (turn // block) % 2 == 0 else reversed(drivers):
            d.run(min(block, trials - turn), profilers.get(d.arm))
    for arm, profiler in profilers.items():
        profiler.dump_stats(f"{profile}-{arm}.prof")
    return [{"sampler": study.tuner.sampler, **d.report()} for d in drivers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="trials stored before measuring")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--samplers", nargs="+", default=["random", "nsga2"])
    parser.add_argument("--measure", type=int, default=200, help="trials driven per sampler and arm")
    parser.add_argument("--epochs", type=int, default=5, help="synthetic epochs per trial")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("LWNAS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"),
        help="a PostgreSQL database the bench may write studies to (env LWNAS_TEST_POSTGRES)",
    )
    parser.add_argument(
        "--arms",
        nargs="+",
        default=list(ARMS),
        choices=list(ARMS),
        help="before: six planned-record attributes, every commit flushed (lwnas until issue 15); "
        "after: one `plan` attribute, the driver's storage as `lwnas sweep` opens it now; "
        "after_no_ping (PostgreSQL): after without SQLAlchemy's pre-ping, a candidate",
    )
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        help="build this many distinct prefill trials and repeat them (0: every trial distinct)",
    )
    parser.add_argument("--block", type=int, default=5, help="trials an arm drives before the other takes its turn")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="write a cProfile of each arm's measured trials to PREFIX-BACKEND-SIZE-SAMPLER-ARM.prof",
    )
    args = parser.parse_args()

    import optuna

    from searchspace.study import study_from_dict
    from tuners.driver.sweep import SweepOptions, open_study_storage
    from tuners.planning.check import make_task, task_family
    from tuners.planning.costs import StaticCosts
    from tuners.store.connection import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monitor = LoadMonitor(threads=1)
    spec = {**STUDY, "budget": {**STUDY["budget"], "epochs": args.epochs}}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            for size in args.sizes:
                name = f"throughput-{size}-{int(time.time())}-{os.getpid()}"
                url = f"sqlite:///{Path(tmp) / f'{name}.db'}" if backend == "sqlite" else args.postgres
                base = study_from_dict({**spec, "name": name}, task_family=task_family)
                storage = open_storage(url, create=True)
                open_study_storage(base, SweepOptions(storage=url), False, storage)  # as `lwnas sweep` creates it
                log(f"{backend}: prefilling {size} trials")
                static = StaticCosts(base, make_task(base))
                fill_s = prefill(storage, name, base, static, size, args.epochs, seed=size, distinct=args.distinct)
                storage.engine.dispose()
                for sampler in args.samplers:
                    study = study_from_dict(
                        {**spec, "name": name, "tuner": {**spec["tuner"], "sampler": sampler}}, task_family=task_family
                    )
                    log(f"{backend}, {size} stored: {args.measure} trials with {sampler} per arm")
                    load = os.getloadavg()[0]
                    profile = args.profile and f"{args.profile}-{backend}-{size}-{sampler}"
                    for row in measure(
                        study,
                        static,
                        url,
                        name,
                        args.arms,
                        args.measure,
                        args.epochs,
                        seed=size,
                        block=args.block,
                        profile=profile,
                    ):
                        results.append(
                            {
                                "backend": backend,
                                "stored_trials": size,
                                "prefill_s": round(fill_s, 1),
                                **row,
                                "load_1min": [round(load, 1), round(os.getloadavg()[0], 1)],
                            }
                        )
                        log(json.dumps(results[-1]))
                if backend == "postgresql":
                    t0 = time.perf_counter()
                    drop_study(url, name)
                    log(f"deleted the study in {time.perf_counter() - t0:.1f} s")
    print(
        json.dumps(
            {
                "epochs_per_trial": args.epochs,
                "measured_trials_per_sampler": args.measure,
                "results": results,
                "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "machine": monitor.report(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
