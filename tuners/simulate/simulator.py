"""Replays a study's sweep against a table (``lwnas simulate``): the sampler, the strategy's screens and its
scheduler run for real; training is looked up.

A replay is a discrete-event run of what ``lwnas sweep`` does with ``max_concurrent`` workers: whenever a
worker is free the study's Optuna sampler proposes a point (the driver's ``make_sampler``, seeded with the
study's seed plus the replay's), the strategy's screen (``tuners.driver.strategies``) may skip it, and a
point it keeps trains by replaying one recorded run of its architecture from the table: each epoch takes the
run's recorded seconds and reports the run's recorded validation metric, with the exact costs, to the same
scheduler object the driver would use (mo-asha is ``tuners.driver.mo_asha.MOASHA`` itself). The replay's
seed picks which recorded seed a trial replays (the next one for a repeat of an architecture).

Progress is measured as the driver's results are: the hypervolume of the architectures trained to their
full budget, each at its table value (the seed mean of its final metric, so noise in the replayed run
decides what is trained but not what it is worth), from the table's reference point, against the training
compute spent so far (the recorded seconds of every epoch trained, pruned trials' included).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from searchspace.convert import optuna_suggest
from searchspace.errors import LwnasError
from searchspace.study import Study
from tuners.driver.samplers import make_sampler
from tuners.driver.strategies import SCREEN_PATIENCE, Candidate, known_scores, scheduler_of, screen_for
from tuners.driver.trainable import NUMBER
from tuners.fronts.objectives import worst_values
from tuners.simulate.table import Entry, Run, Table, params_key

STOP = "STOP"  # Ray's TrialScheduler.STOP (compared by value: no Ray import on this path)


class SimulationError(LwnasError, ValueError):
    """A study the table cannot replay (the message names the field and the rule)."""


@dataclass(frozen=True)
class Step:
    """The state of a replay after a trial ended."""

    compute_s: float  # recorded training seconds spent so far
    epochs: int  # epochs trained so far
    wall_s: float  # the simulated clock (concurrent trials overlap)
    trials: int  # trials that used a place in the budget
    hypervolume: float


@dataclass
class Replay:
    """One simulated sweep: its steps, what it trained, and why it ended."""

    seed: int
    steps: list[Step] = field(default_factory=list)
    complete: int = 0
    pruned: int = 0
    failed: int = 0
    screened: int = 0
    infeasible: int = 0
    ended: str = ""
    found: list[str] = field(default_factory=list)  # architectures trained in full, in order

    def compute_to(self, hypervolume: float) -> float | None:
        """Training seconds spent when the hypervolume first reached ``hypervolume`` (None: never)."""
        return next((s.compute_s for s in self.steps if s.hypervolume >= hypervolume), None)

    def epochs_to(self, hypervolume: float) -> int | None:
        return next((s.epochs for s in self.steps if s.hypervolume >= hypervolume), None)

    def hypervolume_at(self, compute_s: float) -> float:
        """The hypervolume reached within ``compute_s`` training seconds."""
        reached = [s.hypervolume for s in self.steps if s.compute_s <= compute_s]
        return reached[-1] if reached else 0.0


@dataclass
class _Running:
    number: int
    point: Candidate
    entry: Entry
    run: Run
    trial: Any
    done: int = 0  # epochs reported


@dataclass
class _SimTrial:
    """What a Ray Tune scheduler reads of a trial."""

    trial_id: str
    config: dict[str, Any]


def check_replayable(study: Study, table: Table) -> None:
    """Raise SimulationError when ``table`` cannot stand for ``study``'s training."""
    problems = []
    table_metrics = set(table.task_metrics)
    for o in study.objectives:
        if o.is_cost and o.metric not in ("params", "madds", "memory"):
            problems.append(f"objectives: {o.metric} is not in a table (it holds params, madds, memory)")
        elif not o.is_cost and o.metric not in table_metrics:
            problems.append(f"objectives: task metric {o.metric} is not in the table ({', '.join(table_metrics)})")
    if study.budget.epochs != table.epochs:
        problems.append(f"budget.epochs: must equal the table's epochs ({table.epochs}), got {study.budget.epochs}")
    if study.budget.front_seeds != 1:
        problems.append("budget.front_seeds: a replay trains each point once; use 1")
    if study.task != table.task:
        problems.append(f"task: the table was built on {table.task}, the study names {study.task}")
    for c in study.constraints:
        if c.metric not in ("params", "madds", "memory"):
            problems.append(f"constraints.{c.metric}: a table holds params, madds and memory only")
    if problems:
        raise SimulationError("; ".join(problems))


