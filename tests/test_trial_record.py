"""The recorded trial is the only thing that crosses from the driver to the worker.

A real sweep (Ray, PyTorch, SQLite) through the installed `lwnas`: every worker reports what it built
(in its first epoch's report, which Ray keeps in the trial's ``result.json``), and that must equal the
record the driver stored. The worker's code is then run in this process on a stored record with the
study language, the resolution, the task adaptation and the cost model made to fail: it must still
train, and reproduce the sweep's value.
A study written the old way (training settings on the study, epochs as one list) still reads.
"""

from __future__ import annotations

import importlib
import json
import math
import warnings
from pathlib import Path

import optuna
import pytest
import yaml
from helpers.procs import TINY_STUDY, lwnas, outcome
from helpers.studies import SHARED

from tuners.store import keys
from tuners.store.record import TrialRecord, record_of

optuna.logging.set_verbosity(optuna.logging.WARNING)

NAME, TRIALS, EPOCHS = SHARED, 4, 2  # the shared sweep's complete trials (tests/helpers/studies.py)


@pytest.fixture(scope="module")
def swept(swept_study):
    assert (swept_study.name, swept_study.budget, swept_study.epochs) == (NAME, TRIALS, EPOCHS)
    return swept_study.trials, built_by_number(swept_study.workdir / "cache" / "ray_results")


def built_by_number(ray_results: Path) -> dict[int, dict]:
    """Trial number -> what its worker reported it built (first epoch's ``built``, in Ray's result.json)."""
    from tuners.driver.trainable import BUILT, NUMBER

    built = {}
    for path in ray_results.glob(f"{NAME}-*/trial-*/result.json"):
        first = json.loads(path.read_text().splitlines()[0])
        built[first["config"][NUMBER]] = first[BUILT]
    return built


def test_each_worker_built_exactly_the_stored_record(swept):
    trials, built = swept
    complete = [t for t in trials.values() if outcome(t) == "complete"]
    assert len(complete) == TRIALS, {n: outcome(t) for n, t in trials.items()}
    assert set(built) == {t.number for t in complete}, (sorted(built), sorted(trials))
    for t in complete:
        record, worker = record_of(t), built[t.number]
        assert record.planned and record.task == worker["task"] == "digits"
        assert worker["config"] == record.config  # the adapted configuration, every knob
        assert worker["params"] == record.costs["params"]  # counted on the model the worker built
        assert worker["training"] == record.training  # every training setting, defaults included
        assert record.training["seed"] == record.seed == t.number  # the study's seed is 0
        assert record.training["threads"] == 1 and record.training["epochs"] == EPOCHS
        assert math.isclose(record.training["lr"], t.params["lr"]) and record.config["d_model"] == t.params["d_model"]


def test_the_plan_is_one_attribute_and_the_per_field_layout_still_reads(swept):
    trials, _ = swept
    for t in (t for t in trials.values() if outcome(t) == "complete"):
        assert keys.PLAN in t.user_attrs and keys.CONFIG not in t.user_attrs  # one write per trial, not six
        record = record_of(t)
        # the layout lwnas wrote before the `plan` attribute: each planned field an attribute of its own
        per_field = {k: v for k, v in t.user_attrs.items() if k != keys.PLAN} | t.user_attrs[keys.PLAN]
        old = optuna.trial.create_trial(
            params=t.params,
            distributions=t.distributions,
            values=t.values,
            user_attrs=per_field,
            constraints=t.constraints,
        )
        assert record_of(old).for_worker() | {"number": t.number} == record.for_worker() and record.planned


def test_epochs_are_stored_one_key_each(swept):
    trials, _ = swept
    for t in (t for t in trials.values() if outcome(t) == "complete"):
        assert keys.EPOCHS not in t.user_attrs  # the old layout rewrote the whole list every epoch
        assert sorted(k for k in t.user_attrs if k.startswith(keys.EPOCH_PREFIX)) == ["epoch:0001", "epoch:0002"]
        assert [e["epoch"] for e in record_of(t).epochs] == [1, 2]
        assert t.values[0] == record_of(t).epochs[-1]["val_accuracy"]


# what a worker must never call again: the driver resolved, adapted and costed the point already
SECOND_DERIVATION = [
    ("searchspace.study", "study_from_dict"),
    ("searchspace.study", "load_study"),
    ("searchspace.space", "SearchSpace.resolve"),
    ("trainers.cost", "cost"),
    ("trainers.loop", "cost"),
    ("trainers.loop", "adapt_config"),
    ("trainers.tasks.base", "adapt_config"),
    ("trainers.tasks", "adapt_config"),
]


