"""A Ray Tune searcher that asks Optuna for points and keeps lwnas's record of every trial.

It implements Ray's public ``Searcher`` interface and talks to Optuna through its public
ask-and-tell API only (``Study.ask``, the study's define-by-run function from
``searchspace.convert.optuna_suggest``, ``Study.tell`` by trial number), so neither library's
internals are relied on:

* static costs first: each suggested point is costed in the driver; a point that breaks the
  study's constraints is told to Optuna at once as infeasible (``Trial.set_constraint``, so the
  samplers learn the feasible region) and never reaches a worker;
* the result -> trial-state mapping is explicit: a trial that trained its full budget is COMPLETE;
  one a scheduler stopped is PRUNED with the epochs it used; a failure is FAIL with its reason;
* each point is resolved, adapted to the task and costed once, here: the trial's record
  (``tuners/store/record.py``: configuration, every training setting, task, seed, costs) goes to the
  trial's user attributes and, as plain data in the Ray trial's config, to the worker, which trains
  exactly it;
* each epoch's metrics go to a user attribute of their own; wall time, host and outcome at the end.

The searcher's only state of its own is the map from Ray trial ids to Optuna trial numbers (and the
epochs recorded so far); everything else lives in the Optuna storage. ``save`` writes that map as
JSON and ``restore`` reads it back, so a restored searcher finishes its running trials by number.
``lwnas resume`` does not go through Ray's restore: it reopens the study from storage and re-queues
the trials a stopped driver left RUNNING.
"""

from __future__ import annotations

import json
import math
from typing import Any

import optuna
from optuna.trial import TrialState
from ray.tune.search import Searcher

from searchspace.convert import optuna_suggest
from searchspace.errors import LwnasError, shorten
from searchspace.study import Study
from trainers.loop import TrainSettings
from trainers.tasks.registry import allowed_plugins
from tuners.driver.strategies import SCREEN_PATIENCE, Candidate, known_scores, screen_for
from tuners.driver.trainable import ALLOWED_PLUGINS, NUMBER, RECORD
from tuners.fronts.objectives import worst_values
from tuners.planning.costs import StaticCosts, Verdict
from tuners.store import keys
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord, trial_seed, trial_training
from tuners.store.trial_store import TrialStore

# infeasible points in a row before the sweep gives up on the constraints (each costs ~0.1 s to check;
# constraints that no point meets at all are refused before the sweep starts, as `lwnas space validate` does)
MAX_REJECTIONS = 1000


class InfeasibleStudyError(LwnasError, RuntimeError):
    pass