def replay(
    study: Study,
    table: Table,
    seed: int = 0,
    *,
    trials: int | None = None,
    max_compute_s: float | None = None,
    stop_at: float | None = None,
    lacking: str = "error",
) -> Replay:
    """Replay ``study``'s sweep against ``table`` once.

    Args:
        study: the study (its sampler, strategy, concurrency, objectives, constraints, budget).
        table: a table of the study's space and task (``check_replayable``).
        seed: the replay's seed: added to the study's sampler seed, and picks the recorded seed each trial replays.
        trials: the trial budget (default: the study's ``budget.trials``).
        max_compute_s: end once this many training seconds are spent.
        stop_at: end once the hypervolume reaches this.
        lacking: what a proposed point the table lacks is: ``error`` (SimulationError), or ``outside`` (a table
            built for part of the space: the point is told as infeasible and costs nothing, as outside a constraint).
    """
    check_replayable(study, table)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    seeded = replace(study, tuner=replace(study.tuner, seed=(study.tuner.seed + seed) % 2**32))
    ot = optuna.create_study(directions=[o.direction for o in study.objectives], sampler=make_sampler(seeded))
    for params in study.seed_configs.values():
        ot.enqueue_trial(params)
    suggest = optuna_suggest(study.space)
    scheduler = scheduler_of(study)
    screen = screen_for(study)
    ref = table.reference_point()
    budget = study.budget.trials if trials is None else trials
    out = Replay(seed=seed)
    replays: dict[str, int] = {}  # architecture -> times replayed
    running: list[tuple[float, int, _Running]] = []
    found: list[Entry] = []
    clock = compute = 0.0
    epochs = launched = 0
    hv = 0.0

    def launch() -> bool:
        """Ask until a point is worth training and start it; False when nothing is left to train."""
        nonlocal launched
        if screen.active and len(screen.started) >= len(table.entries):
            out.ended = "every architecture of the table is training or trained"
            return False
        for _ in range(SCREEN_PATIENCE):
            ot_trial = ot.ask()
            params = suggest(ot_trial)
            entry = _entry(table, params, lacking)
            if entry is None:
                ot.tell(ot_trial, state=TrialState.FAIL)  # outside the table's part of the space
                out.infeasible += 1
                continue
            scores = known_scores(entry.scores) if screen.wants_scores else {}  # as the driver computes them
            point = Candidate(entry.key, params, entry.costs, scores)
            if any(c.violation(float(entry.costs[c.metric])) > 0 for c in study.constraints):
                ot.tell(ot_trial, worst_values(study.objectives, entry.costs))
                out.infeasible += 1
                continue
            reason = screen.skip(point) if screen.active else None
            if reason is not None:
                out.screened += 1
                ot.tell(ot_trial, screen.known_values(point) or worst_values(study.objectives, entry.costs))
                continue
            screen.start(point)
            runs = entry.runs
            if not runs:
                raise SimulationError(f"table entry {entry.key} has no run to replay")
            k = replays.get(entry.key, 0)
            replays[entry.key] = k + 1
            trial = _SimTrial(str(ot_trial.number), {NUMBER: ot_trial.number})
            item = _Running(ot_trial.number, point, entry, runs[(seed + k) % len(runs)], trial)
            heapq.heappush(running, (clock + item.run.wall_s[0], ot_trial.number, item))
            launched += 1
            return True
        out.ended = f"{SCREEN_PATIENCE} proposals in a row were not worth training"
        return False

    exhausted = False
    while True:
        while not exhausted and len(running) < study.tuner.max_concurrent and launched < budget:
            exhausted = not launch()
        if not running:
            break
        clock, _, item = heapq.heappop(running)
        item.done += 1
        compute += item.run.wall_s[item.done - 1]
        epochs += 1
        result: dict[str, Any] = {"epoch": item.done, **item.entry.costs}
        for metric, curve in item.run.metrics.items():
            result[f"val_{metric}"] = curve[item.done - 1]
        decision = scheduler.on_trial_result(None, item.trial, result) if scheduler is not None else "CONTINUE"
        if item.done == study.budget.epochs:
            values = [item.entry.costs[o.metric] if o.is_cost else result[f"val_{o.metric}"] for o in study.objectives]
            ot.tell(item.number, values)
            screen.finish(item.point, values)
            out.complete += 1
            if item.entry.key not in out.found:
                out.found.append(item.entry.key)
                found.append(item.entry)
                hv = table.hypervolume_of(found) if all(math.isfinite(r) for r in ref) else 0.0
        elif item.done == item.run.epochs:  # the recorded run failed here
            ot.tell(item.number, state=TrialState.FAIL)
            screen.finish(item.point, None)
            out.failed += 1
        elif decision == STOP:
            ot.tell(item.number, state=TrialState.PRUNED)
            screen.finish(item.point, None)
            out.pruned += 1
        else:
            heapq.heappush(running, (clock + item.run.wall_s[item.done], item.number, item))
            continue
        out.steps.append(Step(compute, epochs, clock, out.complete + out.pruned + out.failed, hv))
        if stop_at is not None and hv >= stop_at:
            out.ended = "reached the hypervolume asked for"
            break
        if max_compute_s is not None and compute >= max_compute_s:
            out.ended = f"spent {max_compute_s:g} s of training"
            break
    out.ended = out.ended or f"{launched} of {budget} trials done"
    return out


