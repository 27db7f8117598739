"""``tuner: {sampler: grid, grid_seeds: N}``: a sweep that trains every distinct point of its space, each
with N seeds (what a tabular benchmark is built from: ``tuners/simulate/table_export.py``).

``GridSampler`` is an Optuna sampler that hands each new trial the next point of the grid
(``searchspace.grid.grid_points``) no trial of the study holds yet, so a resumed sweep goes on where its
last driver stopped. ``GridSeeds`` wraps the study's Ray searcher: right after a new point is proposed it
enqueues the point's N - 1 repeats through Optuna's public ``enqueue_trial`` (user attribute ``seed_of``
naming the first trial, as ``budget: {front_seeds: N}`` does; a trial's seed derives from its number), so
they are asked next and every point finishes with its seeds together; once the grid is spent and nothing
waits, it ends the Tune run. A sweep's trial budget is the grid's size x N (``grid_trials``) unless
``budget.trials`` or ``--trials`` is smaller (``lwnas resume --trials`` grows it again, up to the whole grid).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState
from ray.tune.search import Searcher

from searchspace.grid import grid_points
from searchspace.study import Study
from tuners.driver.trainable import NUMBER
from tuners.store import keys
from tuners.store.outcomes import Outcome

FIXED_PARAMS = "fixed_params"  # where Optuna's enqueue_trial keeps a waiting trial's params (its system attrs)


def point_key(params: Mapping[str, Any]) -> str:
    """One string per point (the params sorted by knob; JSON keeps true and 1 apart)."""
    return json.dumps(sorted(params.items()), separators=(",", ":"))


def grid_trials(study: Study) -> int:
    """Trials a whole grid sweep of ``study`` trains: every point of its grid, ``grid_seeds`` times."""
    return sum(1 for _ in grid_points(study.space)) * study.tuner.grid_seeds


def trial_params(trial: FrozenTrial) -> dict[str, Any]:
    """The params a trial evaluates: its suggested ones, or those it waits with (an enqueued trial)."""
    fixed = trial.system_attrs.get(FIXED_PARAMS)
    return dict(fixed) if isinstance(fixed, Mapping) and not trial.params else dict(trial.params)


class GridSampler(optuna.samplers.BaseSampler):
    """Gives each new trial the next grid point of ``study.space`` that no trial of the Optuna study holds.

    Trials that wait with params of their own (seed repeats, re-queued trials) keep them. ``assigned`` maps
    each trial this sampler gave a point to that point's params (``GridSeeds`` takes them out).
    """

    def __init__(self, study: Study):
        self._points = list(grid_points(study.space))
        self._cursor = 0  # every point before it is taken
        self._taken: set[str] | None = None  # keys of the points trials hold, read from storage once
        self._current: dict[int, dict[str, Any]] = {}  # trial number -> the point it was given
        self.assigned: dict[int, dict[str, Any]] = {}

    @property
    def size(self) -> int:
        return len(self._points)

    def has_next(self, study: optuna.Study) -> bool:
        """Whether a point is left that no trial of ``study`` holds."""
        if self._taken is None:
            self._taken = {point_key(trial_params(t)) for t in study.get_trials(deepcopy=False)}
        while self._cursor < len(self._points) and point_key(self._points[self._cursor]) in self._taken:
            self._cursor += 1
        return self._cursor < len(self._points)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if trial.system_attrs.get(FIXED_PARAMS):
            return  # a repeat or a re-queued trial: it waits with its point
        if not self.has_next(study):  # GridSeeds asks only while a point is left
            raise GridExhausted(f"trial {trial.number}: every point of the grid has its trials")
        point = self._points[self._cursor]
        assert self._taken is not None  # has_next read them
        self._taken.add(point_key(point))
        self._current[trial.number] = point
        self.assigned[trial.number] = point

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return {}

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        point = self._current.get(trial.number)
        if point is None or param_name not in point:
            raise GridExhausted(f"trial {trial.number} asks for {param_name!r}, which its grid point does not set")
        return point[param_name]

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self._current.pop(trial.number, None)


class GridExhausted(RuntimeError):
    """A trial asked the grid for a point it does not have (a bug: ``GridSeeds`` asks only while one is left)."""


class GridSeeds(Searcher):
    """Passes everything to ``searcher``; after each new grid point, enqueues its ``seeds - 1`` repeats.

    Args:
        searcher: the study's searcher (it asks Optuna, which hands out waiting trials first).
        ot_study: the Optuna study the sweep records into; its sampler is a ``GridSampler``.
        seeds: the study's ``tuner.grid_seeds``.
    """

    def __init__(self, searcher: Searcher, ot_study: optuna.Study, sampler: GridSampler, seeds: int):
        super().__init__(metric=None, mode=None)
        self.searcher, self.ot_study, self.sampler, self.seeds = searcher, ot_study, sampler, seeds
        self.queued = self._queue_missing_repeats()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("ot_study", "sampler")}  # connections stay out

    def _queue_missing_repeats(self) -> int:
        """Repeats a stopped driver never enqueued (it died between a point's first trial and its repeats)."""
        by_point: dict[str, list[FrozenTrial]] = {}
        for t in self.ot_study.get_trials(deepcopy=False):
            if t.user_attrs.get(keys.OUTCOME) != Outcome.INTERRUPTED:  # its re-queued copy stands for it
                by_point.setdefault(point_key(trial_params(t)), []).append(t)
        queued = 0
        for trials in by_point.values():
            parent = min(trials, key=lambda t: t.number)
            for _ in range(self.seeds - len(trials)):
                self._enqueue_repeat(parent.number, trial_params(parent))
                queued += 1
        return queued

    def _enqueue_repeat(self, parent: int, params: dict[str, Any]) -> None:
        self.ot_study.enqueue_trial(params, user_attrs={keys.SEED_OF: parent})

    def set_search_properties(self, metric: Any, mode: Any, config: dict, **spec: Any) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    # Ray declares dict | None, but its searchers also return Searcher.FINISHED (a str) to end the run
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:  # type: ignore[override]
        waiting = self.ot_study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if not waiting and not self.sampler.has_next(self.ot_study):
            return Searcher.FINISHED  # every point has its trials: the Tune run ends once they finish
        config = self.searcher.suggest(trial_id)
        if isinstance(config, dict):
            point = self.sampler.assigned.get(config[NUMBER])
            for _ in range(self.seeds - 1 if point is not None else 0):
                self._enqueue_repeat(config[NUMBER], point)  # type: ignore[arg-type]
                self.queued += 1
        self.sampler.assigned.clear()
        return config

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    # Ray saves a wrapper's state apart from the searcher it wraps (as it does ConcurrencyLimiter's)
    def get_state(self) -> dict[str, Any]:
        return {"queued": self.queued}

    def set_state(self, state: dict[str, Any]) -> None:
        self.queued = state["queued"]

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)
