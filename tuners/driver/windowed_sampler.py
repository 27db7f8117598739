"""A sampler that lets TPE or GP learn from the most recent trials only, so its ask cost stops growing.

Optuna's TPE and GP samplers read every finished trial of the study at each ask (TPE's p50 grew from
550 ms at 1k to 1,955 ms at 10k stored trials; GP's first ask took 162 s at 1k: docs/performance.md).
``WindowedSampler`` wraps one and hands it an in-memory *mirror* study instead of the real one: the
last ``window`` finished trials (COMPLETE or PRUNED, the states these samplers learn from), optionally
the current Pareto front of the feasible COMPLETE trials (``keep_front``: off by default, as it did not
raise the hypervolume reached in bench/sampler_window.py's runs, docs/performance.md), and the trials
this sampler has asked that are still running (GP reads those; lwnas builds TPE without a constant liar,
which would too). The mirror is updated incrementally at each ask from one read of the real study
(``Study.get_trials``), and rebuilt from the newest ``window`` finished trials once a quarter window more
have finished (trials cannot leave an Optuna study: the copy is spread over asks), so the inner sampler's
work is bounded by 1.25 windows, not by the study. The relative search space alone is inferred on the real
study (``infer_relative_search_space``: Optuna's intersection search space, incremental there), so it is
the one the sampler infers without a window.

Only Optuna's public API is used: the mirror is ``optuna.create_study`` on an ``InMemoryStorage`` this
class owns, filled through that storage's public methods; every sampler hook but ``infer_relative_search_space``
is delegated with the mirror study and the mirror's copy of the trial. What the inner samplers read is kept: params and
distributions, values, state, intermediate values (TPE ranks pruned trials by them) and system
attributes (constraints set with ``Trial.set_constraint``, the relative params TPE and GP write, an enqueued
trial's fixed params); user attributes are not copied (no sampler reads them).

Not mirrored: RUNNING trials another process asked (lwnas runs one driver per study); the sampler's
relative params are written to the mirror only, not to the real study's system attributes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from searchspace.study import Objective
from tuners.fronts.objectives import minimised, study_objectives, weakly_dominates

LEARNED_STATES = (TrialState.COMPLETE, TrialState.PRUNED)  # what TPE and GP read of finished trials
_UNUSED = optuna.samplers.RandomSampler(seed=0)  # the mirror study's own sampler: nothing is asked of it


class WindowedSampler(BaseSampler):
    """Delegate to ``inner`` with a view of the study bounded by ``window`` finished trials.

    Args:
        inner: the sampler that proposes (``TPESampler``, ``GPSampler``).
        window: how many of the most recently finished COMPLETE or PRUNED trials the inner sampler sees
            at least, once the study has them (at most ``window + window // 4``: see ``slack``).
        keep_front: also show it the current Pareto front of feasible COMPLETE trials (deduplicated
            against the window), so a long study does not forget its best points.
    """

    def __init__(self, inner: BaseSampler, window: int, keep_front: bool = False):
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"`window >= 1` must hold (an integer), but got {window=}")
        self.inner, self.window, self.keep_front = inner, window, keep_front
        # Trials cannot be removed from a study, so sliding the window means copying the kept trials into a
        # new mirror (Optuna's storage deep-copies each). Trimming back to `window` once `slack` more have
        # finished spreads that copy over `slack` asks; the inner sampler sees window to window + slack.
        self.slack = max(1, window // 4)
        self._recent: deque[FrozenTrial] = deque()  # the window, oldest first (slim copies)
        self._front: dict[int, FrozenTrial] = {}  # real trial number -> slim copy, feasible COMPLETE only
        self._low = 0  # every real trial numbered below this one is finished and taken in
        self._handled: set[int] = set()  # finished real trials at or above ``_low`` taken in already
        self._running: dict[int, int] = {}  # real trial number -> its mirror trial id (asked here, not told)
        # replaced by each rebuilt mirror; the mirror study itself exists from the first sync on
        self._storage = optuna.storages.InMemoryStorage()
        self._mirror: Study | None = None
        self._mirror_id = -1
        self._directions: list[StudyDirection] = []  # the mirror study's (as Optuna spells them)
        self._objectives: tuple[Objective, ...] = ()  # the front's (as lwnas compares them)

    # ---- what the inner sampler sees -----------------------------------------------------------
    @property
    def _mirror_study(self) -> Study:
        if self._mirror is None:  # every BaseSampler entry point syncs (and so builds the mirror) first
            raise RuntimeError("the window's mirror study is built at the first sync")
        return self._mirror

    def seen_trials(self) -> list[FrozenTrial]:
        """The mirror study's trials: what the inner sampler reads at its next call."""
        return self._mirror.get_trials(deepcopy=False) if self._mirror is not None else []

    def _mirror_trial(self, trial: FrozenTrial) -> FrozenTrial:
        """The mirror's copy of the real ``trial``, with the params the real trial has gained since."""
        trial_id = self._running[trial.number]
        mirrored = self._storage.get_trial(trial_id)
        for name, value in trial.params.items():
            if name not in mirrored.params:
                dist = trial.distributions[name]
                self._storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
        for key, value in trial.system_attrs.items():
            if key not in mirrored.system_attrs:
                self._storage.set_trial_system_attr(trial_id, key, value)
        return self._storage.get_trial(trial_id)

    # ---- BaseSampler ---------------------------------------------------------------------------
    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._sync(study)
        self._running[trial.number] = self._storage.create_new_trial(self._mirror_id)
        self._fresh_view()
        self.inner.before_trial(self._mirror_study, self._mirror_trial(trial))

    # The relative search space is inferred on the real study, not the mirror: TPE's and GP's
    # ``IntersectionSearchSpace`` caches by trial number and skips trials numbered below its cache, and
    # each rebuilt mirror numbers its trials from 0 again, so on a mirror it would stop folding in trials
    # (a conditional parameter that went missing would stay in the space). The real study's numbers only
    # grow, so its cache stays incremental, and the space is the one the sampler infers without a window.
    # It is a subset of the mirror's own intersection (the mirror's finished trials are copies of real
    # ones, with the same distributions), so every finished trial the mirror shows has each of its params.
    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.inner.infer_relative_search_space(study, trial)

    # A trial this sampler did not see asked (called outside Optuna's ``Study.ask``) has no mirror
    # copy: the inner sampler gets the real study then, unbounded but correct.
    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if trial.number not in self._running:
            return self.inner.sample_relative(study, trial, search_space)
        return self.inner.sample_relative(self._mirror_study, self._mirror_trial(trial), search_space)

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        if trial.number not in self._running:
            return self.inner.sample_independent(study, trial, param_name, param_distribution)
        return self.inner.sample_independent(
            self._mirror_study, self._mirror_trial(trial), param_name, param_distribution
        )

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        if trial.number not in self._running:  # asked by another sampler object: taken in by the next sync
            return
        trial_id = self._running[trial.number]
        self._fresh_view()
        self._mirror_trial(trial)
        for step, value in trial.intermediate_values.items():
            self._storage.set_trial_intermediate_value(trial_id, step, value)
        self.inner.after_trial(self._mirror_study, self._storage.get_trial(trial_id), state, values)
        self._finish_mirrored(trial.number, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()

    # ---- keeping the mirror ----------------------------------------------------------------------
    def _sync(self, study: Study) -> None:
        """Take in the real study's trials finished since the last call (one read of the study)."""
        if self._mirror is None:
            self._directions = list(study.directions)
            self._objectives = study_objectives(study)
            self._new_mirror()
        trials = study.get_trials(deepcopy=False)
        fresh = []
        for trial in trials[self._low :]:  # numbers are 0..n-1 in order: only the tail can be new
            if trial.number in self._running and not trial.state.is_finished():
                self._mirror_trial(trial)  # params suggested since (GP reads running trials' params)
                continue
            if trial.number in self._handled or not trial.state.is_finished():
                continue
            self._handled.add(trial.number)
            if trial.number in self._running:  # finished without a tell through this sampler
                self._finish_mirrored(trial.number, trial.state, trial.values, trial)
            elif trial.state in LEARNED_STATES:
                fresh.append(trial)
        while self._low in self._handled:
            self._handled.discard(self._low)
            self._low += 1
        self._take_in(fresh)

    def _take_in(self, finished: list[FrozenTrial]) -> None:
        """Add finished real trials to the window (and the front), rebuilding the mirror if it slides."""
        if self.keep_front:
            for trial in finished:
                self._update_front(trial)
        kept = [_slim(t, t.number) for t in finished[-self.window :]]  # older ones would be trimmed at once
        if len(self._recent) + len(kept) > self.window + self.slack:
            self._recent.extend(kept)
            self._trim()
        else:
            self._recent.extend(kept)
            for trial in kept:
                self._storage.create_new_trial(self._mirror_id, template_trial=trial)

    def _finish_mirrored(
        self, number: int, state: TrialState, values: Sequence[float] | None, real: FrozenTrial | None = None
    ) -> None:
        """End the mirror trial of real trial ``number``; a learned state joins the window."""
        trial_id = self._running.pop(number)
        if real is not None:  # copy what the trial gained since it was asked
            for name, value in real.params.items():
                if name not in self._storage.get_trial(trial_id).params:
                    dist = real.distributions[name]
                    self._storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
            for key, value in real.system_attrs.items():
                self._storage.set_trial_system_attr(trial_id, key, value)
            for step, value in real.intermediate_values.items():
                self._storage.set_trial_intermediate_value(trial_id, step, value)
        self._storage.set_trial_state_values(trial_id, state, list(values) if values is not None else None)
        self._handled.add(number)
        done = self._storage.get_trial(trial_id)
        if state not in LEARNED_STATES:
            return
        if self.keep_front:
            self._update_front(done, number)
        self._recent.append(_slim(done, number))  # already in the mirror: only the bookkeeping here
        if len(self._recent) > self.window + self.slack:
            self._trim()

    def _trim(self) -> None:
        """Keep the newest ``window`` finished trials, in a new mirror (trials cannot leave a study)."""
        while len(self._recent) > self.window:
            self._recent.popleft()
        self._rebuild()

    def _new_mirror(self) -> None:
        self._storage = optuna.storages.InMemoryStorage()
        self._mirror = optuna.create_study(storage=self._storage, directions=self._directions, sampler=_UNUSED)
        self._mirror_id = self._storage.get_study_id_from_name(self._mirror.study_name)

    def _fresh_view(self) -> None:
        """A new handle on the mirror study, as the real study's ``ask`` and ``tell`` start each: a
        ``Study`` keeps the trial list it read for the samplers until its own next ask or tell, which the
        mirror never gets."""
        self._mirror = optuna.load_study(
            study_name=self._mirror_study.study_name, storage=self._storage, sampler=_UNUSED
        )

    def _rebuild(self) -> None:
        """A new mirror holding the front, the window and the running trials, in that order.

        The mirror's trials are numbered from 0 again, which is why the relative search space is not
        inferred on it (``infer_relative_search_space``)."""
        old, running = self._storage, self._running
        in_window = {t.number for t in self._recent}  # slim copies carry the real trial numbers
        front = [t for n, t in sorted(self._front.items()) if n not in in_window]
        self._new_mirror()
        for trial in (*front, *self._recent):
            self._storage.create_new_trial(self._mirror_id, template_trial=trial)
        self._running = {
            number: self._storage.create_new_trial(self._mirror_id, template_trial=old.get_trial(tid))
            for number, tid in running.items()
        }

    def _update_front(self, trial: FrozenTrial, number: int | None = None) -> None:
        """Keep the non-dominated feasible COMPLETE trials (by real trial number)."""
        if trial.state != TrialState.COMPLETE or any(v > 0 for v in trial.constraints.values()):
            return
        point = minimised(trial.values, self._objectives)
        for member in self._front.values():
            if weakly_dominates(minimised(member.values, self._objectives), point):
                return
        self._front = {
            n: m for n, m in self._front.items() if not weakly_dominates(point, minimised(m.values, self._objectives))
        }
        number = trial.number if number is None else number
        self._front[number] = _slim(trial, number)


def _slim(trial: FrozenTrial, number: int) -> FrozenTrial:
    """A copy with what samplers read, numbered as the real trial (no user attributes: lwnas's records
    are most of a trial's bytes). The mirror storage renumbers its own deep copy."""
    return optuna.trial.FrozenTrial(
        number=number,
        state=trial.state,
        value=None,
        values=trial.values,
        datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete,
        params=trial.params,
        distributions=trial.distributions,
        user_attrs={},
        system_attrs=trial.system_attrs,
        intermediate_values=trial.intermediate_values,
        trial_id=-1,
    )
