"""A refreshed dashboard table (``StudyData.frame`` spliced from the previous load's) equals one built whole, and the
candidates, seed groups and fronts a refresh updates (``dashboards/live.py``) equal ones computed from scratch."""

from __future__ import annotations

import dataclasses

import numpy as np
import optuna
import pandas as pd

from dashboards.data import TrialCache
from dashboards.sample import make_trial, seed_study
from tuners.fronts.objectives import front_candidates, nondominated_records
from tuners.store import keys

optuna.logging.set_verbosity(optuna.logging.WARNING)


def whole(url: str, name: str) -> pd.DataFrame:
    data = TrialCache(url, name).load()
    frame = data.frame
    assert data.frame_built == "whole"
    return frame


def test_spliced_table_equals_the_whole_table(tmp_path):
    import numpy as np

    url = f"sqlite:///{tmp_path / 'live.db'}"
    study = seed_study(url, name="live", trials=30)
    cache = TrialCache(url, "live")
    _ = cache.load().frame
    planned = study.trials[7]  # a trial as the driver starts it: params and planned record, no values or end time
    study.enqueue_trial(planned.params)
    running = study.ask()
    running.set_user_attr(keys.PLAN, planned.user_attrs[keys.PLAN])
    data = cache.load()
    pd.testing.assert_frame_equal(data.frame, whole(url, "live"))
    assert data.frame_built == "spliced"

    study.tell(running, [0.61, 1234.0])  # finishes
    repeat = study.trials[5]  # a seed repeat of trial 5: its seeds change from 1 to 2
    study.add_trial(
        optuna.trial.create_trial(
            params=repeat.params,
            distributions=repeat.distributions,
            values=repeat.values,
            constraints={"params": -1.0},
            user_attrs={**repeat.user_attrs, keys.SEED_OF: 5},
        )
    )
    study.add_trial(make_trial(32, ("accuracy", "params"), np.random.default_rng(1), repeat.datetime_start))
    cache.load()  # a load whose table the page never shows: the next one splices across both
    study.add_trial(make_trial(33, ("accuracy", "params"), np.random.default_rng(2), repeat.datetime_start))
    data = cache.load()
    pd.testing.assert_frame_equal(data.frame, whole(url, "live"))
    assert data.frame_built == "spliced"
    assert data.frame.set_index("trial").loc[[5, 31], "seeds"].tolist() == [2, 2]


def test_waiting_trials_planned_later(tmp_path):
    # a WAITING trial (enqueued: seed config, seed repeat, re-queued) has no config yet, so its empty cells
    # make every knob column text; once the driver has planned every such trial the whole table has numbers
    # again. madds among the objectives keeps the cost columns as they are (with accuracy and params alone
    # the madds cost column appears on planning and rebuilds the table, which hid the stale text)
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    study = seed_study(url, name="queue", trials=20, objectives=("accuracy", "params", "madds"))
    cache = TrialCache(url, "queue")
    for n in (7, 8):
        study.enqueue_trial(study.trials[n].params)
    waiting = cache.load()
    # all text while the trials wait
    assert all(dtype is np.dtype(object) for dtype in waiting.frame.dtypes[waiting.knobs])

    for n, built in ((7, "spliced"), (8, "whole")):  # trial 21 still waits after 20 is planned: text stays
        running = study.ask()
        running.set_user_attr(keys.PLAN, study.trials[n].user_attrs[keys.PLAN])  # as the driver plans it
        data = cache.load()
        pd.testing.assert_frame_equal(data.frame, whole(url, "queue"))
        assert data.frame_built == built
        assert data.knobs == dataclasses.replace(data, kinds=None).knobs  # the kept kinds, as from the records
    assert any(dtype is not np.dtype(object) for dtype in data.frame.dtypes[data.knobs])  # numbers again


def test_a_changed_column_type_builds_the_whole_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'mixed.db'}"
    study = seed_study(url, name="mixed", trials=10)
    cache = TrialCache(url, "mixed")
    _ = cache.load().frame
    trial = study.trials[2]
    plan = trial.user_attrs[keys.PLAN]
    plan = {**plan, keys.CONFIG: {**plan[keys.CONFIG], "heads": "many"}}  # text where every other trial has a number
    study.add_trial(
        optuna.trial.create_trial(
            params=trial.params,
            distributions=trial.distributions,
            values=trial.values,
            user_attrs={**trial.user_attrs, keys.PLAN: plan},
        )
    )
    data = cache.load()
    pd.testing.assert_frame_equal(data.frame, whole(url, "mixed"))
    assert data.frame_built == "whole"


def from_scratch(url: str, name: str):
    """The study loaded now, its candidates, seed groups and fronts computed over all its records."""
    # nothing kept from earlier loads: knob order, candidates, groups and fronts from the records alone
    return dataclasses.replace(TrialCache(url, name).load(), live=None, kinds=None)


def assert_same_sets(data, scratch, pairs):
    assert [r.number for r in data.candidates] == [r.number for r in scratch.candidates]
    assert data.candidates == scratch.candidates
    assert data.seed_groups == scratch.seed_groups  # parents, members, seed means and stds
    assert data.seeds == scratch.seeds
    assert data.knobs == scratch.knobs
    for metrics in (None, *pairs):
        assert [r.number for r in data.front(metrics)] == [r.number for r in scratch.front(metrics)]
    pd.testing.assert_frame_equal(data.frame, scratch.frame)