def forbid_second_derivation(monkeypatch) -> list[str]:
    calls: list[str] = []

    def refuse(name):
        def call(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"the worker called {name}: a second derivation of its trial")

        return call

    for module, name in SECOND_DERIVATION:
        owner = importlib.import_module(module)  # the module itself: `trainers.cost` is also a function's name
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        monkeypatch.setattr(owner, attr, refuse(f"{module}.{name}"))
    return calls


def test_the_worker_trains_its_record_without_a_second_resolution(swept, monkeypatch):
    import torch

    from searchspace import ArchConfig
    from trainers.loop import train
    from trainers.tasks import resolve_task
    from tuners.driver.trainable import BUILT, train_record

    trials, _ = swept
    trial = max((t for t in trials.values() if outcome(t) == "complete"), key=lambda t: t.number)
    record = record_of(trial)
    threads = torch.get_num_threads()
    calls = forbid_second_derivation(monkeypatch)
    reports: list[dict] = []
    try:
        train_record(TrialRecord.from_worker(record.for_worker()), reports.append)
    finally:
        torch.set_num_threads(threads)
    assert not calls and [r["epoch"] for r in reports] == [1, 2], reports
    assert reports[-1]["val_accuracy"] == trial.values[0]  # the sweep's value, reproduced from the record alone
    assert all(r["params"] == record.costs["params"] for r in reports)
    built = keys.plain(reports[0][BUILT])
    assert (built["config"], built["training"], built["params"]) == (
        record.config,
        record.training,
        record.costs["params"],
    )
    # the guard works: the path that does adapt and cost (`lwnas train`) trips it
    with pytest.raises(AssertionError, match="second derivation"):
        train(ArchConfig.from_dict(record.config), resolve_task("digits"), progress=False)
    assert calls


def test_a_record_missing_a_planned_field_is_refused():
    planned = TrialRecord(number=1, config={"family": "encoder"}, training={}, task="digits", seed=1).for_worker()
    del planned["costs"]
    with pytest.raises(ValueError, match="needs costs"):
        TrialRecord.from_worker(planned)


def test_a_record_read_from_parts_is_the_dataclass_built_field_by_field():
    """``record_from`` sets the fields in one go, bypassing the frozen dataclass's ``__init__``: it must set
    exactly the dataclass's fields, equal to the record ``__init__`` builds, and stay frozen."""
    from dataclasses import FrozenInstanceError, fields

    from tuners.store.record import RECORD_FIELDS, record_from

    attrs = {
        keys.PLAN: {keys.CONFIG: {"d_model": 32}, keys.TRAINING: {"lr": 0.01}, keys.TASK: "digits", keys.SEED: 3},
        keys.OUTCOME: "complete",
        keys.HOST: "h",
        keys.epoch_key(1): {"epoch": 1, "val_accuracy": 0.5},
    }
    read = record_from(4, "COMPLETE", (0.5, 10.0), {"d_model": 32}, attrs, {"params": -1.0}, "s", "c")
    built = TrialRecord(
        number=4,
        config={"d_model": 32},
        training={"lr": 0.01},
        task="digits",
        seed=3,
        state="COMPLETE",
        outcome="complete",
        values=[0.5, 10.0],
        params={"d_model": 32},
        constraints={"params": -1.0},
        epochs=[{"epoch": 1, "val_accuracy": 0.5}],
        host="h",
        datetime_start="s",
        datetime_complete="c",
    )
    assert tuple(vars(read)) == RECORD_FIELDS == tuple(f.name for f in fields(TrialRecord)) == tuple(vars(built))
    assert read == built
    with pytest.raises(FrozenInstanceError):
        read.number = 5  # type: ignore[misc]


# ---- a study written by an earlier lwnas -------------------------------------------------------------
OLD_EPOCHS = [
    {"epoch": 1, "val_accuracy": 0.25, "train_loss": 2.1, "wall_time": 1.0},
    {"epoch": 2, "val_accuracy": 0.5, "train_loss": 1.4, "wall_time": 2.0},
]


