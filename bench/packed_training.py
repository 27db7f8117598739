"""Packed training: the same candidates swept one per Ray trial and in packs (``tuner: {pack: P}``), in one run.

Both arms are real ``lwnas sweep`` runs (``run_sweep``: Ray Tune, the study's searcher on Optuna, SQLite)
of the quickstart study (studies/quickstart.yaml: its space, seed config, objectives, constraint, training
settings and ``max_concurrent``), with Ray started once beforehand so neither arm pays its start. The sampler
is Optuna's random sampler with the study's seed instead of its nsga2 (whose later generations depend on the
order results arrive in): it draws by trial number, so both arms train the same candidates with the same
seeds (``same_candidates`` checks the params trial by trial). Prints JSON:

* ``candidates_per_hour`` of each arm (candidates trained / the sweep's wall time) and their ratio ``speedup``;
* ``max_member_diff``: the largest difference of a per-epoch train loss or validation metric between a
  candidate trained in a pack and the same candidate trained alone in the other arm (0: identical);
* the device each arm's trials trained on, and how busy the machine was.

    python bench/packed_training.py                 # 16 candidates, packs of 8, 3 epochs each
    python bench/packed_training.py --trials 8 --pack 4 --epochs 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]


def study_with(trials: int, epochs: int, pack: int):
    from searchspace.study import study_from_dict
    from tuners.planning.check import task_family

    spec = yaml.safe_load((ROOT / "studies" / "quickstart.yaml").read_text())
    spec["budget"] = {"trials": trials, "epochs": epochs or spec["budget"]["epochs"]}  # no time limit
    # the random sampler draws by trial number whatever the results: both arms train the same candidates
    # (nsga2's later generations depend on the order results arrive in)
    spec["tuner"] = {**spec["tuner"], "sampler": "random", "pack": pack}
    return study_from_dict(spec, task_family=task_family), spec


def sweep(study, storage: str) -> tuple[float, dict]:
    """Wall time of one sweep and its trained trials by number."""
    from tuners.driver.sweep import SweepOptions, run_sweep
    from tuners.store.record import record_of

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # the sweep prints its front on stdout; the JSON goes there
        ot = run_sweep(study, SweepOptions(storage=storage, quiet=True))
    wall = time.perf_counter() - t0
    trained = {t.number: record_of(t) for t in ot.trials if record_of(t).epochs}
    return wall, trained


def training_s(trained: dict) -> float:
    """Seconds the candidates spent training (each one's own epochs and validation), summed."""
    return sum(float(r.epochs[-1].get("wall_time") or 0) for r in trained.values())


def member_diff(packed: dict, solo: dict) -> float:
    """Largest |packed - solo| over every candidate's per-epoch train loss and validation metrics."""
    worst = 0.0
    for number, record in packed.items():
        alone = solo[number]
        for a, b in zip(record.epochs, alone.epochs, strict=True):
            for key in a:
                if key == "train_loss" or key.startswith("val_"):
                    worst = max(worst, abs(float(a[key]) - float(b[key])))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--trials", type=int, default=16, help="candidates in each arm")
    parser.add_argument("--pack", type=int, default=8, help="candidates per Ray trial in the packed arm")
    # 3, not the study's 10: the default run stays a few minutes on two busy cores
    parser.add_argument("--epochs", type=int, default=3, help="epochs per candidate (0: the study's budget)")
    args = parser.parse_args()

    import ray

    solo_study, spec = study_with(args.trials, args.epochs, 1)
    packed_study, _ = study_with(args.trials, args.epochs, args.pack)
    monitor = LoadMonitor(threads=1)
    t0 = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        log(f"one candidate per Ray trial: {args.trials} candidates")
        solo_s, solo = sweep(solo_study, f"sqlite:///{Path(tmp) / 'solo.db'}")
        log(f"packs of {args.pack}: {args.trials} candidates")
        packed_s, packed = sweep(packed_study, f"sqlite:///{Path(tmp) / 'packed.db'}")
    same = sorted(solo) == sorted(packed) and all(solo[n].params == packed[n].params for n in solo)
    per_hour = {"one_per_trial": len(solo) / solo_s * 3600, "packed": len(packed) / packed_s * 3600}
    print(
        json.dumps(
            {
                "candidates": {"one_per_trial": len(solo), "packed": len(packed)},
                "pack": args.pack,
                "ray_trials_packed": math.ceil(args.trials / args.pack),
                "epochs": packed_study.budget.epochs,
                "max_concurrent": packed_study.tuner.max_concurrent,
                "same_candidates": same,
                "wall_s": {"one_per_trial": round(solo_s, 2), "packed": round(packed_s, 2)},
                "candidates_per_hour": {k: round(v) for k, v in per_hour.items()},
                # the candidates' own training time, summed over the concurrent trials: the rest of
                # wall x max_concurrent is the sweep's per-trial overhead (dispatch, reports, records)
                "training_s": {"one_per_trial": round(training_s(solo), 2), "packed": round(training_s(packed), 2)},
                "speedup": round(per_hour["packed"] / per_hour["one_per_trial"], 2),
                "max_member_diff": member_diff(packed, solo) if same else None,
                "devices": {
                    "one_per_trial": sorted({str(r.device) for r in solo.values()}),
                    "packed": sorted({str(r.device) for r in packed.values()}),
                },
                "ray_init_s": round(init_s, 2),
                "machine": monitor.report(),
                "study": yaml.safe_dump({**spec, "budget": packed_study.budget.__dict__}, sort_keys=False),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
