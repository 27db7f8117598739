"""Records the trial store reads straight from SQL (tuners/store/sql_reads.py) equal ``record_of`` over Optuna's
own view, on SQLite and PostgreSQL: every trial state, epoch records (read when first needed), NaN and infinite
values, seeds and seed repeats, constraints in both of Optuna's layouts, floats that need all 17 digits; and an
incremental read returns exactly what changed."""

from __future__ import annotations

import math

import optuna
import pytest
from helpers.trials import every_kind_of_trial
from sqlalchemy import event

from tuners.fronts.seeds import parent_of
from tuners.store import keys
from tuners.store.record import StoredEpochs, constraints_of, record_of
from tuners.store.trial_store import TrialStore

pytestmark = pytest.mark.usefixtures("away_from_utc")


def richest_study(storage_url: str, study_name: str):
    """``every_kind_of_trial`` plus a seed repeat, Optuna's old constraint layout, floats needing 17 digits and
    a waiting trial last."""
    storage, sid, study = every_kind_of_trial(storage_url, study_name)
    repeat = study.ask({"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)})
    repeat.set_user_attr(keys.SEED_OF, 0)
    repeat.set_user_attr(
        keys.PLAN,
        {
            keys.CONFIG: {"family": "encoder", "d_model": 16},
            keys.SEED: 7,
            keys.COSTS: {"params": 1234, "latency": 0.1 + 0.2},
        },
    )  # as the driver plans it
    repeat.set_user_attr(keys.epoch_key(1), {"epoch": 1, "val_accuracy": 0.1 + 0.2, "val_loss": math.inf})
    repeat_id = storage.get_trial_id_from_study_id_trial_number(sid, repeat.number)
    storage.set_trial_system_attr(repeat_id, "constraints", [0.30000000000000004, -1.0])  # Optuna's old list
    study.tell(repeat, [1 / 3, 2.0**-1074])
    study.enqueue_trial({"lr": 2e-3})  # waiting again (the repeat's ask took the first)
    return storage, sid, study


def test_records_equal_record_of_optunas_view(storage_url, study_name):
    storage, sid, _ = richest_study(storage_url, study_name)
    reader = TrialStore(storage, sid)
    assert reader.bulk_records
    ours, optunas = reader.records_since(), storage.get_all_trials(sid, deepcopy=False)
    assert [r.record for r in ours] == [record_of(t) for t in optunas]  # every field, datetimes included
    assert [r.parent for r in ours] == [parent_of(t) for t in optunas]
    records = [r.record for r in ours]
    assert {r.state for r in records} == {"COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING"}
    assert any(r.epochs for r in records) and any(math.isnan(e["val_loss"]) for r in records for e in r.epochs)
    assert any(math.isinf(v) for r in records for v in r.values or ())
    assert {"0", "1", "params"} <= {k for r in records for k in r.constraints}
    assert any(r.parent != r.record.number for r in ours)
    # lr is stored with several distributions (read per row), d_model with one (read once per study)
    assert len({t.distributions["lr"] for t in optunas if "lr" in t.distributions}) > 1
    assert len({t.distributions["d_model"] for t in optunas if "d_model" in t.distributions}) == 1
    assert any(r.config == {"family": "encoder", "d_model": 16} and r.costs["latency"] == 0.1 + 0.2 for r in records)
    lazy = [r for r in records if isinstance(r.epochs, StoredEpochs)]  # per-epoch keys: read at first use
    assert lazy and [len(r.epochs) for r in lazy] == [
        len(record_of(t).epochs) for t in optunas if t.number in {r.number for r in lazy}
    ]
    assert reader.records_since() == []  # nothing changed
    assert reader.records() == records  # a fresh read of every trial


def test_sqlites_scans_of_the_params_read_what_optuna_holds(tmp_path):
    """On SQLite a read of most of the database's trials scans the params table in stored order: over an id range
    where the study's trials are every id between two (a study alone), else testing each row against the list of
    its ids (another study's trials between); a read of a few trials looks each one up. Each way reads Optuna's
    view of the study, and the test sees which way each read took."""
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    storage, _, study = richest_study(url, "alone")

    def read(name: str) -> tuple[bool, bool]:
        reader = TrialStore.of(storage, name)
        statements: list[str] = []

        def seen(conn, cursor, statement, *rest):
            statements.append(statement)

        event.listen(reader.engine, "before_cursor_execute", seen)
        try:
            reads = reader.records_since()
        finally:
            event.remove(reader.engine, "before_cursor_execute", seen)
        optunas = storage.get_all_trials(reader.study_id, deepcopy=False)
        assert [r.record for r in reads] == [record_of(t) for t in optunas]
        assert [r.parent for r in reads] == [parent_of(t) for t in optunas]
        params = next(s for s in statements if "a.param_value" in s)
        return "+a.trial_id BETWEEN" in params, "+a.trial_id IN" in params

    assert read("alone") == (True, False)
    other = optuna.create_study(study_name="beside", storage=storage, directions=study.directions)
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    for i in range(3):  # the two studies' trials in turn: the first study's ids are no longer one range
        for ot_study, values in ((study, [0.5 + i / 10, 100.0]), (other, [0.1, 1.0 + i])):
            trial = ot_study.ask({"lr": lr})
            ot_study.tell(trial, values)
    assert read("alone") == (False, True)
    assert read("beside") == (False, False)


def test_incremental_read_returns_what_changed(storage_url, study_name):
    storage, sid, study = richest_study(storage_url, study_name)
    reader = TrialStore(storage, sid)
    known = {r.record.number: r.record for r in reader.records_since()}
    running = next(r for r in known.values() if r.state == "RUNNING")
    study.tell(running.number, [0.9, 1000.0])
    new = study.ask()  # takes the waiting trial
    new.set_user_attr(keys.epoch_key(1), {"epoch": 1, "val_accuracy": 0.5})
    fresh = study.ask()
    changed = reader.records_since()
    assert sorted(r.record.number for r in changed) == sorted({running.number, new.number, fresh.number})
    known.update({r.record.number: r.record for r in changed})
    assert [known[n] for n in sorted(known)] == [record_of(t) for t in storage.get_all_trials(sid, deepcopy=False)]
    assert reader.records_since() == []


def columns_read(reader: TrialStore) -> list[tuple[object, int, str, bool]]:
    """What ``columns_since`` read, row by row: record, parent, outcome and whether a front candidate."""
    columns = reader.columns_since()
    rows = zip(columns.records(), columns.parents(), columns.outcomes(), columns.candidates())
    return [(record, parent, outcome, bool(candidate)) for record, parent, outcome, candidate in rows]


def test_a_read_as_columns_gives_the_records_and_moves_the_same_point(storage_url, study_name):
    """``columns_since`` reads what ``records_since`` reads from the same point (and moves it the same way);
    its per-field columns agree with the records (``front_candidates``, outcomes, epoch counts)."""
    from tuners.fronts.objectives import front_candidates

    storage, sid, study = richest_study(storage_url, study_name)
    reader, other = TrialStore(storage, sid), TrialStore(storage, sid)
    rows, reads = columns_read(reader), other.records_since()
    assert [(r, p) for r, p, _, _ in rows] == [(read.record, read.parent) for read in reads]
    assert [o for _, _, o, _ in rows] == [read.record.outcome for read in reads]
    candidates = {r.number for r in front_candidates([read.record for read in reads])}
    assert {r.number for r, _, _, c in rows if c} == candidates and candidates
    assert reader.columns_since().records() == []  # nothing changed
    running = next(read.record for read in reads if read.record.state == "RUNNING")
    study.tell(running.number, [0.9, 1000.0])
    changed = [r.number for r, *_ in columns_read(reader)]
    assert changed == [read.record.number for read in other.records_since()] == [running.number]
    mem = optuna.storages.InMemoryStorage()
    mem_sid = mem.create_new_study([optuna.study.StudyDirection.MINIMIZE], "mem")
    mem.create_new_trial(mem_sid)
    assert [r for r, *_ in columns_read(TrialStore(mem, mem_sid))] == [
        record_of(t) for t in mem.get_all_trials(mem_sid)
    ]


def test_other_storages_read_through_optuna(storage_url, study_name):
    _, sid, _ = richest_study(storage_url, study_name)
    storage = optuna.storages.InMemoryStorage()
    sid = storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "mem")
    storage.create_new_trial(sid)
    reader = TrialStore(storage, sid)
    assert not reader.bulk_records
    assert [r.record for r in reader.records_since()] == [record_of(t) for t in storage.get_all_trials(sid)]
    assert reader.records_since() == []


def test_constraints_of_reads_both_layouts_as_optuna():
    attrs = {"constraints": [1.0, -2.0], "constraints:params": 3.0, "other": 1}
    frozen = optuna.trial.create_trial(state=optuna.trial.TrialState.COMPLETE, value=1.0, system_attrs=attrs)
    assert constraints_of(attrs) == frozen.constraints == {"0": 1.0, "1": -2.0, "params": 3.0}


def test_status_from_records_equals_status_from_optunas_view(storage_url, study_name):
    from tuners.fronts.status import read_trials, study_status

    storage, _, study = richest_study(storage_url, study_name)
    ot_study = optuna.load_study(study_name=study_name, storage=storage)
    assert study_status(ot_study, read_trials(ot_study, storage)) == study_status(ot_study)


def test_overlapping_pauses_of_the_collector_end_with_it_running():
    # two dashboard sessions read at once (threads): the collector stays off until the last one is done,
    # then runs again, whatever order they leave in
    import gc

    from tuners.store.trial_store import collector_paused

    assert gc.isenabled()
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second reader is still building its records
    second.__exit__(None, None, None)
    assert gc.isenabled()
