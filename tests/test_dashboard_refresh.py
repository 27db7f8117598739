"""A refreshed dashboard table (``StudyData.frame`` spliced from the previous load's) equals one built whole."""

from __future__ import annotations

import optuna
import pandas as pd

from dashboards.data import TrialCache
from dashboards.sample import make_trial, seed_study
from tuners import storage as keys

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
    study.add_trial(optuna.trial.create_trial(params=repeat.params, distributions=repeat.distributions,
                                              values=repeat.values, constraints={"params": -1.0},
                                              user_attrs={**repeat.user_attrs, keys.SEED_OF: 5}))
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
    assert (waiting.frame.dtypes[waiting.knobs] == object).all()  # all text while the trials wait

    for n, built in ((7, "spliced"), (8, "whole")):  # trial 21 still waits after 20 is planned: text stays
        running = study.ask()
        running.set_user_attr(keys.PLAN, study.trials[n].user_attrs[keys.PLAN])  # as the driver plans it
        data = cache.load()
        pd.testing.assert_frame_equal(data.frame, whole(url, "queue"))
        assert data.frame_built == built
    assert (data.frame.dtypes[data.knobs] != object).any()  # numbers again


def test_a_changed_column_type_builds_the_whole_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'mixed.db'}"
    study = seed_study(url, name="mixed", trials=10)
    cache = TrialCache(url, "mixed")
    _ = cache.load().frame
    trial = study.trials[2]
    plan = trial.user_attrs[keys.PLAN]
    plan = {**plan, keys.CONFIG: {**plan[keys.CONFIG], "heads": "many"}}  # text where every other trial has a number
    study.add_trial(optuna.trial.create_trial(params=trial.params, distributions=trial.distributions,
                                              values=trial.values, user_attrs={**trial.user_attrs, keys.PLAN: plan}))
    data = cache.load()
    pd.testing.assert_frame_equal(data.frame, whole(url, "mixed"))
    assert data.frame_built == "whole"
