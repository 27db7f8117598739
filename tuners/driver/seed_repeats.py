"""The driver's side of ``budget: {front_seeds: N}``: after each trial, enqueue the seed repeats the
front needs (``tuners.fronts.seeds.repeats_needed``) through Optuna's public ``enqueue_trial``; the study's
searcher asks for them like any other point, so they are scheduled, recorded and counted as trials."""

from __future__ import annotations

from typing import Any

import optuna
from ray.tune.search import Searcher

from tuners.fronts.seeds import repeats_needed
from tuners.store import keys


class SeedRepeats(Searcher):
    """Passes everything to ``searcher``; after each completed trial, queues the front's seed repeats.

    Args:
        searcher: the study's searcher (it asks Optuna, which hands out queued trials first).
        ot_study: the Optuna study the sweep records into.
        front_seeds: the study's ``budget.front_seeds``.
    """

    def __init__(self, searcher: Searcher, ot_study: optuna.Study, front_seeds: int):
        super().__init__(metric=None, mode=None)
        self.searcher, self.ot_study, self.front_seeds = searcher, ot_study, front_seeds
        self.queued = 0

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "ot_study"}  # database connections stay out

    def set_search_properties(self, metric: Any, mode: Any, config: dict, **spec: Any) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    # Ray declares dict | None, but its searchers also return Searcher.FINISHED (a str) to end the run
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:  # type: ignore[override]
        return self.searcher.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)
        for parent, params in repeats_needed(self.ot_study, self.front_seeds):
            self.ot_study.enqueue_trial(params, user_attrs={keys.SEED_OF: parent})
            self.queued += 1

    # Ray saves a wrapper's state apart from the searcher it wraps (as it does ConcurrencyLimiter's)
    def get_state(self) -> dict[str, Any]:
        return {"queued": self.queued}

    def set_state(self, state: dict[str, Any]) -> None:
        self.queued = state["queued"]

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)
