"""The anchor arm of bench/many_workers.py: plain Ray Tune running trials that only sleep, with nothing of lwnas
and no torch in the trial workers, so the workers' memory and the utilisation it reaches are Ray Tune's own floor
for one actor per trial. Run by many_workers.py in a session of its own (``--anchor``), not by hand:

    python bench/plain_tune_sleep.py OUT.json CONCURRENT TRIALS EPOCHS SLEEP CPUS_PER_TRIAL STORAGE_DIR

Writes one row per trial to OUT.json: its start and end (Unix seconds, measured in the trial) and the seconds it
slept (its busy time, as the lwnas arm counts each trial's recorded training wall time).
"""

from __future__ import annotations

import json
import sys
import time


def sleep_trial(config: dict) -> None:
    from ray import tune

    start = time.time()
    for epoch in range(1, config["epochs"] + 1):
        time.sleep(config["sleep"])
        tune.report({"epoch": epoch, "start": start, "end": time.time(), "busy": epoch * config["sleep"]})


def main() -> None:
    out, concurrent, trials, epochs, sleep, cpus, storage = sys.argv[1:8]
    import ray
    from ray import tune

    ray.init(include_dashboard=False, log_to_driver=False)
    tuner = tune.Tuner(
        tune.with_resources(sleep_trial, {"cpu": float(cpus)}),
        param_space={"epochs": int(epochs), "sleep": float(sleep), "x": tune.uniform(0, 1)},
        tune_config=tune.TuneConfig(num_samples=int(trials), max_concurrent_trials=int(concurrent), reuse_actors=True),
        run_config=tune.RunConfig(storage_path=storage, name="plain-tune", verbose=0))
    results = tuner.fit()
    rows = [{"start": r.metrics["start"], "end": r.metrics["end"], "busy": r.metrics["busy"],
             "epochs": r.metrics["epoch"]} for r in results if r.metrics]
    with open(out, "w") as f:
        json.dump({"trials": rows, "errors": len(results.errors)}, f)


if __name__ == "__main__":
    main()
