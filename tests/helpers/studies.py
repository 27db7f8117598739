"""The study files the sweep tests write, and the session's one shared sweep (``swept_study`` in
tests/conftest.py): a small digits study on SQLite whose result many tests only read."""

from __future__ import annotations

import fcntl
import json
from dataclasses import dataclass
from pathlib import Path

import optuna

from helpers.procs import outcome, proc_env, read_trials, run_proc
from searchspace.study import load_study
from tuners.planning.check import make_task, task_family
from tuners.planning.costs import StaticCosts

STUDY = """\
name: {name}
task: {task}
objectives:
  - {{metric: accuracy, direction: maximize}}
  - {{metric: params, direction: minimize}}
constraints: {{params: {{max: {max_params}}}}}
budget: {{trials: {trials}, epochs: {epochs}}}
tuner: {{sampler: random, scheduler: {scheduler}, max_concurrent: 2, seed: 0, max_failures: 1,
         grace_epochs: 1, reduction_factor: 2, pack: {pack}}}
training: {{batch_size: 64, threads: 1}}
seed_configs: {seed_configs}
space:
  d_model: {{choice: {d_models}}}
  heads: 2
  layers: 1
  lr: {{float: [{lr_low}, 5.0e-3], log: true}}
"""


def write_study(
    directory: Path,
    name: str,
    *,
    task: str = "digits",
    trials: int = 4,
    epochs: int = 2,
    scheduler: str = "none",
    max_params: float = 1.0e9,
    d_models=(16, 32),
    seed_configs: dict | None = None,
    lr_low: float = 1.0e-3,
    pack: int | str = 1,
    **task_options,
) -> Path:
    text = STUDY.format(
        name=name,
        task=task,
        trials=trials,
        epochs=epochs,
        scheduler=scheduler,
        max_params=max_params,
        d_models=list(d_models),
        lr_low=f"{lr_low:.1e}",
        seed_configs=json.dumps(seed_configs or {}),
        pack=pack,
    )
    if task_options:
        text += f"task_options: {json.dumps(task_options)}\n"
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return path


def write_cursed_study(directory: Path, name: str, **options) -> Path:
    """A study of the `cursed-digits` plugin task (tests/plugins) whose three seed configurations end three ways:
    d_model 16 raises, 24 diverges to NaN, 32 trains (``options`` as write_study's)."""
    return write_study(
        directory,
        name,
        task="cursed-digits",
        d_models=(16, 24, 32),
        raise_d_model=16,
        nan_d_model=24,
        seed_configs={
            "raises": {"d_model": 16, "lr": 0.003},
            "nan": {"d_model": 24, "lr": 0.003},
            "fine": {"d_model": 32, "lr": 0.003},
        },
        **options,
    )


def params_of_d_model(study_file: Path, d_model: int) -> int:
    """The parameter count the cost model gives one point of a study (what the constraint checks)."""
    study = load_study(study_file, task_family=task_family)
    static = StaticCosts(study, make_task(study))
    point = study.space.resolve({"d_model": d_model, "lr": 0.003})
    return static.evaluate(static.adapt(point.config)).costs["params"]


@dataclass
class Swept:
    name: str
    url: str
    budget: int
    epochs: int
    output: str
    trials: dict[int, optuna.trial.FrozenTrial]
    workdir: Path
    env: dict
    limit: float = 0.0  # the study's constraint on params


def sweep(workdir: Path, study: Path, url: str, name: str, budget: int, epochs: int, **env_extra) -> Swept:
    env = proc_env(workdir, **env_extra)
    rc, out = run_proc(["lwnas", "sweep", str(study), "--storage", url], workdir, env, workdir / f"{name}.log")
    assert rc == 0, out[-4000:]
    return Swept(name, url, budget, epochs, out, read_trials(url, name), workdir, env)


def summary(trials: dict[int, optuna.trial.FrozenTrial]) -> dict:
    return {n: (t.state.name, outcome(t), t.user_attrs.get("failure")) for n, t in trials.items()}


SHARED = "sq"  # the shared study's name


def shared_study(workdir: Path) -> Swept:
    """The shared study in ``workdir``, swept by the first process of the test run that asks for it.

    Under pytest-xdist every worker asks; one sweeps while the others wait on the folder's lock, then each
    reads the same study (the sweep's output and settings are kept beside it in ``swept.json``).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    done = workdir / "swept.json"
    with open(workdir / "sweep.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when this process dies
        if not done.exists():
            swept = sweep_shared_study(workdir)
            done.write_text(json.dumps({"budget": swept.budget, "epochs": swept.epochs, "limit": swept.limit}))
    kept = json.loads(done.read_text())
    url = f"sqlite:///{workdir / 'lwnas.db'}"
    output = (workdir / f"{SHARED}.log").read_text(errors="replace")
    return Swept(
        SHARED,
        url,
        kept["budget"],
        kept["epochs"],
        output,
        read_trials(url, SHARED),
        workdir,
        proc_env(workdir),
        limit=kept["limit"],
    )


def sweep_shared_study(workdir: Path) -> Swept:
    """4 trials of 2 epochs, 2 at a time, on SQLite; two seed configs evaluated first, one of them over the
    params constraint (recorded infeasible, never trained: d_model 128 breaks it); the rest random."""
    name, budget, epochs = SHARED, 4, 2
    probe = write_study(workdir, name, d_models=(16, 32, 128))
    limit = (params_of_d_model(probe, 32) + params_of_d_model(probe, 128)) // 2
    study = write_study(
        workdir,
        name,
        trials=budget,
        epochs=epochs,
        max_params=limit,
        d_models=(16, 32, 128),
        seed_configs={"small": {"d_model": 16, "lr": 0.003}, "too-big": {"d_model": 128, "lr": 0.003}},
    )
    swept = sweep(workdir, study, f"sqlite:///{workdir / 'lwnas.db'}", name, budget, epochs)
    swept.limit = limit
    return swept
