"""Framework overhead of `lwnas sweep`: the same N short trials through the sweep (Ray Tune +
lwnas's searcher on Optuna's ask-and-tell + SQLite storage) and through a plain in-process Optuna
loop that trains the same configurations with the same training loop, one trial at a time in both.

Both use Optuna's RandomSampler with one seed over the same define-by-run space, so they train the
same points. Prints JSON: wall time of each, their ratio, and seconds of overhead per trial, with
Ray's start-up reported separately (paid once per sweep).

    python bench/sweep_overhead.py --trials 8 --epochs 2
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml
from _common import OVERHEAD_STUDY as STUDY
from _common import HelpFormatter, LoadMonitor, log


def plain_optuna(study, trials: int) -> tuple[float, list]:
    import optuna

    from searchspace.convert import optuna_suggest
    from trainers.loop import TrainSettings, train
    from tuners.planning.check import make_task

    task = make_task(study)
    data = task.load(seed=0)
    suggest = optuna_suggest(study.space)

    def objective(trial):
        point = study.space.resolve(suggest(trial))
        settings = TrainSettings.from_dict(
            {**study.training, **point.training, "epochs": study.budget.epochs, "seed": trial.number}
        )
        result = train(point.config, task, settings, progress=False, data=data)
        return result.val["accuracy"], result.params

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ot = optuna.create_study(directions=["maximize", "minimize"], sampler=optuna.samplers.RandomSampler(seed=0))
    t0 = time.perf_counter()
    ot.optimize(objective, n_trials=trials)
    return time.perf_counter() - t0, [t.params for t in ot.trials]


def through_sweep(study, trials: int, storage: str) -> tuple[float, float, list]:
    import ray

    from tuners.driver.sweep import SweepOptions, run_sweep

    t0 = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ot = run_sweep(study, SweepOptions(storage=storage, trials=trials, max_concurrent=1, quiet=True))
    wall = time.perf_counter() - t0
    from tuners.store.record import record_of

    ordered = sorted((t for t in ot.trials if record_of(t).epochs), key=lambda t: t.number)
    return wall, init_s, [t.params for t in ordered]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--trials", type=int, default=8, help="trials in each arm")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per trial")
    args = parser.parse_args()

    from searchspace.study import study_from_dict
    from tuners.planning.check import task_family

    spec = {**STUDY, "budget": {"trials": args.trials, "epochs": args.epochs}}
    study = study_from_dict(spec, task_family=task_family)
    monitor = LoadMonitor(threads=1)
    log(f"plain Optuna loop: {args.trials} trials x {args.epochs} epochs")
    plain_s, plain_params = plain_optuna(study, args.trials)
    with tempfile.TemporaryDirectory() as tmp:
        log(f"lwnas sweep (Ray Tune + Optuna ask-and-tell + SQLite): {args.trials} trials x {args.epochs} epochs")
        sweep_s, init_s, sweep_params = through_sweep(study, args.trials, f"sqlite:///{Path(tmp) / 'bench.db'}")
    print(
        json.dumps(
            {
                "trials": args.trials,
                "epochs": args.epochs,
                "same_configurations": plain_params == sweep_params,
                "plain_optuna_s": round(plain_s, 2),
                "lwnas_sweep_s": round(sweep_s, 2),
                "ray_init_s": round(init_s, 2),
                "ratio_sweep_over_plain": round(sweep_s / plain_s, 3),
                "overhead_per_trial_s": round((sweep_s - plain_s) / args.trials, 3),
                "machine": monitor.report(),
                "study": yaml.safe_dump(spec, sort_keys=False),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
