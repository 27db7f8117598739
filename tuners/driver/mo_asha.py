"""MO-ASHA: asynchronous successive halving for several objectives, as a Ray Tune scheduler.

In the spirit of Syne Tune's MOASHA (Schmucker et al., 2021): rungs sit at ``grace * rf**k`` epochs;
when a trial reaches a rung its objective vector (the task metric at that rung with the static
costs) joins the rung's, and the trial continues only if it is in the best ``1/rf`` of the rung by
non-dominated sorting, ties within a front broken by NSGA-II's crowding distance
(``tuners.fronts.objectives.nondominated_order``). Decisions are asynchronous, like ASHA: a trial is
judged against the trials that reached the rung before it.
Stopped trials are recorded as PRUNED by the searcher, never as complete.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from searchspace.study import Objective, Study
from tuners.driver.trainable import NUMBER
from tuners.fronts.objectives import dominates, minimised, nondominated_order
from tuners.planning.check import mo_asha_rungs


class MOASHA(FIFOScheduler):
    """Multi-objective asynchronous successive halving over epochs."""

    def __init__(
        self,
        objectives: Sequence[Objective],
        max_epochs: int,
        grace_epochs: int = 1,
        reduction_factor: int = 3,
        rungs: Sequence[int] | None = None,
    ):
        super().__init__()
        self.objectives = tuple(objectives)
        # where each objective is in a trial's report: a task metric as its validation value, a cost as itself
        self.result_keys = [o.metric if o.is_cost else f"val_{o.metric}" for o in self.objectives]
        self.rf = reduction_factor
        # `rungs`: other epochs to judge at (successive halving with one rung at epoch 1 gives [1])
        self.rungs = list(rungs) if rungs is not None else mo_asha_rungs(max_epochs, grace_epochs, reduction_factor)
        self.max_epochs = max_epochs
        self.recorded: dict[int, dict[str, np.ndarray]] = {r: {} for r in self.rungs}
        self.stopped: list[str] = []
        # why each stopped trial was stopped, by Ray trial id: the searcher records it on the trial
        # (keys.PRUNED_BY) and the sweep's line says it
        self.reasons: dict[str, dict[str, Any]] = {}
        self._numbers: dict[str, Any] = {}  # Ray trial id -> the Optuna trial number

    @classmethod
    def for_study(cls, study: Study) -> MOASHA:
        return cls(study.objectives, study.budget.epochs, study.tuner.grace_epochs, study.tuner.reduction_factor)

    def set_search_properties(self, metric: Any, mode: Any, **spec: Any) -> bool:
        return True  # objectives come from the study, not from Tune's single metric

    def _vector(self, result: dict[str, Any]) -> np.ndarray | None:
        if any(key not in result for key in self.result_keys):
            return None
        return minimised([float(result[key]) for key in self.result_keys], self.objectives)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        number = (getattr(trial, "config", None) or {}).get(NUMBER, trial.trial_id)
        reason = self.judge(trial.trial_id, number, result)
        if reason is None:
            return TrialScheduler.CONTINUE
        self.stopped.append(trial.trial_id)
        self.reasons[trial.trial_id] = reason
        return TrialScheduler.STOP

    def judge(self, key: str, number: Any, result: dict[str, Any]) -> dict[str, Any] | None:
        """Record ``result`` of trial ``key`` at its rung; None to continue, else why it stops.

        The scheduler's own decision for a Ray trial, and ``tuners/driver/pack.py``'s for each member of a pack.
        """
        epoch = result.get("epoch")
        if epoch not in self.recorded or "lwnas_failed" in result:
            return None
        vector = self._vector(result)
        if vector is None:
            return None
        rung = self.recorded[epoch]
        rung[key] = vector
        self._numbers[key] = number
        ids = list(rung)
        order = nondominated_order(np.stack([rung[i] for i in ids]))
        keep = max(1, math.ceil(len(ids) / self.rf))
        if ids.index(key) in order[:keep]:
            return None
        dominating = [i for i in ids if i != key and dominates(rung[i], vector)]
        return {
            "rung": epoch,
            "rung_trials": len(ids),
            "kept": keep,
            "dominated_by": [self._numbers[i] for i in dominating],  # empty: cut on crowding within its front
            # the objectives in which those trials beat it (with a cost among them, the cost decided)
            "better_in": [
                o.metric for m, o in enumerate(self.objectives) if any(rung[i][m] < vector[m] for i in dominating)
            ],
            "values": {o.metric: float(result[k]) for o, k in zip(self.objectives, self.result_keys)},
        }

    def debug_string(self) -> str:
        return "MOASHA: " + ", ".join(f"rung {r}: {len(v)} trials" for r, v in self.recorded.items())


class PASHA(MOASHA):
    """One rung whose epoch grows (PASHA, Bohdal et al., 2023): it starts at epoch 1, and whenever the trials
    that trained their full budget are ranked differently by the task metric at the rung and at the end, the
    rung moves up by the reduction factor (never to the full budget). A rung that ranks like the end stays
    where it is cheap; one that misleads (accuracies near chance after one epoch) is given more epochs.
    """

    def __init__(self, objectives: Sequence[Objective], max_epochs: int, reduction_factor: int = 3):
        epochs = mo_asha_rungs(max_epochs, 1, reduction_factor)
        super().__init__(objectives, max_epochs, 1, reduction_factor, rungs=epochs[:1])
        self.possible = epochs  # the epochs the rung may move to
        self.recorded = {r: {} for r in epochs}
        self.metric_key = next(k for k, o in zip(self.result_keys, self.objectives) if not o.is_cost)
        self.sign = float(minimised([1.0], [next(o for o in self.objectives if not o.is_cost)])[0])
        self.curves: dict[str, dict[int, float]] = {}  # trial id -> epoch -> task metric (minimised)
        self.moves: list[dict[str, Any]] = []  # when the rung moved, and on what evidence

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        epoch = result.get("epoch")
        if isinstance(epoch, int) and self.metric_key in result and "lwnas_failed" not in result:
            self.curves.setdefault(trial.trial_id, {})[epoch] = self.sign * float(result[self.metric_key])
            if epoch == self.max_epochs:
                self._maybe_grow()
        if not self.rungs or epoch != self.rungs[0]:
            return TrialScheduler.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)

    def _maybe_grow(self) -> None:
        """Move the rung up when its ranking of the finished trials disagrees with their final one."""
        rung = self.rungs[0] if self.rungs else None
        if rung is None or self.possible.index(rung) + 1 >= len(self.possible):
            return
        both = [c for c in self.curves.values() if rung in c and self.max_epochs in c]
        if len(both) < 2 * self.rf:
            return
        at_rung = np.array([c[rung] for c in both])
        final = np.array([c[self.max_epochs] for c in both])
        keep = max(1, math.ceil(len(both) / self.rf))
        # the best 1/rf at the end, and at the rung: PASHA's soft ranking test, on the set a rung keeps
        agree = len(set(np.argsort(at_rung)[:keep]) & set(np.argsort(final)[:keep])) / keep
        if agree < PASHA_AGREEMENT:
            grown = self.possible[self.possible.index(rung) + 1]
            self.moves.append({"from": rung, "to": grown, "trials": len(both), "agreement": round(agree, 3)})
            self.rungs = [grown]


PASHA_AGREEMENT = 0.5  # the share of the final best 1/rf the rung must also keep


def describe_stop(reason: dict[str, Any]) -> str:
    """What a stopped trial's line says: the rung, how many it kept, and which trials dominated it."""
    kept = f"rung at epoch {reason['rung']} kept the best {reason['kept']} of {reason['rung_trials']}"
    by = reason["dominated_by"]
    if by:
        better = f" (better {', '.join(reason['better_in'])})" if reason.get("better_in") else ""
        return f"{kept}; dominated by trial{'s' if len(by) > 1 else ''} {', '.join(map(str, by))}{better}"
    return f"{kept}; on the rung's front but cut by crowding distance"
