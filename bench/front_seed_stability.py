"""Front seed stability: how often a point on a single-seed Pareto front falls off the front once its
point is trained on more seeds (issue 16, `budget: {front_seeds: N}`).

For each task and study seed, one real sweep runs through the `lwnas sweep` command with
`front_seeds: N` (SQLite storage in a temporary folder, or --out). From the stored study:

- the single-seed front: the front of each point's first-seed trial alone, as a sweep without
  front_seeds would have drawn it from the same points;
- the seed-mean front: the front `lwnas status` shows (each point's seed mean, tuners/fronts/seeds.py).

A single-seed front member whose point ended with N seeds is "confirmed"; it "falls off" when it is not
on the seed-mean front. Also reported: the seed standard deviation of the task metric on the front's
points, the pooled one, and the task-metric gap between neighbours on the seed-mean front (a std larger
than the gap means one seed cannot order the neighbours). The digits study is the quickstart
(studies/quickstart.yaml) with the budget below; shapes-vqa is studies/tasks/shapes-vqa.yaml made small
(d_model 32 or 64, one layer, --shapes-train-size examples, no scheduler). Prints JSON.

    python bench/front_seed_stability.py --tasks digits,shapes-vqa --trials 14 --epochs 2 --study-seeds 0,100
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml
from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
LWNAS = str(Path(sys.executable).parent / "lwnas")


# ---- the studies --------------------------------------------------------------------------------------
def study_dict(task: str, seed: int, args: argparse.Namespace) -> dict:
    """The study file a run sweeps: a shipped study with this bench's budget and tuner."""
    if task == "digits":
        study = yaml.safe_load((ROOT / "studies/quickstart.yaml").read_text())
    elif task == "shapes-vqa":
        study = yaml.safe_load((ROOT / "studies/tasks/shapes-vqa.yaml").read_text())
        study["task_options"] = {"train_size": args.shapes_train_size}
        study["space"].update({"d_model": {"choice": [32, 64]}, "layers": 1})
        study["training"] = {"batch_size": 128, "threads": 1}
    else:
        raise ValueError(f"no study for task {task!r}")  # main() checks --tasks before any sweep
    study["name"] = f"seeds-{task}-{seed}"
    study["budget"] = {"trials": args.trials, "epochs": args.epochs, "front_seeds": args.front_seeds}
    study["tuner"] = {"sampler": "nsga2", "scheduler": "none", "max_concurrent": args.max_concurrent, "seed": seed}
    return study


def run_sweep(study_file: Path, storage: str, cache: Path, timeout: float) -> float:
    """`lwnas sweep` as a user types it, in a session of its own; its wall time in seconds."""
    env = {**os.environ, "RAY_ADDRESS": "local", "RAY_USAGE_STATS_ENABLED": "0", "LWNAS_CACHE": str(cache)}
    env.pop("LWNAS_STORAGE", None)
    out = study_file.with_suffix(".log")
    t0 = time.perf_counter()
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [LWNAS, "sweep", str(study_file), "--storage", storage],
            cwd=study_file.parent,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        raise SystemExit(f"`lwnas sweep {study_file.name}` ran past {timeout} s; its log: {out}") from None
    if rc != 0:
        log(out.read_text(errors="replace")[-4000:])
        raise SystemExit(f"`lwnas sweep {study_file.name}` exited {rc}")
    return time.perf_counter() - t0


def kill_session(sid: int) -> None:
    """SIGKILL the processes of session ``sid`` (Ray's workers sit in process groups of their own)."""
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[3]) == sid:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---- the figures --------------------------------------------------------------------------------------
def stability(trials: Sequence, objectives: Sequence, front_seeds: int) -> dict:
    """Single-seed front against seed-mean front for one study's trials (Optuna ``FrozenTrial``s) and its
    objectives (``searchspace.study.Objective``)."""
    from tuners.fronts.objectives import pareto_front
    from tuners.fronts.seeds import pareto_front_groups, pooled_std, seed_groups

    metric = next(i for i, o in enumerate(objectives) if not o.is_cost)  # the task metric
    groups = seed_groups(trials)
    by_first = {g.members[0].number: g for g in groups}
    single_front = [by_first[r.number] for r in pareto_front([g.members[0] for g in groups], objectives)]
    mean_front = pareto_front_groups(groups, objectives)
    on_mean_front = {g.number for g in mean_front}

    members = [
        {
            "trial": g.number,
            "seeds": g.seeds,
            "single_seed": g.members[0].values[metric],
            "mean": g.record.values[metric],
            "std": g.std[metric],
            "on_seed_mean_front": g.number in on_mean_front,
        }
        for g in single_front
    ]
    confirmed = [m for m in members if m["seeds"] >= front_seeds]
    fell = [m for m in confirmed if not m["on_seed_mean_front"]]
    stds = [g.std[metric] for g in mean_front if g.seeds > 1]
    ordered = sorted(g.record.values[metric] for g in mean_front)
    return {
        "metric": objectives[metric].metric,
        "points": len(groups),
        "repeat_trials": sum(g.seeds - 1 for g in groups),
        "single_seed_front": len(members),
        "confirmed": len(confirmed),
        "fell_off": len(fell),
        "fell_off_fraction": round(len(fell) / len(confirmed), 3) if confirmed else None,
        "not_confirmed": len(members) - len(confirmed),
        "seed_mean_front": len(mean_front),
        "joined": sorted(on_mean_front - {g.number for g in single_front}),  # on the mean front only
        "front_seed_std": _spread(stds),
        "pooled_std": _round(pooled_std(groups, metric)),
        "front_neighbour_gap": _spread([b - a for a, b in zip(ordered, ordered[1:])]),
        "single_seed_front_members": [{k: _round(v) for k, v in m.items()} for m in members],
    }


