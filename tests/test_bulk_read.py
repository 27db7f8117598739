"""Bulk trial reads and writes of the trial store (tuners/store/trial_store.py) equal Optuna's own, on SQLite
and PostgreSQL: every state, values (infinite too), params, user and system attributes (constraints),
intermediate values and datetimes; and an incremental read returns exactly the trials that changed."""

from __future__ import annotations

import datetime as dt
import math
import time
import uuid

import numpy as np
import optuna
import pytest
from sweep_procs import PG_URL, postgres_or_skip

from dashboards.sample import make_trial, seed_study
from tuners.store.connection import open_storage
from tuners.store.record import record_of
from tuners.store.trial_store import TrialStore

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture(autouse=True)
def away_from_utc(monkeypatch):
    """Optuna stores naive UTC and shows naive local time: a local zone off UTC makes a wrong conversion show."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'bulk.db'}"
    postgres_or_skip()
    return PG_URL


@pytest.fixture
def name(url):
    name = f"bulk-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        optuna.delete_study(study_name=name, storage=url)
    except KeyError:
        pass


def every_kind_of_trial(url: str, name: str) -> tuple[optuna.storages.RDBStorage, int, optuna.Study]:
    """A study with finished synthetic trials (complete, infeasible, pruned, failed) written in bulk, then
    trials in every other state through Optuna's ask-and-tell: running, waiting, failed, infinite values."""
    study = seed_study(url, name=name, trials=40, seed=3)
    assert {record_of(t).outcome for t in study.trials} >= {"complete", "infeasible", "pruned", "failed"}
    running = study.ask()
    running.suggest_float("lr", 1e-4, 1e-2, log=True)
    running.set_user_attr("epochs", [{"epoch": 1, "val_loss": math.nan}])  # NaN: JSON that orjson rejects
    running.set_constraint("params", 12.0)
    failed = study.ask()
    study.tell(failed, state=optuna.trial.TrialState.FAIL)
    infinite = study.ask()
    infinite.suggest_categorical("d_model", [32, 64])
    study.tell(infinite, [-math.inf, math.inf])
    study.enqueue_trial({"lr": 1e-3})  # waiting (the next ask takes it)
    storage = open_storage(url)
    sid = storage.get_study_id_from_name(name)
    running_id = storage.get_trial_id_from_study_id_trial_number(sid, running.number)
    # intermediate values (Trial.report is single-objective only; lwnas does not use them, Optuna's view has them)
    storage.set_trial_intermediate_value(running_id, 1, 0.5)
    storage.set_trial_intermediate_value(running_id, 2, math.inf)
    return storage, storage.get_study_id_from_name(name), study


def test_bulk_read_equals_optunas_view(url, name):
    storage, sid, _ = every_kind_of_trial(url, name)
    reader = TrialStore(storage, sid)
    assert reader.bulk
    ours, optunas = reader.frozen_since(), storage.get_all_trials(sid, deepcopy=False)
    assert {t.state.name for t in ours} == {"COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING"}
    assert ours == optunas  # FrozenTrial equality: every field, trial ids and datetimes included
    assert [record_of(t).constraints for t in ours] == [record_of(t).constraints for t in optunas]
    assert any(math.isinf(v) for t in ours for v in t.values or ())
    assert any(not record_of(t).feasible for t in ours)
    assert reader.frozen_since() == []  # nothing changed


def test_incremental_read_returns_what_changed(url, name):
    storage, sid, study = every_kind_of_trial(url, name)
    reader = TrialStore(storage, sid)
    known = {t.number: t for t in reader.frozen_since()}
    running = next(t for t in known.values() if t.state.name == "RUNNING")
    study.tell(running.number, [0.9, 1000.0])  # finishes an open trial
    new = study.ask()  # takes the waiting trial (enqueued): it changes from WAITING to RUNNING
    new.set_user_attr("host", "here")
    fresh = study.ask()  # a new trial
    changed = reader.frozen_since()
    assert sorted(t.number for t in changed) == sorted({running.number, new.number, fresh.number})
    known.update({t.number: t for t in changed})
    assert [known[n] for n in sorted(known)] == storage.get_all_trials(sid, deepcopy=False)
    assert reader.frozen_since() == []


def test_bulk_write_equals_add_trials(url, name):
    rng_trials = [
        make_trial(i, ("accuracy", "params"), np.random.default_rng(i), dt.datetime(2026, 1, 1, 9, 0, i))
        for i in range(12)
    ]
    storage = open_storage(url, create=True)
    ours = optuna.create_study(study_name=name, storage=storage, directions=["maximize", "minimize"])
    theirs = optuna.create_study(study_name=name + "-add", storage=storage, directions=["maximize", "minimize"])
    try:
        TrialStore.of(storage, name).insert(rng_trials)
        theirs.add_trials(rng_trials)

        def fields(trials):
            return [{k: v for k, v in t.__dict__.items() if k != "_trial_id"} for t in trials]

        assert fields(ours.get_trials(deepcopy=False)) == fields(theirs.get_trials(deepcopy=False))
        assert len(ours.trials) == 12
    finally:
        optuna.delete_study(study_name=name + "-add", storage=storage)


class UnknownSchema(optuna.storages.RDBStorage):
    """A real storage that reports a schema revision lwnas was never checked against."""

    def get_current_version(self) -> str:
        return "v99.0.0.a"


def test_unknown_schema_or_storage_falls_back_to_optuna(url, name):
    _, sid, study = every_kind_of_trial(url, name)
    for storage in (UnknownSchema(url), optuna.storages.InMemoryStorage()):
        if isinstance(storage, optuna.storages.InMemoryStorage):
            sid = storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "mem")
            storage.create_new_trial(sid)
        reader = TrialStore(storage, sid)
        assert not reader.bulk
        first = reader.frozen_since()
        assert first == storage.get_all_trials(sid, deepcopy=False)
        assert reader.frozen_since() == []
        running = next(t for t in first if t.state.name == "RUNNING")
        storage.set_trial_user_attr(storage.get_trial_id_from_study_id_trial_number(sid, running.number), "host", "h")
        assert [t.number for t in reader.frozen_since()] == [running.number]
