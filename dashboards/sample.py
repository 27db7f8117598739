"""A synthetic sweep written straight into storage, for trying the dashboard, its tests and its bench.

The trials carry exactly the record a real sweep writes (``tuners.store.keys``, Optuna constraints,
the outcome mapping of ``tuners.driver.searcher``), but nothing is trained: configurations are drawn from a
space derived from the knob table (``sample_space``) and resolved by ``ArchConfig``, the metrics
come from a made-up formula, and the trials are written in batches (``TrialStore.insert``), so 5,000
trials take seconds and 100,000 a few minutes (docs/performance.md).

    python -m dashboards.sample sqlite:///demo.db --trials 300
    lwnas dashboard --storage sqlite:///demo.db
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from searchspace.convert import optuna_search_space
from searchspace.knobs import ARCH
from searchspace.space import SearchSpace
from searchspace.space_check import checked_space
from searchspace.study import Objective
from searchspace.training import TrainSettings
from tuners.fronts.objectives import encoded_objectives, worst_value
from tuners.store import keys
from tuners.store.connection import open_storage
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord, planned_attrs, trial_seed, trial_training
from tuners.store.trial_store import TrialStore

MAX_PARAMS = 80_000  # the constraint: larger points are infeasible and never trained
EPOCHS = 10
OBJECTIVES = {  # the objectives a sample study may have, by metric
    "accuracy": Objective("accuracy", "maximize"),
    "params": Objective("params", "minimize"),
    "madds": Objective("madds", "minimize"),
}
FAMILY = "encoder"
# Knobs the sample draws over a range of its own: the quickstart study's widths, depths and learning rate
# (studies/quickstart.yaml), T-EMDE's sketch against mean pooling, and ACORT's sharing by pattern family.
RANGES: dict[str, Any] = {
    "d_model": {"choice": [32, 64]},
    "heads": 4,
    "layers": {"int": [1, 2]},
    "groups": {"choice": [2, 4]},
    "layer_sharing": {"choice": ["none", "albert"]},
    "pooling": {"choice": ["mean", "sketch"]},
    "sketch_n": {"int": [2, 8]},
    "sketch_k": {"choice": [4, 8]},
    "lr": {"float": [5e-4, 5e-3], "log": True},
}
DIGITS = {"grid": [4, 4], "patch_features": 4, "num_classes": 10}  # the digits task's 4x4 grid of 2x2 patches


def sample_space(family: str = FAMILY) -> dict[str, Any]:
    """The sample's ``space`` mapping, derived from the knob table: every true/false and choice knob of
    ``family`` over its whole domain (so a knob added to the table is drawn too), the ``RANGES`` above, and
    the digits task's input sizes. Every other knob keeps its default, and every knob is in each record."""
    space: dict[str, Any] = {}
    for knob in ARCH:
        if knob.name == "family" or knob.input_size or family not in knob.families:
            continue
        if knob.kind == "bool":
            space[knob.name] = {"choice": [True, False]}
        elif knob.kind == "choice":
            space[knob.name] = {"choice": list(knob.choices)}
    return {**space, **RANGES, **DIGITS}


# Points are drawn from it and resolved through ArchConfig, so every knob of the table is in each trial's
# record, as in a real sweep's; the space is checked like a study's (every point valid).
SPACE: SearchSpace = checked_space(sample_space(), FAMILY)
DISTRIBUTIONS = optuna_search_space(SPACE)
STUDY_SEED = 0
# what trial_training reads of the study: the sample study's training section, epochs and seed
SETTINGS = SimpleNamespace(training={"batch_size": 64, "threads": 1}, budget=SimpleNamespace(epochs=EPOCHS))
FAILURES = ("loss became NaN at epoch {e}", "the trial's worker died (see Ray's log)", "out of memory at epoch {e}")


def study_spec(name: str, objectives: tuple[str, ...]) -> dict[str, Any]:
    """The study file a real sweep would have stored (``lwnas:study``)."""
    return {
        "name": name,
        "description": "synthetic trials (dashboards.sample): nothing was trained",
        "task": "digits",
        "objectives": [{"metric": m, "direction": OBJECTIVES[m].direction} for m in objectives],
        "constraints": {"params": {"max": MAX_PARAMS}},
        "budget": {"trials": 16, "epochs": EPOCHS},
        "tuner": {"sampler": "nsga2", "scheduler": "none", "max_concurrent": 2, "seed": STUDY_SEED},
        "training": SETTINGS.training,
        "space": {"d_model": {"choice": [32, 64]}},
    }