def _round(value):
    return round(value, 4) if isinstance(value, float) else value


def _spread(values: Sequence[float]) -> dict | None:
    if not values:
        return None
    return {
        "n": len(values),
        "median": _round(statistics.median(values)),
        "min": _round(min(values)),
        "max": _round(max(values)),
    }


def summary(runs: Sequence[dict]) -> dict:
    """Per task: fall-offs over all study seeds, and each seed's fraction (the spread between studies)."""
    out = {}
    for task in dict.fromkeys(r["task"] for r in runs):
        mine = [r for r in runs if r["task"] == task]
        confirmed = sum(r["confirmed"] for r in mine)
        fell = sum(r["fell_off"] for r in mine)
        fractions = [r["fell_off_fraction"] for r in mine if r["fell_off_fraction"] is not None]
        out[task] = {
            "studies": len(mine),
            "confirmed": confirmed,
            "fell_off": fell,
            "fell_off_fraction": round(fell / confirmed, 3) if confirmed else None,
            "per_study_fraction": fractions,
            "front_seed_std_median": [r["front_seed_std"]["median"] if r["front_seed_std"] else None for r in mine],
            "front_neighbour_gap_median": [
                r["front_neighbour_gap"]["median"] if r["front_neighbour_gap"] else None for r in mine
            ],
        }
    return out


def measure(task: str, seed: int, args: argparse.Namespace, folder: Path) -> dict:
    import optuna

    from tuners.fronts.objectives import study_objectives

    study = study_dict(task, seed, args)
    study_file = folder / f"{study['name']}.yaml"
    study_file.write_text(yaml.safe_dump(study, sort_keys=False))
    storage = f"sqlite:///{folder / 'studies.db'}"
    log(f"sweep {study['name']}: {args.trials} trials x {args.epochs} epochs, front_seeds {args.front_seeds}")
    wall = run_sweep(study_file, storage, folder / "cache", args.sweep_timeout)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ot = optuna.load_study(study_name=study["name"], storage=storage)
    result = stability(ot.get_trials(deepcopy=False), study_objectives(ot), args.front_seeds)
    return {"task": task, "study_seed": seed, "sweep_wall_s": round(wall, 1), **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--tasks", default="digits,shapes-vqa", help="comma-separated: digits, shapes-vqa")
    parser.add_argument("--trials", type=int, default=14, help="trial budget of each sweep (repeats included)")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs of each trial")
    parser.add_argument("--front-seeds", type=int, default=3, help="the studies' budget.front_seeds")
    parser.add_argument(
        "--study-seeds",
        default="0,100",
        help="comma-separated tuner seeds, one sweep per task each (trial seeds are study seed + "
        "trial number: keep them apart by more than --trials)",
    )
    parser.add_argument("--max-concurrent", type=int, default=2, help="trials a sweep trains at once")
    parser.add_argument("--shapes-train-size", type=int, default=2000, help="shapes-vqa training examples")
    parser.add_argument("--sweep-timeout", type=float, default=900, help="seconds one sweep may take")
    parser.add_argument(
        "--out",
        type=Path,
        help="keep the study files, logs and SQLite storage here "
        "(`lwnas status NAME --storage sqlite:///OUT/studies.db`)",
    )
    args = parser.parse_args()
    unknown = set(args.tasks.split(",")) - {"digits", "shapes-vqa"}
    if unknown:
        parser.error(
            f"--tasks: {', '.join(sorted(unknown))} not among the tasks this bench sweeps (digits, shapes-vqa)"
        )

    monitor = LoadMonitor(threads=1)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for seed in (int(s) for s in args.study_seeds.split(",")):
            for task in args.tasks.split(","):
                runs.append(measure(task, seed, args, folder.resolve()))
                log(json.dumps({k: v for k, v in runs[-1].items() if k != "single_seed_front_members"}))
    print(
        json.dumps(
            {
                "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "summary": summary(runs),
                "runs": runs,
                "machine": monitor.report(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
