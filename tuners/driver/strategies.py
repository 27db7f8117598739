"""Search strategies: what a study's ``search: {strategy: NAME}`` makes a sweep do, in the real driver and in
the simulator (``tuners/simulate``) alike.

A strategy is two choices. Its *scheduler* stops trials early: none, mo-asha as the study's tuner sets it,
successive halving with one rung at epoch 1 (``sh-1``), or PASHA's growing rung (``pasha``: the rung
starts at epoch 1 and moves up by the reduction factor whenever the trials that finished disagree with
it). Its *screens* decide before a proposed point trains whether it is worth training (``Screen``): not a
point trained already (``fresh``), not a point a cheaper trained one already matches in accuracy
(``costs``), a point in the best 1/rf by a training-free score (``proxy``), or one a surrogate fitted on the
finished trials says may join the front (``surrogate``). A skipped point costs no training; it is told to
the sampler (a duplicate with its earlier values, any other with the worst values, as an infeasible point)
and recorded with outcome ``screened``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from searchspace.study import DEFAULT_STRATEGY, Objective, Study
from tuners.fronts.objectives import minimised, nondominated_order, weakly_dominates

SCREENS = ("fresh", "costs", "proxy", "surrogate")
# points in a row a screen skipped before a sweep (or a replay) ends: nothing left seems worth training
SCREEN_PATIENCE = 300


@dataclass(frozen=True)
class Strategy:
    """A scheduler and the screens a proposed point passes before it trains."""

    scheduler: str  # none, mo-asha, sh-1, pasha
    screens: tuple[str, ...] = ()
    about: str = ""


STRATEGIES: dict[str, Strategy] = {
    "full": Strategy("none", (), "every proposed point trains its full budget (NSGA-II as before strategies)"),
    "mo-asha": Strategy("mo-asha", (), "the tuner's mo-asha rungs (grace_epochs, reduction_factor)"),
    "fresh": Strategy("none", ("fresh",), "full trials, no architecture trained twice"),
    "sh-1": Strategy("sh-1", ("fresh",), "one rung at epoch 1 keeps the best 1/reduction_factor, they train in full"),
    "pasha": Strategy("pasha", ("fresh",), "one rung that starts at epoch 1 and grows while its ranking disagrees"),
    "cost-screen": Strategy("none", ("fresh", "costs"), "skip points a cheaper trained point matches in accuracy"),
    "proxy-screen": Strategy("none", ("fresh", "proxy"), "train the best 1/reduction_factor by a training-free score"),
    "surrogate": Strategy("none", ("fresh", "surrogate"), "train what a surrogate of finished trials says may help"),
    "surrogate-sh-1": Strategy("sh-1", ("fresh", "surrogate"), "the surrogate's points, through the epoch-1 rung"),
}
assert DEFAULT_STRATEGY in STRATEGIES


def strategy_of(study: Study) -> Strategy:
    return STRATEGIES[study.search.strategy]


def scheduler_of(study: Study) -> Any:
    """The Ray Tune scheduler a study's strategy runs (None: every trial trains its full budget)."""
    from tuners.driver.mo_asha import MOASHA, PASHA

    kind = strategy_of(study).scheduler
    if kind == "none" and study.tuner.scheduler == "mo-asha":
        kind = "mo-asha"  # `tuner: {scheduler: mo-asha}` keeps working under the default strategy
    epochs, rf = study.budget.epochs, study.tuner.reduction_factor
    if kind == "mo-asha":
        return MOASHA.for_study(study)
    if kind == "sh-1":
        return MOASHA(study.objectives, epochs, 1, rf, rungs=[1] if epochs > 1 else [])
    if kind == "pasha":
        return PASHA(study.objectives, epochs, rf)
    return None


# ---- screens -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    """What is known of a point before it trains: its architecture key, params, exact costs and scores."""

    key: str
    params: Mapping[str, Any]
    costs: Mapping[str, float]
    scores: Mapping[str, float]


