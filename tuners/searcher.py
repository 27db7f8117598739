"""Ray Tune's ``OptunaSearch``, made to keep lwnas's record of every trial in the Optuna study.

What it adds to Ray's adapter (which stays in charge of ask/tell):

* static costs first: each suggested point is costed in the driver; a point that breaks the
  study's constraints is told to Optuna at once as infeasible (``Trial.set_constraint``, so the
  samplers learn the feasible region) and never reaches a worker;
* the result -> trial-state mapping is explicit: a trial that trained its full budget is COMPLETE;
  one a scheduler stopped is PRUNED with the epochs it used; a failure is FAIL with its reason;
* per-epoch metrics, configuration, costs, wall time and host go to the trial's user attributes.
"""

from __future__ import annotations

import math
from typing import Any

import optuna
from optuna.trial import TrialState
from ray.tune.search.optuna import OptunaSearch

from searchspace.convert import optuna_suggest
from searchspace.errors import LwnasError, shorten
from searchspace.study import Study

from . import storage as keys
from .constraints import StaticCosts
from .trainable import NUMBER, SEED, trial_seed

# infeasible points in a row before the sweep gives up on the constraints (each costs ~0.1 s to check;
# constraints that no point meets at all are refused before the sweep starts, as `lwnas space validate` does)
MAX_REJECTIONS = 1000


class InfeasibleStudyError(LwnasError, RuntimeError):
    pass