def draw_params(rng: np.random.Generator) -> dict[str, Any]:
    """Active params of one point of the sample space (conditional knobs only where active)."""
    return SPACE.sample(rng)


def config_of(p: dict[str, Any]) -> dict[str, Any]:
    """The full ArchConfig dict of ``p`` (what ``tuners.driver.searcher`` stores under ``config``)."""
    return SPACE.resolve(p).config.to_dict()


def costs_of(p: dict[str, Any]) -> dict[str, float]:
    """Made-up but plausible parameter and MAdds counts (the shape of the real cost model)."""
    d, g = p["d_model"], p.get("groups", 1)
    shared_groups = g if p.get("weight_sharing") else 1
    projections = 3 if p.get("attention_sharing", "none") == "none" else 2  # ACORT: qk / kv share one
    attention = d * d + projections * d * d // ((g if p["g_mha"] else 1) * (shared_groups if p["g_mha"] else 1))
    ffn = 4 * d * d + 4 * d * d // (g if p["g_ffn"] else 1)
    distinct = 1 if p["layer_sharing"] == "albert" else p["layers"]
    sketch = d * p["sketch_n"] * p["sketch_k"] * 8 if p["pooling"] == "sketch" else 0
    params = distinct * (attention + ffn + 4 * d) + 4 * d + 10 * d + sketch
    madds = 16 * p["layers"] * (attention + ffn) + 16 * sketch
    return {"params": int(params), "madds": int(madds)}


def accuracy_of(p: dict[str, Any], params: float, rng: np.random.Generator) -> float:
    lr_penalty = 0.04 * abs(math.log(p["lr"] / 2e-3))
    acc = 0.93 - 0.45 * math.exp(-params / 30_000) - lr_penalty - 0.02 * (p["attention"] == "coupled")
    return float(np.clip(acc + rng.normal(0, 0.03), 0.1, 0.99))