def _entry(table: Table, params: dict[str, Any], lacking: str = "error") -> Entry | None:
    try:
        return table.entry(params)
    except KeyError:
        if lacking == "outside":
            return None
        raise SimulationError(
            f"the sampler proposed {params_key(params)}, which the table does not hold: the study's space must be "
            f"the table's (`space` of {table.study})"
        ) from None


def replays(study: Study, table: Table, seeds: int, **limits: Any) -> list[Replay]:
    """``seeds`` replays (seeds 0 .. seeds-1) of ``study`` against ``table``."""
    return [replay(study, table, s, **limits) for s in range(seeds)]


def summary(runs: list[Replay], table: Table, points: int = 20) -> dict[str, Any]:
    """Hypervolume against compute over the replays: median and interquartile range at ``points`` budgets."""
    true_hv = table.true_hypervolume()
    top = max((r.steps[-1].compute_s for r in runs if r.steps), default=0.0)
    grid = [top * (i + 1) / points for i in range(points)]
    curve = []
    for c in grid:
        values = np.array([r.hypervolume_at(c) for r in runs]) / (true_hv or 1.0)
        q1, med, q3 = np.percentile(values, [25, 50, 75])
        curve.append({"compute_s": round(c, 3), "median": round(med, 4), "q1": round(q1, 4), "q3": round(q3, 4)})
    to99 = [r.compute_to(0.99 * true_hv) for r in runs]
    reached = [c for c in to99 if c is not None]
    return {
        "seeds": len(runs),
        "true_hypervolume": true_hv,
        "hypervolume_fraction": curve,  # of the true front's
        "compute_to_99": _spread(reached) if len(reached) == len(runs) else None,
        "reached_99": len(reached),
        "trials": _spread([r.complete + r.pruned + r.failed for r in runs]),
        "screened": _spread([r.screened for r in runs]),
        "pruned": _spread([r.pruned for r in runs]),
        "final_fraction": _spread([(r.steps[-1].hypervolume if r.steps else 0.0) / (true_hv or 1.0) for r in runs]),
    }


def _spread(values: list[float]) -> dict[str, float]:
    q1, med, q3 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3)}
