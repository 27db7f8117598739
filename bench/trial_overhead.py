"""Per-trial overhead of `lwnas sweep` against its anchor, plain Ray Tune + Ray's ``OptunaSearch`` with
``reuse_actors``, both in one run on the same trainable work: N short digits trials one at a time.

Arm "lwnas": ``run_sweep`` (what `lwnas sweep` runs: lwnas's searcher on Optuna's ask-and-tell, the
static cost of every point, the trial record in SQLite, a lease, the progress callback).
Arm "plain": ``tune.Tuner`` with ``OptunaSearch`` over the same define-by-run space and sampler, in-memory
Optuna storage, and a trainable that resolves the point and trains it with the same training loop
(``trainers.loop.fit``) on the same task data, reporting every epoch.
Both arms share one ``ray.init`` (paid once per sweep, reported apart) and run ``--repeats`` times in
alternating order; per-trial seconds (wall / trials) are reported as median and min..max.

    python bench/trial_overhead.py --trials 8 --epochs 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import OVERHEAD_STUDY as STUDY
from _common import HelpFormatter, LoadMonitor, log


class Space:
    """The study's define-by-run space for OptunaSearch (a class: Ray pickles the searcher to checkpoint it)."""

    def __init__(self, study):
        self.study = study

    def __call__(self, trial) -> None:
        from searchspace.convert import optuna_suggest

        optuna_suggest(self.study.space)(trial)


def plain_ray(study, trials: int, storage_path: str) -> float:
    """Plain Ray Tune + OptunaSearch (reuse_actors) on the same work; wall seconds of ``Tuner.fit``."""
    import optuna
    from ray import tune
    from ray.tune.search.optuna import OptunaSearch

    def train(config):
        from trainers.loop import TrainSettings, fit
        from trainers.tasks import adapt_config
        from tuners.driver.trainable import _task_and_data  # the same per-process data cache lwnas's workers use

        task, data = _task_and_data(study.task, dict(study.task_options))
        point = study.space.resolve(config)
        settings = TrainSettings.from_dict(
            {**study.training, **point.training, "epochs": study.budget.epochs, "seed": 0}
        )
        fit(
            adapt_config(point.config, task),
            task,
            settings,
            callback=lambda r: tune.report(r),
            progress=False,
            data=data,
        )

    search = OptunaSearch(
        space=Space(study), metric="val_accuracy", mode="max", sampler=optuna.samplers.RandomSampler(seed=0)
    )
    tuner = tune.Tuner(
        tune.with_resources(train, {"cpu": 1}),
        tune_config=tune.TuneConfig(search_alg=search, num_samples=trials, max_concurrent_trials=1, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=storage_path, verbose=0),
    )
    t0 = time.perf_counter()
    tuner.fit()
    return time.perf_counter() - t0


def through_sweep(study, trials: int, storage: str) -> float:
    from tuners.driver.sweep import SweepOptions, run_sweep

    t0 = time.perf_counter()
    run_sweep(study, SweepOptions(storage=storage, trials=trials, max_concurrent=1, quiet=True))
    return time.perf_counter() - t0


def spread(values: list[float]) -> dict:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "all": [round(v, 3) for v in values],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--trials", type=int, default=8, help="trials in each arm")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per trial")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each arm, alternating")
    args = parser.parse_args()

    import ray

    from searchspace.study import study_from_dict
    from tuners.planning.check import task_family

    spec = {**STUDY, "budget": {"trials": args.trials, "epochs": args.epochs}}
    monitor = LoadMonitor(threads=1)
    # what `lwnas sweep` sets before it starts Ray (tuners.driver.sweep._init_ray), for both arms: the sweep
    # skips it when Ray is already up, and Tune's new output would print its tables to stdout
    for name, value in (
        ("RAY_DEDUP_LOGS", "0"),
        ("RAY_AIR_NEW_OUTPUT", "0"),
        ("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1"),
    ):
        os.environ.setdefault(name, value)
    t0 = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_s = time.perf_counter() - t0
    per_trial: dict[str, list[float]] = {"lwnas": [], "plain": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for arm in ("lwnas", "plain") if r % 2 == 0 else ("plain", "lwnas"):
                log(f"repeat {r + 1}/{args.repeats}: {arm}, {args.trials} trials x {args.epochs} epochs")
                if arm == "lwnas":
                    study = study_from_dict({**spec, "name": f"overhead-{r}"}, task_family=task_family)
                    wall = through_sweep(study, args.trials, f"sqlite:///{Path(tmp) / f'bench{r}.db'}")
                else:
                    study = study_from_dict(spec, task_family=task_family)
                    wall = plain_ray(study, args.trials, str(Path(tmp) / f"plain{r}"))
                per_trial[arm].append(wall / args.trials)
    ratios = [a / b for a, b in zip(per_trial["lwnas"], per_trial["plain"])]
    print(
        json.dumps(
            {
                "trials": args.trials,
                "epochs": args.epochs,
                "repeats": args.repeats,
                "ray_init_s": round(init_s, 2),
                "per_trial_s": {arm: spread(v) for arm, v in per_trial.items()},
                "ratio_lwnas_over_plain": spread(ratios),
                "machine": monitor.report(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
