"""`lwnas sweep` end to end: real Ray on this machine, real PyTorch training, real Optuna storage.

The session's one small sweep on SQLite (``swept_study``, tests/conftest.py) is shared by the checks that
only read its result (what each trial records, infeasible points, `optuna.load_study`, export -> train);
the PostgreSQL sweep, the mo-asha sweep and the sweep whose trials fail on purpose each run once more.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from pathlib import Path

import optuna
import pytest
import yaml
from helpers.procs import (
    COUNTED,
    PG_URL,
    TINY_STUDY,
    lwnas,
    one_error,
    outcome,
    postgres_or_skip,
    read_trials,
    run_proc,
)
from helpers.studies import summary, sweep, write_cursed_study, write_study

from searchspace.files import load_config_file
from trainers import cost
from tuners.store.record import record_of

COMPLETE, FAIL, PRUNED = (
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.FAIL,
    optuna.trial.TrialState.PRUNED,
)
optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_swept_study_spends_its_budget_and_prints_the_front(swept_study):
    s = swept_study
    counted = [t for t in s.trials.values() if outcome(t) in COUNTED]
    assert len(counted) == s.budget, summary(s.trials)
    assert all(t.state == COMPLETE and outcome(t) == "complete" for t in counted), summary(s.trials)
    assert not [
        t for t in s.trials.values() if t.state in (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)
    ]
    assert "Pareto front of sq" in s.output, s.output[-3000:]
    for hint in ("lwnas status sq", "lwnas export sq", "lwnas dashboard", "optuna.load_study"):
        assert hint in s.output, s.output[-3000:]


def test_every_trained_trial_keeps_its_full_record(swept_study):
    s = swept_study
    for t in (t for t in s.trials.values() if outcome(t) == "complete"):
        attrs, record = t.user_attrs, record_of(t)
        assert set(record.costs) >= {"params", "madds"}, attrs  # memory only where the study asks for it
        assert record.config["d_model"] == t.params["d_model"]
        assert math.isclose(record.training["lr"], t.params["lr"])
        epochs = record.epochs
        assert [e["epoch"] for e in epochs] == list(range(1, s.epochs + 1)), epochs
        assert all(0.0 <= e["val_accuracy"] <= 1.0 for e in epochs)
        assert attrs["budget_used"] == s.epochs and attrs["wall_time"] > 0
        assert attrs["host"] and attrs["node"]
        # the values told to Optuna are the last epoch's accuracy and the static parameter count
        assert t.values == [epochs[-1]["val_accuracy"], record.costs["params"]]


def test_seed_configs_are_evaluated_first(swept_study):
    first = {t.user_attrs.get("seed_config"): t for t in swept_study.trials.values() if t.number < 2}
    assert set(first) == {"small", "too-big"}, summary(swept_study.trials)
    assert first["small"].params == {"d_model": 16, "lr": 0.003}
    assert outcome(first["small"]) == "complete" and outcome(first["too-big"]) == "infeasible"


def test_infeasible_points_are_recorded_with_constraints_and_never_trained(swept_study):
    s = swept_study
    infeasible = [t for t in s.trials.values() if outcome(t) == "infeasible"]
    assert infeasible, summary(s.trials)
    for t in infeasible:
        assert t.params["d_model"] == 128
        assert t.constraints == {"params": record_of(t).costs["params"] - s.limit} and t.constraints["params"] > 0
        assert not record_of(t).epochs and "host" not in t.user_attrs, "an infeasible point was trained"
        assert "params" in t.user_attrs["failure"]
    for t in s.trials.values():
        if outcome(t) == "complete":
            assert t.params["d_model"] != 128 and all(c <= 0 for c in t.constraints.values()), t.constraints
    rejected = optuna.load_study(study_name=s.name, storage=s.url).user_attrs["lwnas:rejected"]
    assert rejected["rejected"] == len(infeasible), rejected


def test_optuna_load_study_reads_a_normal_study(swept_study):
    s = swept_study
    study = optuna.load_study(study_name=s.name, storage=s.url)
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE, optuna.study.StudyDirection.MINIMIZE]
    assert study.metric_names == ["accuracy", "params"]
    assert len(study.trials) == len(s.trials)
    best = {t.number for t in study.best_trials}
    assert best and all(outcome(s.trials[n]) == "complete" for n in best), (best, summary(s.trials))


def test_export_then_train_reproduces_the_recorded_value(swept_study):
    s = swept_study
    out_dir = s.workdir / "exported"
    rc, out = run_proc(
        ["lwnas", "export", s.name, "--trials", "pareto", "--storage", s.url, "-o", str(out_dir)],
        s.workdir,
        s.env,
        s.workdir / "export.log",
        timeout=120,
    )
    assert rc == 0, out
    front = {t.number for t in optuna.load_study(study_name=s.name, storage=s.url).best_trials}
    files = sorted(out_dir.glob("*.yaml"))
    assert {int(f.stem.rsplit("-", 1)[1]) for f in files} == front, (files, front)
    assert f"lwnas train {out_dir}/" in out and "--task" not in out, out

    exported = max(files, key=lambda f: int(f.stem.rsplit("-", 1)[1]))  # a trial whose seed is not 0
    number = int(exported.stem.rsplit("-", 1)[1])
    recorded = record_of(s.trials[number])
    meta = yaml.safe_load(exported.read_text())
    assert meta["provenance"]["study"] == s.name and meta["provenance"]["trial"] == number
    assert meta["task"] == "digits" and meta["training"]["seed"] == number  # the study's seed is 0
    assert meta["training"]["epochs"] == s.epochs and math.isclose(meta["training"]["lr"], recorded.training["lr"])
    assert cost(load_config_file(exported).config, memory=False).params == recorded.costs["params"]

    run_dir = s.workdir / "full-run"  # no --task, no --seed: the file carries both
    rc, out = run_proc(
        ["lwnas", "train", str(exported), "-o", str(run_dir)], s.workdir, s.env, s.workdir / "train.log", timeout=300
    )
    assert rc == 0, out[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["params"] == recorded.costs["params"]
    assert (
        metrics["val"]["accuracy"]
        == record_of(s.trials[number]).epochs[-1]["val_accuracy"]
        == s.trials[number].values[0]
    )
    assert load_config_file(run_dir / "config.yaml").config.to_dict() == recorded.config

    rc, out = run_proc(
        ["lwnas", "train", str(exported), "--task", "shapes-vqa", "-o", str(run_dir)],
        s.workdir,
        s.env,
        s.workdir / "train-other.log",
        timeout=120,
    )
    assert rc == 2 and "--task: is 'shapes-vqa' but" in out and "trained on task 'digits'" in out, out


def test_exporting_an_infeasible_trial_is_refused_unless_asked_for(swept_study):
    s = swept_study
    number = next(n for n, t in s.trials.items() if outcome(t) == "infeasible")
    out_dir = s.workdir / "exported-infeasible"
    args = ["lwnas", "export", s.name, "--trials", str(number), "--storage", s.url, "-o", str(out_dir)]
    rc, out = run_proc(args, s.workdir, s.env, s.workdir / "export-infeasible.log", timeout=120)
    assert rc == 1 and not out_dir.exists(), out
    errors = [line for line in out.splitlines() if line.startswith("error")]
    assert errors == [
        f"error trial(s) {number} are infeasible (they break the study's constraints and were never "
        "trained); export them anyway with --infeasible"
    ], out
    rc, out = run_proc([*args, "--infeasible"], s.workdir, s.env, s.workdir / "export-infeasible.log", timeout=120)
    assert rc == 0, out
    meta = yaml.safe_load(next(out_dir.glob("*.yaml")).read_text())
    assert meta["provenance"]["outcome"] == "infeasible" and meta["provenance"]["values"]["accuracy"] == -math.inf


# ---- PostgreSQL ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.postgres
def test_sweep_on_postgres_keeps_the_password_out_of_its_output(tmp_path):
    postgres_or_skip()
    name = f"lwnas-test-pg-{uuid.uuid4().hex[:10]}"
    secret = "pw-" + uuid.uuid4().hex[:8]  # trust auth ignores it; the sweep must never print it
    url = PG_URL.replace("postgres@", f"postgres:{secret}@", 1) if "postgres@" in PG_URL else PG_URL
    study = write_study(tmp_path, name, trials=3, epochs=1)
    try:
        s = sweep(tmp_path, study, url, name, budget=3, epochs=1)
        assert len(s.trials) == 3 and all(outcome(t) == "complete" for t in s.trials.values()), summary(s.trials)
        loaded = optuna.load_study(study_name=name, storage=url)
        assert len(loaded.best_trials) >= 1
        if secret in url:
            assert secret not in s.output, "the database password was printed"
            assert "LWNAS_STORAGE" in s.output
            # nor written anywhere: Ray's results and experiment state, logs, the study's stored attributes
            leaked = [p for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
            assert not leaked, leaked
            stored = json.dumps([loaded.user_attrs] + [t.user_attrs for t in loaded.trials], default=str)
            assert secret not in stored
    finally:
        try:
            optuna.delete_study(study_name=name, storage=url)
        except KeyError:
            pass


# ---- mo-asha --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_mo_asha_stops_trials_early_and_records_them_pruned(tmp_path):
    # One architecture and learning rates from hopeless to good: at each rung the static costs tie,
    # so promotion goes by accuracy and the slow learners are stopped.
    name, budget, epochs = "asha", 8, 4
    study = write_study(
        tmp_path, name, trials=budget, epochs=epochs, scheduler="mo-asha", d_models=(16,), lr_low=1.0e-5
    )
    s = sweep(tmp_path, study, f"sqlite:///{tmp_path / 'lwnas.db'}", name, budget, epochs)
    pruned = [t for t in s.trials.values() if t.state == PRUNED]
    assert pruned, summary(s.trials)
    for t in pruned:
        assert outcome(t) == "pruned" and t.values is None
        assert 1 <= t.user_attrs["budget_used"] < epochs == 4
        assert len(record_of(t).epochs) == t.user_attrs["budget_used"]
    complete = [t for t in s.trials.values() if t.state == COMPLETE]
    assert complete and all(t.user_attrs["budget_used"] == epochs for t in complete)
    assert len(pruned) + len(complete) == budget, summary(s.trials)
    best = {t.number for t in optuna.load_study(study_name=name, storage=s.url).best_trials}
    assert best.isdisjoint(t.number for t in pruned)


# ---- failures -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_trial_that_raises_or_diverges_fails_alone(tmp_path):
    # the plugin is registered (tests/plugins, entry point `cursed-digits`), as a user's own task would be:
    # the driver and Ray's workers must both resolve it by that name
    name, budget = "cursed", 4
    study = write_cursed_study(tmp_path, name, trials=budget, epochs=2)
    s = sweep(tmp_path, study, f"sqlite:///{tmp_path / 'lwnas.db'}", name, budget, 2)
    by_seed = {t.user_attrs.get("seed_config"): t for t in s.trials.values()}
    raised, nan, fine = by_seed["raises"], by_seed["nan"], by_seed["fine"]
    assert raised.state == FAIL and outcome(raised) == "failed", summary(s.trials)
    assert "RuntimeError" in raised.user_attrs["failure"] and "d_model 16 raises" in raised.user_attrs["failure"]
    assert nan.state == FAIL and outcome(nan) == "failed", summary(s.trials)
    assert "non-finite" in nan.user_attrs["failure"].lower() or "nan" in nan.user_attrs["failure"].lower()
    assert fine.state == COMPLETE and outcome(fine) == "complete", summary(s.trials)
    # the sweep went on: the budget is spent, every other trial trained normally
    counted = [t for t in s.trials.values() if outcome(t) in COUNTED]
    assert len(counted) == budget
    assert all(outcome(t) == "complete" for t in counted if t.params["d_model"] == 32), summary(s.trials)
    # the terminal: one line per failed trial with its reason and the log file; no traceback
    assert "Traceback" not in s.output and "Trials did not complete" not in s.output, s.output[-4000:]
    raised_line = re.search(
        rf"trial {raised.number} failed \(RuntimeError: cursed plugin: d_model 16 raises; "
        r"full log: (\S+sweep\.log)\)",
        s.output,
    )
    assert raised_line, s.output[-4000:]
    assert re.search(
        rf"trial {nan.number} failed \(training failed in epoch 1: non-finite loss.*; full log: ", s.output
    ), s.output[-4000:]
    log = Path(raised_line[1]).read_text()
    assert "Traceback (most recent call last)" in log and "cursed plugin: d_model 16 raises" in log
    assert f"trial {nan.number} failed: training failed in epoch 1" in log


@pytest.mark.slow
def test_a_plugin_allowed_on_the_command_line_trains_in_rays_workers(tmp_path):
    """`--allow-plugin` is the one way an unregistered class trains: the driver checks it, and the Ray workers
    (other processes) resolve the same reference from what the driver's command line allowed, not from storage."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "mytask.py").write_text(
        "from trainers.tasks.digits import Digits\n\n\nclass MyTask(Digits):\n    name = 'my-task'\n"
    )
    work = tmp_path / "elsewhere"  # neither the plugin's folder nor the study's
    work.mkdir()
    study = tmp_path / "study.yaml"
    study.write_text(
        TINY_STUDY.format(name="allowed", trials=1, epochs=1).replace("task: digits", "task: mytask:MyTask")
    )
    url = f"sqlite:///{work / 'lwnas.db'}"
    refused = lwnas(work, "sweep", study, "--storage", url, PYTHONPATH=str(plugins))
    assert "is not registered" in one_error(refused) and "--allow-plugin mytask:MyTask" in one_error(refused)
    ran = lwnas(
        work, "sweep", study, "--storage", url, "--allow-plugin", "mytask:MyTask", timeout=600, PYTHONPATH=str(plugins)
    )
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr[-3000:]
    (trial,) = read_trials(url, "allowed").values()
    assert outcome(trial) == "complete" and record_of(trial).task == "mytask:MyTask"