def learning_curve(final: float, epochs: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Per-epoch records like ``tuners.driver.searcher`` stores; the last val_accuracy is ``final``."""
    out, wall = [], 0.0
    for e in range(1, epochs + 1):
        progress = 1 - math.exp(-e / 2.5)
        epoch_time = float(rng.uniform(0.2, 0.6))
        wall += epoch_time
        acc = final if e == EPOCHS else float(0.1 + (final - 0.1) * progress / (1 - math.exp(-EPOCHS / 2.5)))
        out.append(
            {
                "epoch": e,
                "train_loss": round(2.3 * (1 - 0.8 * progress) + rng.normal(0, 0.02), 6),
                "val_accuracy": acc,
                "val_loss": round(2.2 * (1 - 0.75 * progress), 6),
                "lr": 2e-3,
                "epoch_time": epoch_time,
                "samples_per_s": 1437 / epoch_time,
                "wall_time": wall,
            }
        )
    return out


def make_trial(
    number: int, objectives: tuple[str, ...], rng: np.random.Generator, start: dt.datetime, outcome: str | None = None
) -> optuna.trial.FrozenTrial:
    """One finished trial with lwnas's full record; ``outcome`` forces its outcome."""
    p = draw_params(rng)
    costs = costs_of(p)
    violation = float(costs["params"] - MAX_PARAMS)
    if outcome is None:
        u = rng.random()
        outcome = (
            Outcome.INFEASIBLE
            if violation > 0
            else Outcome.FAILED
            if u < 0.05
            else Outcome.PRUNED
            if u < 0.15
            else Outcome.COMPLETE
        )
    outcome = Outcome(outcome)
    point = SPACE.resolve(p)
    # the record the driver plans (tuners/driver/searcher.py): every training setting, the task and the seed
    seed = trial_seed(STUDY_SEED, number)
    training = {**TrainSettings().to_dict(), **trial_training(SETTINGS, point.training, seed, 1)}
    planned_costs: dict[str, float | str] = dict(costs)
    record = TrialRecord(
        number=number, config=point.config.to_dict(), training=training, task="digits", seed=seed, costs=planned_costs
    )
    attrs: dict[str, Any] = {**planned_attrs(record), keys.OUTCOME: outcome.value, keys.HOST: "sample-host"}
    if number == 0:
        attrs[keys.SEED_CONFIG] = "baseline"
    state, values, epochs = TrialState.COMPLETE, None, []
    if outcome == Outcome.INFEASIBLE:
        attrs[keys.FAILURE] = f"breaks params <= {MAX_PARAMS:g}"
        values = [costs[m] if m in costs else worst_value(OBJECTIVES[m]) for m in objectives]
    else:
        final = accuracy_of(p, costs["params"], rng)
        trained = {
            Outcome.COMPLETE: EPOCHS,
            Outcome.PRUNED: int(rng.integers(1, 4)),
            Outcome.FAILED: int(rng.integers(0, 5)),
        }[outcome]
        epochs = learning_curve(final, trained, rng)
        attrs.update({keys.epoch_key(e["epoch"]): e for e in epochs})
        attrs[keys.BUDGET_USED] = len(epochs)
        if epochs:
            attrs[keys.WALL_TIME] = epochs[-1]["wall_time"]
        if outcome == Outcome.COMPLETE:
            values = [costs[m] if m in costs else epochs[-1][f"val_{m}"] for m in objectives]
        else:
            state = TrialState.PRUNED if outcome == Outcome.PRUNED else TrialState.FAIL
        if outcome == Outcome.FAILED:
            attrs[keys.FAILURE] = str(rng.choice(FAILURES)).format(e=len(epochs) + 1)
    trial = optuna.trial.create_trial(
        state=state,
        values=values,
        params=p,
        distributions={k: DISTRIBUTIONS[k] for k in p},
        user_attrs=keys.plain(attrs),
        constraints={"params": violation},
    )
    trial.datetime_start = start
    trial.datetime_complete = start + dt.timedelta(seconds=attrs.get(keys.WALL_TIME) or 0.01)
    return trial


def seed_study(
    storage: Any,
    name: str = "sample",
    trials: int = 200,
    seed: int = 0,
    objectives: tuple[str, ...] = ("accuracy", "params"),
    outcome: str | None = None,
) -> optuna.Study:
    """Create study ``name`` in ``storage`` (a URL or Optuna storage) with ``trials`` synthetic trials.

    Args:
        storage: where to write (``sqlite:///demo.db``, ``postgresql://...`` or an Optuna storage).
        name: the study's name.
        trials: how many trials (0 gives an empty study).
        seed: the random seed; one seed always writes the same trials.
        objectives: metrics among accuracy, params and madds.
        outcome: give every trial this outcome (complete, infeasible, pruned or failed).
    """
    if isinstance(storage, str):
        storage = open_storage(storage, create=True)
    chosen = [OBJECTIVES[m] for m in objectives]
    ot_study = optuna.create_study(study_name=name, storage=storage, directions=[o.direction for o in chosen])
    with warnings.catch_warnings():  # experimental in Optuna 5 (as in tuners.driver.sweep)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        ot_study.set_metric_names(list(objectives))
    ot_study.set_user_attr(keys.STUDY_SPEC, study_spec(name, objectives))
    ot_study.set_user_attr(keys.STUDY_OBJECTIVES, encoded_objectives(chosen))
    ot_study.set_user_attr(keys.STUDY_VERSION, "sample")
    rng = np.random.default_rng(seed)
    start = dt.datetime(2026, 1, 1, 9, 0, 0)
    # batched INSERTs (TrialStore.insert): Study.add_trials commits each trial alone, 19 ms a trial on SQLite
    TrialStore.of(storage, name).insert(
        [make_trial(i, objectives, rng, start + dt.timedelta(seconds=3 * i), outcome) for i in range(trials)],
    )
    return ot_study


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("storage", help="storage URL, e.g. sqlite:///demo.db")
    parser.add_argument("--name", default="sample")
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--objectives", default="accuracy,params", help="comma-separated: accuracy, params, madds")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    seed_study(args.storage, args.name, args.trials, args.seed, tuple(args.objectives.split(",")))
    print(f"wrote {args.trials} trials to study {args.name!r}")


if __name__ == "__main__":
    main()
