"""Packed sweeps (``tuner: {pack: N}``): real ``lwnas sweep`` runs where one Ray trial trains several trials.

* A sweep of packs with mo-asha and a task that fails on purpose for some members: every member keeps its
  own record, epochs, outcome and device; a failed member fails alone; a pruned member carries its rung;
  a trained member's recorded losses equal training its record alone.
* ``kill -9`` of a packed sweep, then ``lwnas resume``: finished members are untouched, each member left
  running is re-queued exactly once, and the budget is spent exactly.
"""

from __future__ import annotations

import os
import signal

import optuna
import pytest
from helpers.procs import (
    COUNTED,
    SWEEP_TIMEOUT,
    kill_session,
    outcome,
    proc_env,
    read_trials,
    run_proc,
    start_proc,
    states_sqlite,
    wait_for,
)
from helpers.studies import summary, sweep, write_cursed_study, write_study

from searchspace import ArchConfig
from trainers.loop import TrainSettings, fit
from trainers.tasks import resolve_task
from tuners.store.record import record_of

pytestmark = pytest.mark.slow
COMPLETE, FAIL, PRUNED, RUNNING = (
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.FAIL,
    optuna.trial.TrialState.PRUNED,
    optuna.trial.TrialState.RUNNING,
)


def test_a_packed_sweep_keeps_each_members_record_outcome_and_device(tmp_path):
    name, budget, epochs = "packed", 6, 3
    study = write_cursed_study(tmp_path, name, trials=budget, epochs=epochs, scheduler="mo-asha", pack=3)
    s = sweep(tmp_path, study, f"sqlite:///{tmp_path / 'lwnas.db'}", name, budget, epochs)
    assert "in packs of 3" in s.output, s.output[-3000:]
    trials = s.trials
    assert len(trials) == budget and all(outcome(t) in COUNTED for t in trials.values()), summary(trials)
    packs = {tuple(t.user_attrs["pack"]) for t in trials.values()}
    assert packs == {(0, 1, 2), (3, 4, 5)}, packs  # two Ray trials, three Optuna trials each
    by_seed = {t.user_attrs.get("seed_config"): t for t in trials.values()}
    raised, nan, fine = by_seed["raises"], by_seed["nan"], by_seed["fine"]
    assert raised.state == FAIL and "cursed plugin: d_model 16 raises" in raised.user_attrs["failure"]
    assert nan.state == FAIL and "non-finite" in nan.user_attrs["failure"], summary(trials)
    assert fine.state in (COMPLETE, PRUNED), summary(trials)
    for t in trials.values():
        record = record_of(t)
        assert record.planned and record.seed is not None
        if t.state != FAIL:
            assert record.device == "cpu" and len(record.epochs) == t.user_attrs["budget_used"] >= 1
        if t.state == PRUNED:  # mo-asha judged the member at its rung, inside its pack
            assert t.user_attrs["pruned_by"]["rung"] == 1 and len(record.epochs) < epochs
        if t.state == COMPLETE:
            assert len(record.epochs) == epochs and t.values is not None
    # one line per member as it ended, the reason of a failed member on it
    assert f"trial {raised.number} failed (" in s.output and "cursed plugin: d_model 16 raises" in s.output
    # the member trained in its pack exactly as its record trains alone
    record = record_of(fine)
    task = resolve_task("cursed-digits", raise_d_model=16, nan_d_model=24)
    settings = TrainSettings.from_dict(record.training)
    alone = fit(ArchConfig.from_dict(record.config), task, settings, progress=False)
    packed = [e["train_loss"] for e in record.epochs]
    assert packed == pytest.approx([e["train_loss"] for e in alone.history[: len(packed)]], rel=0, abs=1e-9)


def test_kill9_of_a_packed_sweep_then_resume_loses_and_repeats_nothing(tmp_path):
    name, budget = "packkill", 6
    study = write_study(tmp_path, name, trials=budget, epochs=8, pack=2)
    db = tmp_path / "lwnas.db"
    url, env, log = f"sqlite:///{db}", proc_env(tmp_path), tmp_path / "sweep.log"
    proc = start_proc(["lwnas", "sweep", str(study), "--storage", url], tmp_path, env, log)
    try:

        def ready():
            states = states_sqlite(db, name)
            return sum(s == "COMPLETE" for s in states.values()) >= 1 and "RUNNING" in states.values()

        wait_for(ready, SWEEP_TIMEOUT, "a complete member and a running one", proc, log)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and Ray's local processes
        proc.wait(timeout=30)
    finally:
        kill_session(proc)
    before = read_trials(url, name)
    interrupted = [n for n, t in before.items() if t.state == RUNNING]
    finished = [n for n, t in before.items() if t.state == COMPLETE]
    assert interrupted and finished, summary(before)
    rc, out = run_proc(["lwnas", "resume", name, "--storage", url], tmp_path, env, tmp_path / "resume.log")
    assert rc == 0, out[-4000:]
    after = read_trials(url, name)
    for n in finished:  # kept as they were
        assert (after[n].state, after[n].values, after[n].user_attrs) == (
            before[n].state,
            before[n].values,
            before[n].user_attrs,
        )
    for n in interrupted:  # re-queued exactly once, with its params
        assert outcome(after[n]) == "interrupted", after[n].user_attrs
        reruns = [t for t in after.values() if t.user_attrs.get("requeued_from") == n]
        assert len(reruns) == 1 and reruns[0].params == after[n].params, [t.number for t in reruns]
    counted = [n for n, t in after.items() if outcome(t) in COUNTED]
    assert len(counted) == budget and len(after) == budget + len(interrupted), summary(after)
    assert {outcome(after[n]) for n in counted} == {"complete"}, summary(after)
    assert all(len(record_of(after[n]).epochs) == 8 for n in counted)
