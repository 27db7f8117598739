"""The trial store's writes by trial number (tuners/store/trial_store.py): what the driver writes through it (a plan,
epochs, an interruption) is what every read of it gives back, on a real SQLite storage."""

from __future__ import annotations

import optuna

from tuners.store.connection import open_storage
from tuners.store.record import StoredEpochs, TrialRecord
from tuners.store.trial_store import TrialStore

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_what_the_driver_writes_every_read_gives_back(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    storage = open_storage(url, create=True)
    study = optuna.create_study(study_name="s", storage=storage, directions=["maximize"])
    store = TrialStore.of(storage, "s")
    trial = study.ask()
    planned = TrialRecord(
        number=trial.number,
        config={"family": "encoder", "d_model": 16},
        training={"lr": 0.1, "seed": 3},
        task="digits",
        seed=3,
        costs={"params": 1234.0},
    )
    store.plan(trial, planned)
    store.append_epoch(trial.number, {"epoch": 1, "val_accuracy": 0.5})
    store.append_epoch(trial.number, {"epoch": 2, "val_accuracy": 0.625})

    one = store.record(trial.number)  # through Optuna's get_trial
    assert one.for_worker() == planned.for_worker()
    assert [e["val_accuracy"] for e in one.epochs] == [0.5, 0.625]
    (running,) = store.records_since()  # in bulk: the open trial's epochs are read at once
    assert running.record == one and running.parent == trial.number

    store.interrupt(trial.number, "the driver stopped")
    (interrupted,) = store.records_since()
    assert (interrupted.record.state, interrupted.record.outcome) == ("FAIL", "interrupted")
    assert interrupted.record.failure == "the driver stopped"
    assert store.records_since() == []  # nothing changed since

    # a new reader: the finished trial's epochs are counted, then read when first needed
    (fresh,) = TrialStore.of(open_storage(url, read_only=True), "s").records()
    assert isinstance(fresh.epochs, StoredEpochs) and len(fresh.epochs) == 2
    assert fresh == store.record(trial.number)
