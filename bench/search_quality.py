"""Search quality: hypervolume reached at equal compute by nsga2, tpe and random, with and without
mo-asha, on one fixed study (digits; accuracy vs parameters) and fixed seeds.

Compute is counted in training epochs. Without a scheduler every trial trains the full budget, so
an arm gets `compute / epochs` trials; with mo-asha, stopped trials cost fewer epochs, so the arm
gets twice as many trials and is cut, in completion order, where its epochs reach the same compute.
Hypervolume (moocore) is measured from one reference point for all arms: accuracy 0 and 1.1 x the
largest parameter count any arm trained. Prints JSON.

    python bench/search_quality.py --compute 48 --seeds 0
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

SPACE = {
    "d_model": {"choice": [16, 32, 64]},
    "heads": 4,
    "layers": {"int": [1, 2]},
    "g_mha": {"choice": [True, False]},
    "g_ffn": {"choice": [True, False]},
    "groups": {"choice": [2, 4]},
    "layer_sharing": {"choice": ["none", "albert"]},
    "pooling": {"choice": ["mean", "attention"]},
    "lr": {"float": [1.0e-3, 5.0e-3], "log": True},
}


def run_arm(sampler: str, scheduler: str, seed: int, epochs: int, compute: int, storage: str):
    from searchspace.study import study_from_dict
    from tuners.driver.sweep import SweepOptions, run_sweep
    from tuners.planning.check import task_family
    from tuners.store.record import record_of

    trials = compute // epochs * (2 if scheduler == "mo-asha" else 1)
    spec = {
        "name": f"{sampler}-{scheduler}-{seed}",
        "task": "digits",
        "objectives": ["accuracy", "params"],
        "budget": {"trials": trials, "epochs": epochs},
        "tuner": {
            "sampler": sampler,
            "scheduler": scheduler,
            "seed": seed,
            "max_concurrent": 2,
            "grace_epochs": 1,
            "reduction_factor": 2,
            "population_size": 4,
        },
        "training": {"threads": 1},
        "space": SPACE,
    }
    study = study_from_dict(spec, task_family=task_family)
    t0 = time.perf_counter()
    ot = run_sweep(study, SweepOptions(storage=storage, quiet=True))
    wall = time.perf_counter() - t0
    trained = sorted((r for r in map(record_of, ot.trials) if r.epochs), key=lambda r: r.datetime_complete)
    used, within = 0, []
    for r in trained:
        if used + len(r.epochs) > compute:
            break
        used += len(r.epochs)
        within.append(r)
    return {"records": within, "epochs_used": used, "trials_run": len(trained), "wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--compute", type=int, default=48, help="training epochs each arm may spend")
    parser.add_argument("--epochs", type=int, default=4, help="full budget of one trial")
    parser.add_argument("--seeds", default="0", help="comma-separated sampler seeds")
    parser.add_argument("--samplers", default="nsga2,tpe,random")
    args = parser.parse_args()

    import ray

    from searchspace.study import Objective
    from tuners.fronts.objectives import front_hypervolume

    monitor = LoadMonitor(threads=1)
    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    arms = {}
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{Path(tmp) / 'quality.db'}"
        for seed in (int(s) for s in args.seeds.split(",")):
            for sampler in args.samplers.split(","):
                for scheduler in ("none", "mo-asha"):
                    log(f"arm {sampler} / {scheduler} / seed {seed}")
                    arms[(sampler, scheduler, seed)] = run_arm(
                        sampler, scheduler, seed, args.epochs, args.compute, storage
                    )
    objectives = [Objective("accuracy", "maximize"), Objective("params", "minimize")]
    largest = max(r.values[1] for arm in arms.values() for r in arm["records"] if r.values)
    ref = [0.0, 1.1 * largest]
    results = []
    for (sampler, scheduler, seed), arm in arms.items():
        results.append(
            {
                "sampler": sampler,
                "scheduler": scheduler,
                "seed": seed,
                "hypervolume": round(front_hypervolume(arm["records"], objectives, ref), 2),
                "trials_within_compute": len(arm["records"]),
                "epochs_used": arm["epochs_used"],
                "trials_run": arm["trials_run"],
                "wall_s": arm["wall_s"],
            }
        )
    print(
        json.dumps(
            {
                "compute_epochs": args.compute,
                "epochs_per_trial": args.epochs,
                "reference_point": {"accuracy": ref[0], "params": ref[1]},
                "arms": results,
                "machine": monitor.report(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
