"""``budget: {stop_when: {window: W, tolerance: T}}``: end a sweep once its front stops moving.

The rule: take the trials that used a place in the budget (complete, pruned, failed) in the order
they finished; the sweep ends once the hypervolume of all of them exceeds that of all but the last
W by at most T times the former. Both are measured from one reference point (the current trials'),
so the comparison is of fronts, not of reference points. After ``lwnas resume NAME --trials N``
raised the budget, W trials must finish after the raise before the rule may end the sweep again.

``StopWhenFrontStalls`` is a Ray Tune ``Searcher`` wrapped around the study's searcher (as Ray's
own ``ConcurrencyLimiter`` wraps one): once the rule holds it answers ``Searcher.FINISHED``, so no
new trial starts and the running ones finish and are recorded as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import optuna
from ray.tune.search import Searcher

from searchspace.study import Objective, StopWhen
from tuners.fronts.objectives import front_hypervolume, front_reference_point, study_objectives
from tuners.store.outcomes import TERMINAL_OUTCOMES
from tuners.store.record import TrialRecord
from tuners.store.trial_store import TrialStore


def counted_in_order(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Trials that used a place in the budget, in the order they finished."""
    counted = [r for r in records if r.outcome in TERMINAL_OUTCOMES]
    return sorted(counted, key=lambda r: (r.datetime_complete or datetime.max, r.number))


def front_stalled(
    records: Sequence[TrialRecord], objectives: Sequence[Objective], rule: StopWhen, since: int = 0
) -> str | None:
    """Why the sweep should end (the rule holds), or None. ``since``: trials counted when the budget was
    last raised (the window starts there)."""
    counted = counted_in_order(records)
    if len(counted) - since < rule.window or len(counted) <= rule.window:
        return None
    ref = front_reference_point(counted, objectives)
    now = front_hypervolume(counted, objectives, ref)
    before = front_hypervolume(counted[: -rule.window], objectives, ref)
    if now - before > rule.tolerance * now:
        return None
    return (
        f"the front's hypervolume grew by {now - before:.6g} (from {before:.6g} to {now:.6g}; the tolerance is "
        f"{rule.tolerance:g} of it) over the last {rule.window} trials"
    )


def stalled_in_storage(ot_study: optuna.Study, store: TrialStore, rule: StopWhen, since: int) -> str | None:
    """``front_stalled`` over the trials stored for ``ot_study`` (read now from its ``store``)."""
    records = store.records()
    return front_stalled(records, study_objectives(ot_study), rule, since)


class StopWhenFrontStalls(Searcher):
    """Passes everything to ``searcher`` and finishes the search once the front stopped moving.

    Args:
        searcher: the study's searcher (it records the trials; this one only reads them back).
        ot_study: the Optuna study the sweep records into.
        store: its trial store (the trials are read back through it).
        rule: the study's ``budget.stop_when``.
        since: trials counted when the budget was last raised.
    """

    def __init__(self, searcher: Searcher, ot_study: optuna.Study, store: TrialStore, rule: StopWhen, since: int = 0):
        super().__init__(metric=None, mode=None)
        self.searcher, self.ot_study, self.store, self.rule, self.since = searcher, ot_study, store, rule, since
        self.reason: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # database connections stay out
        return {k: v for k, v in self.__dict__.items() if k not in ("ot_study", "store")}

    def set_search_properties(self, metric: Any, mode: Any, config: dict, **spec: Any) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    # Ray annotates suggest as dict | None, yet its own protocol answers Searcher.FINISHED (a str) to end a search
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:  # type: ignore[override]
        if self.reason is not None:
            return Searcher.FINISHED
        return self.searcher.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)
        if self.reason is None:
            self.reason = stalled_in_storage(self.ot_study, self.store, self.rule, self.since)

    # Ray saves a wrapper's state apart from the searcher it wraps (as it does ConcurrencyLimiter's)
    def get_state(self) -> dict[str, Any]:
        return {"reason": self.reason, "since": self.since}

    def set_state(self, state: dict[str, Any]) -> None:
        self.reason, self.since = state["reason"], state["since"]

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)
