"""Build a tabular benchmark: a grid sweep of a table study with `lwnas sweep` (then `lwnas resume`), in
chunks, and `lwnas table export` of the finished sweep; prints one JSON object with the build's throughput.

    python bench/build_table.py studies/tables/digits.yaml --lock /tmp/lwnas-heavy.lock

Each chunk is one driver (`lwnas sweep --trials N`, then `lwnas resume NAME --trials N'`) that trains about
`--chunk-minutes` of trials, sized from the rate of the chunk before; with `--lock` each chunk holds that file's
lock (flock) and releases it between chunks, so a long build shares a machine. Running it again continues a
build (the storage keeps every trial). The figures: trials per hour of driver wall time (Ray start-up
included, once per chunk), trials failed, trials a stopped driver left behind and re-ran, the export's time
and the table's size; the two things compared in one run are the sweep's trial rate and what its trials
trained (the sum of epoch seconds over trials, i.e. the share of the wall the framework adds).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import HelpFormatter, log  # noqa: E402


def lwnas(*args: str) -> list[str]:
    """The ``lwnas`` command of this interpreter's environment."""
    return [str(Path(sys.executable).parent / "lwnas"), *args]


@contextmanager
def held(lock: str | None):
    """The file lock ``lock`` (flock, exclusive) while the block runs; nothing without one."""
    if lock is None:
        yield 0.0
        return
    start = time.monotonic()
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - start
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def progress(storage: str, name: str) -> dict:
    """Counts of a sweep's trials by outcome, and the budget it stores (None: no such study yet)."""
    import optuna

    from tuners.store import keys

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return {"exists": False}
    outcomes: dict[str, int] = {}
    trained = 0.0
    for t in study.get_trials(deepcopy=False):
        outcome = t.user_attrs.get(keys.OUTCOME, t.state.name.lower())
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        trained += sum(v.get("epoch_time", 0.0) for k, v in t.user_attrs.items() if k.startswith("epoch:"))
    counted = sum(outcomes.get(o, 0) for o in ("complete", "pruned", "failed"))
    return {"exists": True, "outcomes": outcomes, "counted": counted, "trained_s": trained}


def table_figures(path: Path) -> dict:
    """What the built table says: its size, true front, hypervolume and each score's Kendall tau against accuracy."""
    from tuners.simulate.table import load_table

    table = load_table(path)
    names = [o.metric for o in table.objectives]
    front = table.true_front()
    return {
        "architectures": len(table.entries),
        "complete_architectures": len(table.complete()),
        "runs": sum(len(e.runs) for e in table.entries),
        "reference_point": dict(zip(names, table.reference_point())),
        "true_front_size": len(front),
        "true_hypervolume": table.true_hypervolume(),
        "best_mean_final": max(e.mean_final(table.task_metrics[0]) for e in table.complete()),
        "kendall_tau_vs_final": {k: round(v["tau"], 3) for k, v in table.kendall_taus().items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument(
        "study", type=Path, help="a table study (tuner: {sampler: grid}), e.g. studies/tables/digits.yaml"
    )
    parser.add_argument("--storage", help="sweep storage (default: sqlite under $LWNAS_CACHE/tables/)")
    parser.add_argument("--output", "-o", type=Path, help="table file (default: beside the study, .lwtable.json.gz)")
    parser.add_argument("--lock", help="a lock file each chunk holds (flock), e.g. /tmp/lwnas-heavy.lock")
    parser.add_argument("--chunk-minutes", type=float, default=14.0, help="driver wall time a chunk aims at")
    parser.add_argument("--first-chunk", type=int, default=200, help="trials of the first chunk (no rate yet)")
    parser.add_argument("--chunks", type=int, default=100, help="stop after this many chunks (in this run)")
    args = parser.parse_args()

    from searchspace.study import load_study
    from tuners.driver.grid import grid_trials
    from tuners.planning.check import task_family

    study = load_study(args.study, task_family=task_family)
    total = grid_trials(study)
    cache = Path(os.environ.get("LWNAS_CACHE", Path.home() / ".cache" / "lwnas")) / "tables"
    cache.mkdir(parents=True, exist_ok=True)
    storage = args.storage or f"sqlite:///{cache / study.name}.db"
    output = args.output or args.study.with_suffix(".lwtable.json.gz")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    # every chunk of this build so far, across runs of this script (a build continued later reports them all)
    chunk_file = cache / f"{study.name}.chunks.jsonl"
    chunks: list[dict] = (
        [json.loads(line) for line in chunk_file.read_text().splitlines()] if chunk_file.exists() else []
    )
    rate: float | None = chunks[-1]["trials"] / chunks[-1]["wall_s"] if chunks and chunks[-1]["trials"] else None
    first_new = len(chunks)
    state = progress(storage, study.name)
    while state.get("counted", 0) < total and len(chunks) - first_new < args.chunks:
        size = args.first_chunk if rate is None else max(20, int(rate * args.chunk_minutes * 60 * 0.9))
        target = min(total, state.get("counted", 0) + size)
        with held(args.lock) as waited:
            load = round(os.getloadavg()[0], 2)
            start = time.monotonic()
            if state["exists"]:
                command = lwnas("resume", study.name, "--trials", str(target), "--storage", storage)
            else:
                command = lwnas("sweep", str(args.study), "--trials", str(target), "--storage", storage)
            result = subprocess.run(command, env=env, capture_output=True, text=True)
            wall = time.monotonic() - start
        before, state = state, progress(storage, study.name)
        done = state["counted"] - before.get("counted", 0)
        rate = done / wall if done else rate
        chunks.append(
            {
                "target": target,
                "trials": done,
                "wall_s": round(wall, 1),
                "lock_wait_s": round(waited, 1),
                "exit": result.returncode,
                "load": load,
                "stderr_tail": result.stderr.strip().splitlines()[-1:] if result.returncode else [],
            }
        )
        log(json.dumps({"chunk": len(chunks), **chunks[-1]}))
        with chunk_file.open("a") as f:
            f.write(json.dumps(chunks[-1]) + "\n")
        if result.returncode not in (0, 4) or not done:  # 4: stopped before its budget (resumable)
            break
    export_s = None
    if state.get("counted", 0) >= total:
        with held(args.lock):
            start = time.monotonic()
            subprocess.run(
                lwnas("table", "export", study.name, "--storage", storage, "-o", str(output)), env=env, check=True
            )
            export_s = time.monotonic() - start
    outcomes = state.get("outcomes", {})
    sweep_wall = sum(c["wall_s"] for c in chunks)
    trials = sum(c["trials"] for c in chunks)
    report = {
        "bench": "build_table",
        "study": study.name,
        "task": study.task,
        "grid_trials": total,
        "trials_done": state.get("counted", 0),
        "chunks": len(chunks),
        "sweep_wall_s": round(sweep_wall, 1),
        "trials_per_hour": round(3600 * trials / sweep_wall, 1) if sweep_wall else None,
        "trained_s": round(state.get("trained_s", 0.0), 1),
        "framework_share": round(1 - state.get("trained_s", 0.0) / (2 * sweep_wall), 3) if sweep_wall else None,
        "failed": outcomes.get("failed", 0),
        "interrupted_and_rerun": outcomes.get("interrupted", 0),
        "export_s": round(export_s, 1) if export_s is not None else None,
        "table": str(output) if export_s is not None else None,
        "table_bytes": output.stat().st_size if export_s is not None else None,
        "storage": storage,
        "chunk_log": chunks,
        **(table_figures(output) if export_s is not None else {}),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
