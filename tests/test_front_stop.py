"""The front-stopping rule (tuners.driver.front_stop.front_stalled) on hand-made trial records."""

from __future__ import annotations

import datetime as dt

from searchspace.study import Objective, StopWhen
from tuners.driver.front_stop import counted_in_order, front_stalled
from tuners.store.record import TrialRecord

OBJECTIVES = [Objective("accuracy", "maximize"), Objective("params", "minimize")]
T0 = dt.datetime(2026, 1, 1)


def record(number: int, values, outcome: str = "complete", finished: int | None = None) -> TrialRecord:
    """A trial record; ``finished``: seconds after T0 it finished (default: its number)."""
    state = {"complete": "COMPLETE", "pruned": "PRUNED", "failed": "FAIL", "infeasible": "COMPLETE"}[outcome]
    return TrialRecord(
        number=number,
        state=state,
        outcome=outcome,
        values=values,
        params={},
        config={},
        training={},
        costs={},
        constraints={},
        datetime_complete=T0 + dt.timedelta(seconds=number if finished is None else finished),
    )


def test_a_front_that_keeps_growing_never_stalls():
    records = [record(i, [0.1 * (i + 1), 100.0]) for i in range(8)]  # each trial beats the last
    assert front_stalled(records, OBJECTIVES, StopWhen(window=3, tolerance=0.001)) is None


def test_a_front_that_stopped_moving_stalls_once_the_window_is_full():
    records = [record(0, [0.5, 100.0]), record(1, [0.8, 50.0])]
    records += [record(i, [0.3, 120.0]) for i in range(2, 5)]  # dominated: the front does not move
    rule = StopWhen(window=3, tolerance=0.001)
    assert front_stalled(records[:4], OBJECTIVES, rule) is None  # the window reaches trial 1, which moved it
    reason = front_stalled(records, OBJECTIVES, rule)
    assert reason is not None and "over the last 3 trials" in reason


def test_the_tolerance_is_a_fraction_of_the_hypervolume():
    records = [record(0, [0.80, 100.0]), record(1, [0.81, 100.0]), record(2, [0.81, 100.0])]
    # trial 1 raised the hypervolume by 1/81 of it (accuracy 0.80 -> 0.81 at the same params)
    assert front_stalled(records, OBJECTIVES, StopWhen(window=2, tolerance=0.01)) is None
    assert front_stalled(records, OBJECTIVES, StopWhen(window=2, tolerance=0.02)) is not None


def test_failed_and_pruned_trials_fill_the_window_and_infeasible_ones_do_not():
    base = [record(0, [0.5, 100.0])]
    rule = StopWhen(window=2, tolerance=0.0)
    assert front_stalled(base + [record(1, None, "failed"), record(2, None, "pruned")], OBJECTIVES, rule)
    assert front_stalled(base + [record(1, [float("-inf"), 10.0], "infeasible")], OBJECTIVES, rule) is None


def test_the_window_counts_trials_in_the_order_they_finished():
    early_best = record(3, [0.9, 10.0], finished=1)  # proposed last, finished first
    records = [
        record(0, [0.5, 100.0], finished=0),
        early_best,
        record(1, [0.4, 100.0], finished=5),
        record(2, [0.4, 100.0], finished=6),
    ]
    assert [r.number for r in counted_in_order(records)] == [0, 3, 1, 2]
    assert front_stalled(records, OBJECTIVES, StopWhen(window=2, tolerance=0.0)) is not None


def test_after_a_budget_raise_the_window_starts_again():
    records = [record(i, [0.5, 100.0]) for i in range(6)]
    rule = StopWhen(window=3, tolerance=0.0)
    assert front_stalled(records, OBJECTIVES, rule, since=0) is not None
    assert front_stalled(records, OBJECTIVES, rule, since=4) is None  # 2 trials since the raise
    assert front_stalled(records, OBJECTIVES, rule, since=3) is not None