class Screen:
    """Decides before training whether a proposed point is worth training, from the trials finished so far.

    Args:
        screens: the strategy's screens (``SCREENS``), applied in order.
        objectives: the study's objectives; the screens weigh its task metric against its costs.
        reduction_factor: the proxy screen keeps the best ``1/reduction_factor`` of the points proposed.
        proxy: the training-free score the proxy screen ranks by (None: the first score a point has).
        warmup: finished trials before the surrogate and the cost screen skip anything.
    """

    def __init__(
        self,
        screens: Sequence[str],
        objectives: Sequence[Objective],
        reduction_factor: int = 3,
        proxy: str | None = None,
        warmup: int = 10,
    ):
        self.screens, self.objectives = tuple(screens), tuple(objectives)
        self.costs = [o.metric for o in self.objectives if o.is_cost]
        self.metric = next(o for o in self.objectives if not o.is_cost)  # a study has a task metric
        self.rf, self.proxy, self.warmup = reduction_factor, proxy, warmup
        self.started: set[str] = set()  # architectures training now or trained in full (a pruned one may return)
        self.known: dict[str, list[float]] = {}  # architecture -> its finished full-budget values
        self.finished: list[tuple[Candidate, float]] = []  # (point, final task metric) of every full trial
        self.proxied: list[np.ndarray] = []  # (-score, costs) of every point the proxy screen judged
        self._model: _Ridge | None = None

    @property
    def active(self) -> bool:
        return bool(self.screens)

    @property
    def wants_scores(self) -> bool:
        """Whether points need their training-free scores (computed per point: a model and a batch each)."""
        return "proxy" in self.screens

    def skip(self, point: Candidate) -> str | None:
        """Why ``point`` is not worth training (None: train it). Call ``started`` when it is handed out."""
        for screen in self.screens:
            reason = getattr(self, f"_{screen}")(point)
            if reason is not None:
                return reason
        return None

    def start(self, point: Candidate) -> None:
        self.started.add(point.key)

    def known_values(self, point: Candidate) -> list[float] | None:
        """The values an earlier full trial of the same architecture measured (None: none finished)."""
        return self.known.get(point.key)

    def finish(self, point: Candidate, values: Sequence[float] | None) -> None:
        """A trial of ``point`` ended: ``values`` are its objective values when it trained its full budget."""
        if values is None:  # pruned or failed: the architecture may be proposed and tried again
            self.started.discard(point.key)
            return
        self.known.setdefault(point.key, list(values))
        metric = float(values[self.objectives.index(self.metric)])
        if math.isfinite(metric):
            self.finished.append((point, metric))
            self._model = None  # refitted on the next question

    # each screen: the reason to skip, or None
    def _fresh(self, point: Candidate) -> str | None:
        return "the architecture is training or was trained in full already" if point.key in self.started else None

    def _best_cheaper(self, point: Candidate) -> float:
        """The best task metric (minimised) among finished points that cost no more than ``point`` in every cost."""
        sign = minimised(1.0, [self.metric]).item()
        best = math.inf
        for other, metric in self.finished:
            if weakly_dominates([other.costs[c] for c in self.costs], [point.costs[c] for c in self.costs]):
                best = min(best, sign * metric)
        return best

    def _costs(self, point: Candidate) -> str | None:
        if len(self.finished) < self.warmup:
            return None
        sign = minimised(1.0, [self.metric]).item()
        top = min(sign * m for _, m in self.finished)
        cheaper = self._best_cheaper(point)
        # a point pays only by beating every cheaper point; one as good as the best seen at no more cost wins
        if cheaper <= top + COST_SCREEN_MARGIN:
            return f"a trained point at no more cost is within {COST_SCREEN_MARGIN:g} of the best {self.metric.metric}"
        return None

    def _proxy(self, point: Candidate) -> str | None:
        if not point.scores:
            return None  # no score known for it: nothing to rank by
        name = self.proxy or sorted(point.scores)[0]
        if name not in point.scores:
            raise KeyError(f"search.proxy: no training-free score {name!r}; the points have {sorted(point.scores)}")
        vector = np.array([-float(point.scores[name]), *(float(point.costs[c]) for c in self.costs)])
        self.proxied.append(vector)
        order = nondominated_order(np.stack(self.proxied))
        keep = max(1, math.ceil(len(self.proxied) / self.rf))
        if len(self.proxied) - 1 in order[:keep]:
            return None
        return f"not in the best 1/{self.rf} of the points proposed by training-free score {name}"

    def _surrogate(self, point: Candidate) -> str | None:
        if len(self.finished) < self.warmup:
            return None
        if self._model is None:
            self._model = _Ridge.fit([p for p, _ in self.finished], [m for _, m in self.finished])
        mean, spread = self._model.predict(point)
        sign = minimised(1.0, [self.metric]).item()
        hopeful = sign * mean - SURROGATE_OPTIMISM * spread  # an optimistic guess, minimised
        if hopeful >= self._best_cheaper(point):
            return (
                f"the surrogate expects {self.metric.metric} {mean:.3g} ± {spread:.2g}: a trained point at no "
                f"more cost is better"
            )
        return None


