"""NNI's tuners (``sampler: nni-tpe`` / ``nni-evolution``) proposing for a sweep.

NNI optimises one objective, so each trial gets random weights and is scored with ParEGO's
augmented Tchebycheff scalarisation (Knowles, 2006) of its normalised objectives. NNI proposes a
point, which is enqueued in the Optuna study, so the rest (static constraints, storage, outcomes)
is ``StudySearcher``'s, and every trial is kept in the same Optuna study.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optuna

from searchspace.convert import from_nni, to_nni
from searchspace.study import Study
from tuners.driver.samplers import proposer_seed
from tuners.driver.searcher import StudySearcher
from tuners.fronts.objectives import minimised
from tuners.planning.costs import StaticCosts
from tuners.store.trial_store import TrialStore

INSTALL_HINT = (
    "NNI is not installed, or failed to import ({reason}); install it with `pip install 'lwnas[nni]'` "
    "(nni>=3.0). If NNI cannot install on this platform, use sampler nsga2, tpe, gp or random."
)


def make_nni_tuner(study: Study, seed: int) -> Any:
    """The NNI tuner a study names, with a clear error if NNI cannot be imported."""
    try:
        if study.tuner.sampler == "nni-tpe":
            from nni.algorithms.hpo.tpe_tuner import TpeTuner

            tuner = TpeTuner(optimize_mode="maximize", seed=seed)
        else:
            from nni.algorithms.hpo.evolution_tuner import EvolutionTuner

            tuner = EvolutionTuner(optimize_mode="maximize", population_size=study.tuner.population_size or 8)
    except Exception as exc:  # ImportError, or NNI's own import-time failures on unsupported platforms
        raise ImportError(INSTALL_HINT.format(reason=f"{type(exc).__name__}: {exc}")) from None
    tuner.update_search_space(to_nni(study.space))
    return tuner


def parego(values: np.ndarray, weights: np.ndarray, rho: float = 0.05) -> float:
    """Augmented Tchebycheff value of normalised, minimised objectives (lower is better)."""
    weighted = weights * values
    return float(weighted.max() + rho * weighted.sum())


class NNISearcher(StudySearcher):
    def __init__(
        self, study: Study, ot_study: optuna.Study, static: StaticCosts, storage: Any, store: TrialStore | None = None
    ):
        super().__init__(study, ot_study, static, storage, store)
        seed = proposer_seed(study, len(ot_study.get_trials(deepcopy=False)))  # a resume draws new points
        self.nni = make_nni_tuner(study, seed)
        self.rng = np.random.default_rng(seed)
        self._pending: dict[str, tuple[int, dict]] = {}
        self._next_id = 0
        self._seen: list[np.ndarray] = []  # minimised objective vectors of finished trials

    @property
    def awaiting(self) -> int:
        """Points NNI proposed that have not been given a result yet."""
        return len(self._pending)

    @property
    def scored(self) -> int:
        """Finished trials whose score NNI was given (failed ones end unscored)."""
        return len(self._seen)

    def _propose(self, trial_id: str) -> bool:
        import nni

        if self.ot_study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)):
            return True  # seed configs and re-queued trials first
        pid, self._next_id = self._next_id, self._next_id + 1
        try:
            proposal = self.nni.generate_parameters(pid)
        except nni.NoMoreTrialError:
            return False
        self._pending[trial_id] = (pid, proposal)
        self.ot_study.enqueue_trial(from_nni(self.study.space, proposal))
        return True

    def _rejected(self, trial_id: str) -> None:
        if trial_id in self._pending:
            pid, proposal = self._pending.pop(trial_id)
            self.nni.receive_trial_result(pid, proposal, -1e9)  # infeasible: the worst score

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        super().on_trial_complete(trial_id, result, error)
        if trial_id not in self._pending or trial_id not in self.numbers:
            return
        pid, proposal = self._pending.pop(trial_id)
        frozen = self.store.trial(self.numbers[trial_id])
        if frozen.state != optuna.trial.TrialState.COMPLETE:
            self.nni.trial_end(pid, False)  # positional: TpeTuner names it `_success`, EvolutionTuner `success`
            return
        vector = minimised(frozen.values, self.objectives)
        self._seen.append(vector)
        seen = np.stack(self._seen)
        span = np.where(seen.max(0) > seen.min(0), seen.max(0) - seen.min(0), 1.0)
        weights = self.rng.dirichlet(np.ones(len(vector)))
        self.nni.receive_trial_result(pid, proposal, -parego((vector - seen.min(0)) / span, weights))
