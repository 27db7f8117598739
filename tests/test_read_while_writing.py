"""Readers never block or break a sweep's writes: ``lwnas status`` in a loop and the dashboard's data read
(``TrialCache``) poll a study while another process writes trials into it, on SQLite and PostgreSQL.

The writer is a separate process that opens the storage as the sweep driver does
(``tuners.store.connection.open_storage`` with ``flush_each_commit=False``, tuners/driver/sweep.py) and
writes each trial's record the way the driver does (tuners/driver/searcher.py: ask, the planned record as
one ``plan`` attribute, a constraint, one ``epoch:NNNN`` attribute per epoch, tell); it has no Ray and no
training, so it writes as fast as the storage lets it, which is the hardest case for the readers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import optuna
import pytest
from helpers.procs import lwnas, proc_env

from dashboards.data import TrialCache
from dashboards.sample import seed_study
from tuners.store import keys
from tuners.store.connection import open_storage
from tuners.store.record import record_of
from tuners.store.trial_store import TrialStore

EPOCHS = 3
WRITER = """
import pathlib, sys, optuna
from tuners.store import keys
from tuners.store.connection import open_storage
from tuners.store.record import TrialRecord, planned_attrs

import pytest
url, name, stop = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name=name, storage=open_storage(url, flush_each_commit=False))
written = 0
while not stop.exists() or written < 20:
    trial = study.ask()
    d_model = trial.suggest_categorical("d_model", [32, 64])  # as dashboards.sample draws it
    record = TrialRecord(number=trial.number, config={"family": "encoder", "d_model": d_model},
                         training={"epochs": EPOCHS, "seed": trial.number}, task="digits", seed=trial.number,
                         costs={"params": float(d_model * 100)})
    for key, value in planned_attrs(record).items():
        trial.set_user_attr(key, value)
    trial.set_constraint("params", float(d_model - 48))
    for e in range(1, EPOCHS + 1):
        epoch = {"epoch": e, "val_accuracy": 0.1 * e, "wall_time": 0.01 * e}
        trial.set_user_attr(keys.epoch_key(e), epoch)
    study.tell(trial, [epoch["val_accuracy"], float(d_model * 100)])
    written += 1
print("written", written)
""".replace("EPOCHS", str(EPOCHS))


@pytest.mark.slow
def test_status_and_dashboard_poll_while_a_writer_writes(storage_url, study_name, tmp_path):
    url, name = storage_url, study_name  # every backend (tests/conftest.py)
    seed_study(url, name=name, trials=30, seed=1)
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, name, str(stop)],
        cwd=tmp_path,
        env=proc_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cache, polls = TrialCache(url, name), []
    try:
        while len(polls) < 3:  # each poll: one `lwnas status` and one dashboard refresh, while the writer runs
            status = lwnas(tmp_path, "status", name, "--storage", url, "--json", timeout=300)
            assert status.returncode == 0, status.stdout + status.stderr
            data = cache.load()
            assert writer.poll() is None, "the writer stopped before the readers were done: " + writer.stderr.read()
            polls.append((json.loads(status.stdout)["trials"], len(data.records)))
    finally:
        stop.touch()
        out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0 and "locked" not in err, err
    written = int(out.split()[-1])
    assert polls[0][0] >= 30 and polls[-1][1] > 30  # the readers saw the study grow
    storage = open_storage(url)
    sid = storage.get_study_id_from_name(name)
    trials = storage.get_all_trials(sid, deepcopy=False)
    new = [t for t in trials if t.number >= 30]
    assert len(new) == written and all(t.state.name == "COMPLETE" for t in new)  # every write landed, none twice
    records = [record_of(t) for t in new]  # read back as every reader reads the driver's layout
    assert all(
        len(r.epochs) == EPOCHS
        and r.epochs[-1]["epoch"] == EPOCHS
        and r.constraints
        and r.task == "digits"
        and r.config["d_model"] == r.params["d_model"]
        for r in records
    )
    assert all(keys.PLAN in t.user_attrs and keys.EPOCHS not in t.user_attrs for t in new)  # not the old layout
    assert cache.load().records == [record_of(t) for t in trials]  # the incremental view ends where Optuna's does


def test_a_write_lands_while_a_sqlite_reader_holds_its_transaction(tmp_path):
    """A long read (a 100k-trial first view) keeps a read transaction open; the sweep's commit must not wait
    for it. In SQLite's default rollback-journal mode it would, then fail with "database is locked"."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'held.db'}"
    study = seed_study(url, name="held", trials=5)
    reader = sqlite3.connect(tmp_path / "held.db", isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM trials").fetchone() == (5,)  # the read transaction is open
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            writer = optuna.load_study(study_name="held", storage=open_storage(url))
            writer.add_trial(study.trials[0])
            outcome["done"] = True
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(timeout=180)  # longer than the storage's 60 s busy timeout: a blocked write fails before this
    assert outcome == {"done": True}, outcome
    assert reader.execute("SELECT count(*) FROM trials").fetchone() == (5,)  # still the reader's snapshot
    reader.execute("COMMIT")
    assert reader.execute("SELECT count(*) FROM trials").fetchone() == (6,)
    storage = open_storage(url)
    assert len(TrialStore.of(storage, "held").frozen_since()) == 6