class StudySearcher(OptunaSearch):
    """OptunaSearch over a study's space with constraints, outcomes and lwnas's trial record."""

    def __init__(self, study: Study, ot_study: optuna.Study, static: StaticCosts):
        self.study, self.static = study, static
        self.objectives = study.objectives
        self._last: dict[str, dict[str, Any]] = {}
        self._epochs: dict[str, list[dict[str, Any]]] = {}
        modes = ["max" if o.direction == "maximize" else "min" for o in study.objectives]
        metrics = [o.metric if o.is_cost else f"val_{o.metric}" for o in study.objectives]
        super().__init__(space=optuna_suggest(study.space), metric=metrics,
                         mode=modes, sampler=ot_study.sampler, study_name=ot_study.study_name,
                         storage=ot_study._storage)
        self._ot_study = ot_study  # the same study object, with its sampler state

    def __getstate__(self) -> dict[str, Any]:
        # Ray pickles the searcher into its experiment state; the Optuna study (with its database
        # connections) is the real state and lives in storage, so it is left out (`lwnas resume`
        # reopens the study instead of restoring Ray's pickle).
        unpicklable = ("_ot_study", "_storage", "_sampler", "static", "_ot_trials", "_space")
        return {k: v for k, v in self.__dict__.items() if k not in unpicklable}

    def save(self, checkpoint_path: str) -> None:
        import pickle

        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.__getstate__(), f)

    def restore(self, checkpoint_path: str) -> None:
        raise NotImplementedError("lwnas resumes a sweep from its Optuna study: run `lwnas resume NAME`")

    # ---- suggesting ---------------------------------------------------------------------------
    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        for _ in range(MAX_REJECTIONS):
            if not self._propose(trial_id):
                return None  # the proposer has nothing now (Ray asks again later)
            ot_trial = self._ot_study.ask()
            params = self._suggest_from_define_by_run_func(self._space, ot_trial)
            point = self.study.space.resolve(params)
            config = self.static.adapt(point.config)
            verdict = self.static.evaluate(config)
            attrs = {keys.CONFIG: config.to_dict(), keys.TRAINING: point.training, keys.COSTS: verdict.costs}
            for key, value in attrs.items():
                ot_trial.set_user_attr(key, keys.plain(value))
            for constraint in self.study.constraints:
                ot_trial.set_constraint(constraint.metric, constraint.violation(verdict.costs[constraint.metric]))
            if verdict.feasible:
                self._ot_trials[trial_id] = ot_trial
                return {**params, NUMBER: ot_trial.number, SEED: trial_seed(self.study.tuner.seed, ot_trial.number)}
            self._tell_infeasible(ot_trial, verdict)
            self._rejected(trial_id)
        reasons = ", ".join(f"{k}: {v}" for k, v in self.static.summary()["reasons"].items())
        raise InfeasibleStudyError(f"{MAX_REJECTIONS} points in a row broke the constraints ({shorten(reasons)}); "
                                   f"relax them or narrow the space")

    def _propose(self, trial_id: str) -> bool:
        """Hook before each ask (another proposer enqueues its point here); False: nothing to propose."""
        return True

    def _rejected(self, trial_id: str) -> None:
        """Hook after a proposed point was found infeasible."""

    def _tell_infeasible(self, ot_trial: optuna.Trial, verdict) -> None:
        """Record a point that is never trained: its costs are real, its task metric the worst value."""
        values = [verdict.costs[o.metric] if o.is_cost else (-math.inf if o.direction == "maximize" else math.inf)
                  for o in self.objectives]
        ot_trial.set_user_attr(keys.OUTCOME, "infeasible")
        ot_trial.set_user_attr(keys.FAILURE, "breaks " + ", ".join(verdict.reasons()))
        self._ot_study.tell(ot_trial, values, state=TrialState.COMPLETE)
        self._ot_study.set_user_attr(keys.STUDY_REJECTED, keys.plain(self.static.summary()))

    # ---- results ------------------------------------------------------------------------------
    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self._last[trial_id] = result
        self._record_epoch(trial_id, result)

    def _record_epoch(self, trial_id: str, result: dict[str, Any]) -> None:
        """Append an epoch's metrics once (a scheduler's STOP sends its result to on_trial_complete only)."""
        if "lwnas_failed" in result or "lwnas_error" in result or trial_id not in self._ot_trials:
            return
        if "epoch" not in result or not any(k.startswith("val_") for k in result):
            return
        epochs = self._epochs.setdefault(trial_id, [])
        if epochs and epochs[-1]["epoch"] >= result["epoch"]:
            return
        epochs.append({k: v for k, v in result.items() if k == "epoch" or k.startswith("val_") or k in
                       ("train_loss", "epoch_time", "wall_time", "samples_per_s", "lr")})
        self._ot_trials[trial_id].set_user_attr(keys.EPOCHS, keys.plain(epochs))

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return
        ot_trial = self._ot_trials[trial_id]
        last = {**self._last.get(trial_id, {}), **(result or {})}
        if result:
            self._record_epoch(trial_id, result)
        epochs = self._epochs.get(trial_id, [])
        ot_trial.set_user_attr(keys.BUDGET_USED, len(epochs))
        if epochs:
            ot_trial.set_user_attr(keys.WALL_TIME, epochs[-1].get("wall_time"))
        for key, attr in (("host", keys.HOST), ("node", keys.NODE)):
            if last.get(key):
                ot_trial.set_user_attr(attr, last[key])
        state, values = self._outcome(ot_trial, last, epochs, error)
        self._ot_study.tell(ot_trial, values, state=state)
        self._completed_trials.add(trial_id)

    def _outcome(self, ot_trial, last: dict, epochs: list, error: bool) -> tuple[TrialState, list | None]:
        """The explicit result -> trial-state mapping."""
        reason = last.get("lwnas_failed") or last.get("lwnas_error")
        if error or reason:
            ot_trial.set_user_attr(keys.OUTCOME, "failed")
            ot_trial.set_user_attr(keys.FAILURE, reason or "the trial's worker died (see Ray's log)")
            return TrialState.FAIL, None
        if len(epochs) < self.study.budget.epochs:
            ot_trial.set_user_attr(keys.OUTCOME, "pruned")
            return TrialState.PRUNED, None
        costs = ot_trial.user_attrs[keys.COSTS]
        values = [costs[o.metric] if o.is_cost else epochs[-1][f"val_{o.metric}"] for o in self.objectives]
        if any(isinstance(v, float) and math.isnan(v) for v in values):
            ot_trial.set_user_attr(keys.OUTCOME, "failed")
            ot_trial.set_user_attr(keys.FAILURE, f"a metric is NaN: {values}")
            return TrialState.FAIL, None
        ot_trial.set_user_attr(keys.OUTCOME, "complete")
        return TrialState.COMPLETE, values