def test_refreshed_groups_and_fronts_equal_a_build_from_scratch(tmp_path):
    url = f"sqlite:///{tmp_path / 'fronts.db'}"
    objectives = ("accuracy", "params", "madds")
    study = seed_study(url, name="fronts", trials=40, objectives=objectives)
    pairs = (["accuracy", "params"], ["params", "madds"])
    cache = TrialCache(url, "fronts")
    first = cache.load()
    assert_same_sets(first, from_scratch(url, "fronts"), pairs)

    def add(number: int, values: list[float], **attrs) -> None:
        like = study.trials[number]
        study.add_trial(
            optuna.trial.create_trial(
                params=like.params,
                distributions=like.distributions,
                values=values,
                constraints={"params": -1.0},
                user_attrs={**like.user_attrs, **attrs},
            )
        )

    best = max(first.candidates, key=lambda r: r.values[0])
    grouped = first.candidates[0].number
    planned = study.trials[7]
    study.enqueue_trial(planned.params)
    running = study.ask()  # seen running, then finishing on the front
    running.set_user_attr(keys.PLAN, planned.user_attrs[keys.PLAN])
    add(grouped, first.by_number[grouped].values, **{keys.SEED_OF: grouped})  # a repeat: that group has 2 seeds
    steps = [
        lambda: study.tell(running, [best.values[0] + 0.01, 1.0, 1.0]),  # dominates the old front: it shrinks
        lambda: add(grouped, [v * 0.5 for v in first.by_number[grouped].values], **{keys.SEED_OF: grouped}),
        lambda: add(best.number, [0.0, 1e12, 1e12]),  # a candidate dominated by everything: no front change
        lambda: None,  # nothing new
    ]
    data = cache.load()
    assert_same_sets(data, from_scratch(url, "fronts"), pairs)
    assert data.seeds[grouped] == 2
    unseen = None
    for i, step in enumerate(steps):
        step()
        data = cache.load()
        if i == 1:
            unseen = data  # a load whose fronts are first asked for after newer loads computed theirs
            continue
        assert_same_sets(data, from_scratch(url, "fronts"), pairs)
    assert [r.number for r in data.front()][:1] == [running.number]  # the finished trial leads the front
    assert data.seeds[grouped] == 3
    assert [r.number for r in unseen.front()] == [
        r.number for r in nondominated_records(front_candidates(unseen.records), unseen.objectives, [0, 1, 2])
    ]


def test_a_first_load_from_columns_equals_the_one_built_from_records(tmp_path):
    """A first load is read as columns (``TrialStore.columns_since``): its table, knobs, candidates, seeds and
    fronts must equal those built from its records, the way a refresh builds them, and its records equal what
    ``records_since`` reads; a refresh then takes its trials in (``TrialCache._settle``)."""
    from dashboards.data import RecordsByNumber
    from tuners.store.columns import LazyRecords
    from tuners.store.connection import open_storage
    from tuners.store.trial_store import TrialStore

    url = f"sqlite:///{tmp_path / 'columns.db'}"
    objectives = ("accuracy", "params", "madds")
    study = seed_study(url, name="columns", trials=40, objectives=objectives)
    first = study.trials[3]
    study.add_trial(  # a seed repeat: its point has 2 seeds
        optuna.trial.create_trial(
            params=first.params,
            distributions=first.distributions,
            values=first.values,
            constraints={"params": -1.0},
            user_attrs={**first.user_attrs, keys.SEED_OF: 3},
        )
    )
    planned = study.trials[7]
    study.enqueue_trial(planned.params)
    running = study.ask()
    running.set_user_attr(keys.PLAN, planned.user_attrs[keys.PLAN])

    cache = TrialCache(url, "columns")
    data = cache.load()
    assert isinstance(data.records, LazyRecords) and isinstance(data.by_number, RecordsByNumber)
    records = [read.record for read in TrialStore.of(open_storage(url), "columns").records_since()]
    built = dataclasses.replace(
        data, records=records, columns=None, live=None, kinds=None, knob_rows={}, _knob_cache={}, _fronts={}
    )
    pd.testing.assert_frame_equal(data.frame, built.frame)
    assert data.knobs == built.knobs and data.running == built.running == 1
    assert data.candidates == built.candidates and data.seeds == built.seeds and data.seeds[3] == 2
    for metrics in (None, ["accuracy", "params"], ["params", "madds"]):
        assert data.front(metrics) == built.front(metrics)
    assert list(data.records) == records and dict(data.by_number) == built.by_number
    assert data.knob_values("layer_sharing") == built.knob_values("layer_sharing")

    study.tell(running, [0.99, 1.0, 1.0])  # on every front
    refreshed = cache.load()
    _ = refreshed.frame
    assert refreshed.frame_built == "spliced"
    assert_same_sets(refreshed, from_scratch(url, "columns"), (["accuracy", "params"],))
    assert refreshed.front()[0].number == running.number