class StudySearcher(Searcher):
    """Optuna's ask-and-tell over a study's space, with constraints, outcomes and lwnas's trial record.

    Args:
        study: the parsed study file.
        ot_study: the Optuna study the sweep records into (its sampler proposes).
        static: the driver's static cost model and constraint check.
        storage: the Optuna storage lwnas opened for ``ot_study`` (the trials are written through its
            ``TrialStore``, by trial number).
    """

    def __init__(
        self,
        study: Study,
        ot_study: optuna.Study,
        static: StaticCosts,
        storage: Any,
        store: TrialStore | None = None,
    ):
        """``store``: the study's trial store when the driver has opened it already (else opened here)."""
        super().__init__(metric=None, mode=None)  # several objectives: they come from the study
        self.study, self.static, self.ot_study, self.storage = study, static, ot_study, storage
        self.objectives = study.objectives
        self.suggest_params = optuna_suggest(study.space)
        self.store = store if store is not None else TrialStore.of(storage, ot_study.study_name)
        self.numbers: dict[str, int] = {}  # Ray trial id -> Optuna trial number
        self.completed: set[str] = set()
        # per running trial only (dropped once it is told), so the driver's memory stays flat over long sweeps
        self._last: dict[str, dict[str, Any]] = {}
        self._epochs: dict[str, list[dict[str, Any]]] = {}
        self._costs: dict[str, dict[str, float | str]] = {}  # the planned static costs: no read-back at the end
        self._retries: dict[str, list[dict[str, Any]]] = {}  # attempts Ray re-ran (``record_retry``)
        # why the scheduler stopped a trial, by Ray trial id (mo-asha's ``reasons``; the driver links them)
        self.prune_reasons: dict[str, dict[str, Any]] = {}
        self.screen = screen_for(study)  # the search strategy's screens (none under strategy full)
        self._candidates: dict[str, Candidate] = {}
        self._trained_as: dict[str, int] = {}  # architecture key -> the trial number that trained it in full
        self.exhausted: str | None = None  # why the screen ended the sweep early
        self._proxy_data: Any = None  # the task's data, loaded once for the training-free scores

    def set_search_properties(self, metric: Any, mode: Any, config: dict, **spec: Any) -> bool:
        return True  # the space and the objectives come from the study, not from Tune's config

    def __getstate__(self) -> dict[str, Any]:
        # Ray pickles the search algorithm with the Tuner; the Optuna study, its storage (database
        # connections) and the cost model are rebuilt from the study file, so they stay out.
        unpicklable = ("ot_study", "storage", "store", "static", "suggest_params", "screen", "_proxy_data")
        return {k: v for k, v in self.__dict__.items() if k not in unpicklable}

    def save(self, checkpoint_path: str) -> None:
        state = {
            "study": self.ot_study.study_name,
            "numbers": self.numbers,
            "completed": sorted(self.completed),
            "epochs": self._epochs,
        }
        with open(checkpoint_path, "w", encoding="utf-8") as f:
            json.dump(keys.plain(state), f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, encoding="utf-8") as f:
            state = json.load(f)
        if state["study"] != self.ot_study.study_name:
            raise ValueError(f"{checkpoint_path} belongs to study {state['study']!r}, not {self.ot_study.study_name!r}")
        self.numbers = {k: int(v) for k, v in state["numbers"].items()}
        self.completed = set(state["completed"])
        self._epochs = state["epochs"]

    # ---- the trial record, by number --------------------------------------------------------------
    def _set_attr(self, trial_id: str, key: str, value: Any) -> None:
        self.store.set_attr(self.numbers[trial_id], key, value)

    # ---- suggesting ---------------------------------------------------------------------------
    # Ray declares dict | None, but its searchers also return Searcher.FINISHED (a str) to end the run
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:  # type: ignore[override]
        planned = self._next_feasible(trial_id)
        if planned is None or isinstance(planned, str):
            return planned  # None: the proposer has nothing now (Ray asks again later); FINISHED: screens ended it
        params, number, record = planned
        return {**params, NUMBER: number, RECORD: keys.plain(record.for_worker()), **self._allowed()}

    @staticmethod
    def _allowed() -> dict[str, Any]:
        """The plugins the driver's command line allowed (--allow-plugin): from this process, never from storage."""
        return {ALLOWED_PLUGINS: list(allowed_plugins())} if allowed_plugins() else {}

    def _next_feasible(self, key: str) -> tuple[dict[str, Any], int, TrialRecord] | str | None:
        """Ask until a point meets the constraints and the strategy's screen keeps it; ``(params, number, record)``
        of it, known as ``key`` from now on (a Ray trial id; a pack's member key), None when the proposer has
        nothing now, or ``Searcher.FINISHED`` once SCREEN_PATIENCE points in a row were screened out."""
        screened = 0
        for _ in range(MAX_REJECTIONS + SCREEN_PATIENCE):
            if not self._propose(key):
                return None
            ot_trial = self.ot_study.ask()
            active = self.suggest_params(ot_trial)
            params = {**ot_trial.params, **active}  # every value suggested, as Ray's define-by-run adapter gave
            record, verdict = self._plan(ot_trial.number, params)
            self.store.plan(ot_trial, record)  # one attribute: each is a transaction of its own
            for constraint in self.study.constraints:
                violation = constraint.violation(float(verdict.costs[constraint.metric]))
                ot_trial.set_constraint(constraint.metric, violation)
            # a queued trial (a seed config, a seed repeat, a re-queued one) is asked for by name: never screened
            queued = any(k in ot_trial.user_attrs for k in (keys.SEED_CONFIG, keys.SEED_OF, keys.REQUEUED_FROM))
            screened_here = verdict.feasible and self.screen.active and not queued
            point = self._candidate(active, record, verdict) if screened_here else None
            reason = self.screen.skip(point) if point is not None else None
            if reason is not None and point is not None:
                self._tell_screened(ot_trial, point, verdict, reason)
                screened += 1
                if screened >= SCREEN_PATIENCE:
                    self.exhausted = f"{SCREEN_PATIENCE} proposed points in a row were not worth training ({reason})"
                    return Searcher.FINISHED
                continue
            if verdict.feasible:
                if point is not None:
                    self.screen.start(point)
                    self._candidates[key] = point
                self.numbers[key] = ot_trial.number
                self._costs[key] = record.costs
                # the record is all the worker gets: it trains exactly what storage holds
                return params, ot_trial.number, record
            self._tell_infeasible(ot_trial, verdict)
            self._rejected(key)
        reasons = ", ".join(f"{k}: {v}" for k, v in self.static.summary()["reasons"].items())
        raise InfeasibleStudyError(
            f"{MAX_REJECTIONS} points in a row broke the constraints ({shorten(reasons)}); "
            f"relax them or narrow the space"
        )

    def _plan(self, number: int, params: dict[str, Any]) -> tuple[TrialRecord, Verdict]:
        """Resolve and cost a point once: the trial's record (what the worker trains) and its verdict."""
        point = self.study.space.resolve(params)
        verdict = self.static.evaluate(point.config)
        config = verdict.config  # adapted to the task's input sizes, as it was costed
        seed = trial_seed(self.study.tuner.seed, number)
        training = trial_training(self.study, point.training, seed, self.study.tuner.cpus_per_trial)
        record = TrialRecord(
            number=number,
            config=config.to_dict(),
            task=self.study.task,
            training=TrainSettings.from_dict(training).to_dict(),  # every setting, defaults too
            task_options=dict(self.study.task_options),
            seed=seed,
            costs=verdict.costs,
        )
        return TrialRecord.from_worker(keys.plain(record.for_worker())), verdict  # as storage will hold it

    def _candidate(self, active: dict[str, Any], record: TrialRecord, verdict: Verdict) -> Candidate:
        """What the screen knows of a point before training: its architecture, costs and training-free scores
        (computed only for a screen that ranks by them: a model built and one batch, ~0.1-1 s per point)."""
        costs = {k: float(v) for k, v in verdict.costs.items() if isinstance(v, (int, float))}
        key = json.dumps(sorted(active.items()), separators=(",", ":"), default=str)
        scores: dict[str, float] = {}
        if self.screen.wants_scores and self.static.task is not None:
            from searchspace import ArchConfig
            from trainers.proxies import proxy_scores
            from trainers.tasks.base import DATA_SEED

            if self._proxy_data is None:
                self._proxy_data = self.static.task.load(seed=DATA_SEED)
            config = ArchConfig.from_dict(record.config)
            scores = known_scores(proxy_scores(config, self.static.task, self._proxy_data, self.study.tuner.seed))
        return Candidate(key, dict(active), costs, scores)

    def _tell_screened(self, ot_trial: optuna.Trial, point: Candidate, verdict: Verdict, reason: str) -> None:
        """Record a point the strategy's screen skipped: a duplicate told the values its earlier trial measured,
        any other the worst values (as an infeasible point); it never trains and uses no place in the budget."""
        ot_trial.set_user_attr(keys.OUTCOME, Outcome.SCREENED.value)
        ot_trial.set_user_attr(keys.SCREENED_BY, reason)
        known = self.screen.known_values(point)
        if known is not None and point.key in self._trained_as:
            ot_trial.set_user_attr(keys.SCREENED_AS, self._trained_as[point.key])
        values = known if known is not None else worst_values(self.objectives, point.costs)
        self.ot_study.tell(ot_trial.number, values, state=TrialState.COMPLETE)

    def _propose(self, trial_id: str) -> bool:
        """Hook before each ask (another proposer enqueues its point here); False: nothing to propose."""
        return True

    def _rejected(self, trial_id: str) -> None:
        """Hook after a proposed point was found infeasible."""

    def _tell_infeasible(self, ot_trial: optuna.Trial, verdict) -> None:
        """Record a point that is never trained: its costs are real, its task metric the worst value."""
        ot_trial.set_user_attr(keys.OUTCOME, Outcome.INFEASIBLE.value)
        ot_trial.set_user_attr(keys.FAILURE, "breaks " + ", ".join(verdict.reasons()))
        self.ot_study.tell(ot_trial.number, worst_values(self.objectives, verdict.costs), state=TrialState.COMPLETE)
        self.ot_study.set_user_attr(keys.STUDY_REJECTED, keys.plain(self.static.summary()))

    # ---- results ------------------------------------------------------------------------------
    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self._last[trial_id] = result
        self._record_epoch(trial_id, result)

    def _record_epoch(self, trial_id: str, result: dict[str, Any]) -> None:
        """Append an epoch's metrics once (a scheduler's STOP sends its result to on_trial_complete only)."""
        if "lwnas_failed" in result or "lwnas_error" in result or trial_id not in self.numbers:
            return
        if "epoch" not in result or not any(k.startswith("val_") for k in result):
            return
        epochs = self._epochs.setdefault(trial_id, [])
        if epochs and epochs[-1]["epoch"] >= result["epoch"]:
            return
        epochs.append(
            {
                k: v
                for k, v in result.items()
                if k == "epoch"
                or k.startswith("val_")
                or k in ("train_loss", "epoch_time", "wall_time", "samples_per_s", "lr")
            }
        )
        self.store.append_epoch(self.numbers[trial_id], epochs[-1])  # one key per epoch: linear writes

    def record_retry(self, trial_id: str, lost: dict[str, Any]) -> None:
        """Append to the trial's record an attempt whose worker or node died and that Ray runs again.

        The re-run keeps the trial's number and record; epochs the lost attempt reported stay recorded and
        the re-run's repeats of them (the same seed and data) are not written again (``_record_epoch``).
        """
        if trial_id in self.completed or trial_id not in self.numbers:
            return
        retries = self._retries.setdefault(trial_id, [])
        retries.append(lost)
        self._set_attr(trial_id, keys.RETRIED, retries)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        if trial_id in self.completed or trial_id not in self.numbers:
            return
        last = {**self._last.get(trial_id, {}), **(result or {})}
        if result:
            self._record_epoch(trial_id, result)
        epochs = self._epochs.get(trial_id, [])
        self._set_attr(trial_id, keys.BUDGET_USED, len(epochs))
        if epochs:
            self._set_attr(trial_id, keys.WALL_TIME, epochs[-1].get("wall_time"))
        for key, attr in (("host", keys.HOST), ("node", keys.NODE), ("device", keys.DEVICE)):
            if last.get(key):
                self._set_attr(trial_id, attr, last[key])
        state, values = self._outcome(trial_id, last, epochs, error)
        self.ot_study.tell(self.numbers[trial_id], values, state=state)
        point = self._candidates.pop(trial_id, None)
        if point is not None:
            self.screen.finish(point, values if state == TrialState.COMPLETE else None)
            if state == TrialState.COMPLETE:
                self._trained_as.setdefault(point.key, self.numbers[trial_id])
        self.completed.add(trial_id)
        for running in (self._last, self._epochs, self._costs, self._retries):
            running.pop(trial_id, None)
        self.store.forget(self.numbers[trial_id])

    def _outcome(self, trial_id: str, last: dict, epochs: list, error: bool) -> tuple[TrialState, list | None]:
        """The explicit result -> trial-state mapping."""
        reason = last.get("lwnas_failed") or last.get("lwnas_error")
        if error or reason:
            self._set_attr(trial_id, keys.OUTCOME, Outcome.FAILED.value)
            self._set_attr(trial_id, keys.FAILURE, reason or "the trial's worker died (see Ray's log)")
            return TrialState.FAIL, None
        if len(epochs) < self.study.budget.epochs:
            self._set_attr(trial_id, keys.OUTCOME, Outcome.PRUNED.value)
            if trial_id in self.prune_reasons:
                self._set_attr(trial_id, keys.PRUNED_BY, self.prune_reasons[trial_id])
            return TrialState.PRUNED, None
        # a searcher restored from a checkpoint planned none of its running trials: storage has their costs
        costs = self._costs.get(trial_id) or self.store.record(self.numbers[trial_id]).costs
        values = [costs[o.metric] if o.is_cost else epochs[-1][f"val_{o.metric}"] for o in self.objectives]
        if any(isinstance(v, float) and math.isnan(v) for v in values):
            self._set_attr(trial_id, keys.OUTCOME, Outcome.FAILED.value)
            self._set_attr(trial_id, keys.FAILURE, f"a metric is NaN: {values}")
            return TrialState.FAIL, None
        self._set_attr(trial_id, keys.OUTCOME, Outcome.COMPLETE.value)
        return TrialState.COMPLETE, values