COST_SCREEN_MARGIN = 0.005  # of the task metric: below the seed spread of the tables' accuracies
SURROGATE_OPTIMISM = 1.0  # spreads (leave-one-out residual RMS) added to the surrogate's guess


class _Ridge:
    """Ridge regression of the final task metric on a point's features; its spread is the leave-one-out RMS."""

    def __init__(self, columns: list[tuple[str, Any]], weights: np.ndarray, mean: np.ndarray, spread: float):
        self.columns, self.weights, self.center, self.spread = columns, weights, mean, spread

    @staticmethod
    def columns_of(points: Sequence[Candidate]) -> list[tuple[str, Any]]:
        """One column per (knob, value) seen, one per cost (log) and one per score."""
        seen: dict[tuple[str, Any], None] = {}
        for p in points:
            for knob, value in p.params.items():
                seen.setdefault(("=" + knob, _plain(value)), None)
        costs = sorted({c for p in points for c in p.costs})
        scores = sorted(set.intersection(*(set(p.scores) for p in points))) if points else []
        return [*seen, *(("cost", c) for c in costs), *(("score", s) for s in scores)]

    @staticmethod
    def row(columns: list[tuple[str, Any]], p: Candidate) -> np.ndarray:
        out = np.zeros(len(columns) + 1)
        out[-1] = 1.0  # intercept
        for i, (kind, name) in enumerate(columns):
            if kind == "cost":
                out[i] = math.log1p(max(0.0, float(p.costs.get(name, 0.0))))
            elif kind == "score":
                out[i] = _squash(float(p.scores.get(name, 0.0)))
            else:
                out[i] = float(_plain(p.params.get(kind[1:])) == name)
        return out

    @classmethod
    def fit(cls, points: Sequence[Candidate], targets: Sequence[float], alpha: float = 1.0) -> _Ridge:
        columns = cls.columns_of(points)
        x = np.stack([cls.row(columns, p) for p in points])
        y = np.asarray(targets, dtype=float)
        center = x[:, :-1].mean(axis=0)
        scale = x[:, :-1].std(axis=0) + 1e-9
        x[:, :-1] = (x[:, :-1] - center) / scale
        penalty = alpha * np.eye(x.shape[1])
        penalty[-1, -1] = 0.0  # the intercept is not shrunk
        inverse = np.linalg.pinv(x.T @ x + penalty)
        weights = inverse @ x.T @ y
        hat = np.einsum("ij,jk,ik->i", x, inverse, x)  # leverage of each point
        loo = (y - x @ weights) / np.maximum(1e-6, 1.0 - hat)  # leave-one-out residuals, in closed form
        model = cls(columns, weights, np.stack([center, scale]), float(np.sqrt(np.mean(loo**2))))
        return model

    def predict(self, p: Candidate) -> tuple[float, float]:
        """(expected final task metric, spread) of ``p``."""
        x = self.row(self.columns, p)
        x[:-1] = (x[:-1] - self.center[0]) / self.center[1]
        return float(x @ self.weights), self.spread


def known_scores(scores: Mapping[str, float | None]) -> dict[str, float]:
    """The training-free scores that could be computed (a proxy gives None where it is not finite)."""
    return {k: float(v) for k, v in scores.items() if v is not None and math.isfinite(v)}


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, bool, int, float)) or value is None else str(value)


def _squash(value: float) -> float:
    """Training-free scores span orders of magnitude (synflow): a signed log keeps the regression sane."""
    return math.copysign(math.log1p(abs(value)), value) if math.isfinite(value) else 0.0


def screen_for(study: Study) -> Screen:
    """The screen of a study's strategy (one with no screens skips nothing)."""
    return Screen(strategy_of(study).screens, study.objectives, study.tuner.reduction_factor, study.search.proxy)