def write_old_study(url: str, name: str) -> None:
    """A study as lwnas wrote it before trial records: sampled training only, epochs as one list."""
    from searchspace.study import study_from_dict
    from tuners.planning.check import make_task, task_family
    from tuners.planning.costs import StaticCosts

    spec = {**yaml.safe_load(TINY_STUDY.format(name=name, trials=2, epochs=2)), "name": name}
    study = study_from_dict(spec, task_family=task_family)
    static = StaticCosts(study, make_task(study))
    ot = optuna.create_study(study_name=name, storage=url, directions=["maximize", "minimize"])
    with warnings.catch_warnings():  # experimental in Optuna, and what lwnas sweep calls too
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        ot.set_metric_names(["accuracy", "params"])
    for key, value in {
        keys.STUDY_SPEC: spec,
        keys.STUDY_OBJECTIVES: [["accuracy", "maximize"], ["params", "minimize"]],
        keys.STUDY_VERSION: "0.1.0",
    }.items():
        ot.set_user_attr(key, value)
    for d_model in (16, 32):
        params = {"d_model": d_model, "lr": 0.003}
        config = static.adapt(study.space.resolve(params).config)
        costs = static.evaluate(config).costs
        ot.add_trial(
            optuna.trial.create_trial(
                params=params,
                values=[OLD_EPOCHS[-1]["val_accuracy"], costs["params"]],
                distributions={
                    "d_model": optuna.distributions.CategoricalDistribution([16, 32]),
                    "lr": optuna.distributions.FloatDistribution(1e-3, 5e-3, log=True),
                },
                user_attrs=keys.plain(
                    {
                        keys.CONFIG: config.to_dict(),
                        keys.TRAINING: {"lr": 0.003},
                        keys.COSTS: costs,
                        keys.EPOCHS: OLD_EPOCHS,
                        keys.OUTCOME: "complete",
                        keys.BUDGET_USED: 2,
                        keys.WALL_TIME: 2.0,
                        keys.HOST: "old-host",
                    }
                ),
            )
        )


def test_a_study_written_the_old_way_still_reads(tmp_path):
    from dashboards.data import TrialCache

    url = f"sqlite:///{tmp_path / 'old.db'}"
    write_old_study(url, "old")
    records = TrialCache(url, "old").load().records
    assert [r.epochs for r in records] == [OLD_EPOCHS, OLD_EPOCHS] and not any(r.planned for r in records)

    status = lwnas(tmp_path, "status", "old", "--storage", url, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["outcomes"] == {"complete": 2}

    exported = lwnas(tmp_path, "export", "old", "--trials", "1", "--storage", url, "-o", tmp_path / "out")
    assert exported.returncode == 0, exported.stderr
    meta = yaml.safe_load((tmp_path / "out" / "old-trial-0001.yaml").read_text())
    # completed from the recorded study as its driver did: seed = study seed + number, threads, budget epochs
    assert meta["task"] == "digits" and meta["training"] == {
        "threads": 1,
        "batch_size": 64,
        "lr": 0.003,
        "epochs": 2,
        "seed": 1,
    }


def test_the_dashboard_tabulates_the_records_a_sweep_stored(swept):
    from dashboards.data import StudyData
    from searchspace.study import Objective

    trials, _ = swept
    records = [record_of(t) for t in trials.values()]
    objectives = (Objective("accuracy", "maximize"), Objective("params", "minimize"))
    data = StudyData(NAME, objectives, {}, None, records)
    frame = data.frame  # a knob named like one of the table's own columns would duplicate it
    assert frame.columns.is_unique, list(frame.columns)
    assert list(frame["epochs"]) == [len(r.epochs) for r in records]
    assert [len(r.epochs) for r in records if r.outcome == "complete"] == [EPOCHS] * TRIALS
    assert {"d_model", "lr", "batch_size"} <= set(data.knobs) and "seed" not in data.knobs


def test_the_dashboard_sample_writes_the_record_a_sweep_plans():
    from dashboards.sample import seed_study
    from searchspace.knobs import TRAINING
    from tuners.export.configs import export_text

    study = seed_study(optuna.storages.InMemoryStorage(), trials=12, seed=0)
    for trial in study.trials:
        record = record_of(trial)
        assert record.planned and record.task == "digits" and record.seed == record.training["seed"] == trial.number
        assert set(record.training) == {k.name for k in TRAINING}  # every setting, as the searcher stores it
        assert record.training["lr"] == trial.params["lr"] and record.training["batch_size"] == 64
        exported = yaml.safe_load(export_text(study, record))
        assert exported["training"] == record.training and exported["task"] == "digits"
