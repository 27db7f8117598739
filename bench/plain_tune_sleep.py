"""The anchor arm of bench/many_workers.py: plain Ray Tune running trials that only sleep, with nothing of lwnas
and no torch in the trial workers, so the workers' memory and the utilisation it reaches are Ray Tune's own floor
for one actor per trial. Run by many_workers.py in a session of its own (``--anchor``), not by hand:

    python bench/plain_tune_sleep.py OUT CONCURRENT TRIALS EPOCHS SLEEP CPUS_PER_TRIAL STORAGE_DIR

Writes one row per trial to OUT.json: its start and end (Unix seconds, measured in the trial) and the seconds it
slept (its busy time, as the lwnas arm counts each trial's recorded training wall time).
"""

from __future__ import annotations

import argparse
import json
import time

from _common import HelpFormatter


def sleep_trial(config: dict) -> None:
    from ray import tune

    start = time.time()
    for epoch in range(1, config["epochs"] + 1):
        time.sleep(config["sleep"])
        tune.report({"epoch": epoch, "start": start, "end": time.time(), "busy": epoch * config["sleep"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("out", help="the JSON file the trials' rows are written to")
    parser.add_argument("concurrent", type=int, help="trials running at once")
    parser.add_argument("trials", type=int, help="trials in the sweep")
    parser.add_argument("epochs", type=int, help="reports per trial")
    parser.add_argument("sleep", type=float, help="seconds each epoch sleeps")
    parser.add_argument("cpus_per_trial", type=float, help="Ray CPUs each trial holds")
    parser.add_argument("storage", help="Ray Tune's storage folder")
    args = parser.parse_args()
    import ray
    from ray import tune

    ray.init(include_dashboard=False, log_to_driver=False)
    tuner = tune.Tuner(
        tune.with_resources(sleep_trial, {"cpu": args.cpus_per_trial}),
        param_space={"epochs": args.epochs, "sleep": args.sleep, "x": tune.uniform(0, 1)},
        tune_config=tune.TuneConfig(num_samples=args.trials, max_concurrent_trials=args.concurrent, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=args.storage, name="plain-tune", verbose=0),
    )
    results = tuner.fit()
    rows = [
        {"start": r.metrics["start"], "end": r.metrics["end"], "busy": r.metrics["busy"], "epochs": r.metrics["epoch"]}
        for r in results
        if r.metrics
    ]
    with open(args.out, "w") as f:
        json.dump({"trials": rows, "errors": len(results.errors)}, f)


if __name__ == "__main__":
    main()
