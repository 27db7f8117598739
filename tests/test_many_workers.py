"""Many trials at once on fractional CPUs, with the driver killed mid-sweep and resumed: nothing is lost
or duplicated. A small-size check of what ``bench/many_workers.py`` measures at scale (the trials
sleep, tests/plugins/sleep_task.py, so 4 run at once on 2 cores; each Ray actor still imports torch,
which is what bounds concurrency on a small machine)."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import optuna
import pytest
import yaml
from helpers.procs import (
    SWEEP_TIMEOUT,
    kill_session,
    proc_env,
    read_trials,
    run_proc,
    start_proc,
    states_sqlite,
    wait_for,
)

from tuners.store import keys

pytestmark = pytest.mark.slow

CONCURRENT, BUDGET = 4, 8  # 4 at once: the kill finds >= 3 running; each trial is an actor importing torch


def _ray_numbers(cache: Path) -> Counter:
    """Optuna trial number of every Ray trial either driver started (from its params.json)."""
    numbers = Counter()
    for params in (cache / "ray_results").glob("*/*/params.json"):
        numbers[json.loads(params.read_text())["_lwnas_number"]] += 1
    return numbers


def test_concurrent_trials_killed_and_resumed_lose_and_duplicate_nothing(tmp_path):
    study = {
        "name": "many",
        "task": "sleep-digits",
        "task_options": {"sleep_s": 2},
        "objectives": [{"metric": "accuracy", "direction": "maximize"}],
        "budget": {"trials": BUDGET, "epochs": 2},
        "tuner": {
            "sampler": "random",
            "scheduler": "none",
            "max_concurrent": CONCURRENT,
            "seed": 0,
            "cpus_per_trial": 0.2,
        },
        "training": {"batch_size": 16, "threads": 1},
        "space": {
            "d_model": {"choice": [16, 32]},
            "heads": 2,
            "layers": 1,
            "lr": {"float": [1.0e-3, 5.0e-3], "log": True},
        },
    }
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    db = tmp_path / "lwnas.db"
    url, env, log = f"sqlite:///{db}", proc_env(tmp_path), tmp_path / "sweep.log"
    proc = start_proc(["lwnas", "sweep", "study.yaml", "--storage", url], tmp_path, env, log)
    try:

        def several_running():
            return sum(s == "RUNNING" for s in states_sqlite(db, "many").values()) >= 3

        wait_for(several_running, SWEEP_TIMEOUT, "3 trials running at once", proc, log)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and Ray's local processes
        proc.wait(timeout=30)
    finally:
        kill_session(proc)
    interrupted = {n for n, t in read_trials(url, "many").items() if t.state == optuna.trial.TrialState.RUNNING}
    assert len(interrupted) >= 3

    rc, out = run_proc(["lwnas", "resume", "many", "--storage", url], tmp_path, env, tmp_path / "resume.log")
    assert rc == 0, out[-4000:]
    after = read_trials(url, "many")
    assert sorted(after) == list(range(len(after)))  # every number once
    complete = {n for n, t in after.items() if t.state == optuna.trial.TrialState.COMPLETE}
    assert len(complete) == BUDGET, {n: t.state.name for n, t in after.items()}
    assert all(len(keys.epochs_of(after[n].user_attrs)) == 2 for n in complete)
    assert not any(t.state == optuna.trial.TrialState.RUNNING for t in after.values())
    # each interrupted trial was re-run once, and only those
    requeued = Counter(
        t.user_attrs.get(keys.REQUEUED_FROM) for t in after.values() if keys.REQUEUED_FROM in t.user_attrs
    )
    assert set(requeued) == interrupted and set(requeued.values()) == {1}, (requeued, interrupted)
    # one Ray trial per stored trial that ran, and every finished trial came from one
    ray = _ray_numbers(tmp_path / "cache")
    assert set(ray.values()) == {1}, ray
    assert complete <= set(ray) <= set(after)
