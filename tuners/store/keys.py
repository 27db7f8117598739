"""The names lwnas stores its data under, on an Optuna study and its trials, and what may be stored.

Each sweep is a normal Optuna study (``optuna.load_study`` and optuna-dashboard open it). lwnas adds
user attributes under these fixed keys so the dashboard, ``lwnas status`` and ``lwnas export`` read the
same record (``TrialRecord``, ``tuners/store/record.py``): on the study, the study file and objective
metrics; on every trial, what the driver planned (one ``plan`` attribute: the adapted configuration, every
training setting, task, seed, static costs), one key per epoch's metrics, wall time, host and, on failure,
the reason. Feasibility goes through Optuna's constraint API (``Trial.set_constraint``).
"""

from __future__ import annotations

import json
from typing import Any

# study user attributes
STUDY_SPEC = "lwnas:study"  # the study file as a plain dict (name, task, objectives, space, ...)


STUDY_OBJECTIVES = "lwnas:objectives"  # [[metric, direction], ...] in Optuna's value order


STUDY_REJECTED = "lwnas:rejected"  # {"checked": n, "rejected": m, "reasons": {constraint: count}}


STUDY_VERSION = "lwnas:version"


# -- sweep budget and end (tuners/store/budget.py), confirmations (tuners/export/confirm.py), seed repeats --
STUDY_BUDGET = "lwnas:budget"  # the trial budget in force (the study file's, or as `--trials` set or raised it)


STUDY_BUDGET_CHANGES = "lwnas:budget_changes"  # [{"from": 20, "to": 40, "at": ISO time, "counted": 20}, ...]


STUDY_ENDED = "lwnas:ended"  # why the last driver ended: {"reason": ..., "detail": ..., "at": ..., "counted": n}


STUDY_SAMPLER_WINDOW = (
    "lwnas:sampler_window"  # finished trials tpe/gp learn from (null: all; tuners/driver/windowed_sampler.py)
)


STUDY_CONFIRMATIONS = "lwnas:confirmations"  # `lwnas confirm` runs (tuners/export/confirm.py), by trial number


SEED_OF = (
    "seed_of"  # trial attribute: the trial whose point this one retrains with another seed (tuners/fronts/seeds.py)
)


# -- end --
# trial user attributes
PLAN = "plan"  # the planned trial (tuners/store/record.py: what the worker trains) as one attribute: the keys below


# (the planned trial's fields; lwnas before the `plan` attribute wrote each as an attribute of its own, still read)
CONFIG = "config"  # the full ArchConfig as a dict, adapted to the task


TRAINING = "training"  # every training setting the trial runs with (seed, threads and epochs included)


TASK = "task"


TASK_OPTIONS = "task_options"


SEED = "seed"  # the trial's training seed (also in TRAINING)


COSTS = "costs"  # {"params": ..., "madds": ..., "memory": ...}


# (what happens to it)
EPOCH_PREFIX = "epoch:"  # epoch:0001, epoch:0002, ...: {"epoch": 1, "val_accuracy": ..., "wall_time": ...}


EPOCHS = "epochs"  # lwnas before per-epoch keys: the whole list, rewritten every epoch (still read)


WALL_TIME = "wall_time"


HOST = "host"


NODE = "node"  # the Ray node id the trial ran on


DEVICE = "device"  # the torch device the trial trained on, as its worker resolved it ("cpu", "cuda:0")


PACK = "pack"  # the Optuna trial numbers one Ray trial trained together (tuner.pack), this one among them


FAILURE = "failure"


OUTCOME = "outcome"  # an objectives.Outcome value: complete | infeasible | pruned | failed | interrupted


BUDGET_USED = "budget_used"  # epochs trained


SEED_CONFIG = "seed_config"  # name of the seed config the trial evaluates


REQUEUED_FROM = "requeued_from"  # number of the interrupted trial this one re-runs


RETRIED = "retried"  # attempts Ray re-ran after their worker or node died: [{"failure", "error", "epochs", "host"...}]


DEFAULT_STORAGE = "sqlite:///lwnas.db"


def epoch_key(epoch: int) -> str:
    """The user attribute holding one epoch's metrics: one small write per epoch, never a rewrite."""
    return f"{EPOCH_PREFIX}{epoch:04d}"


def epochs_of(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """A trial's per-epoch metrics in epoch order, from either layout (one key per epoch, or the old list)."""
    keyed = sorted(
        (int(k[len(EPOCH_PREFIX) :]), v)
        for k, v in attrs.items()
        if k.startswith(EPOCH_PREFIX) and k[len(EPOCH_PREFIX) :].isdigit()
    )
    return [v for _, v in keyed] if keyed else list(attrs.get(EPOCHS, []))


def plain(value: Any) -> Any:
    """JSON-safe copy (user attributes must be JSON serialisable)."""
    return json.loads(json.dumps(value, default=lambda o: list(o) if isinstance(o, tuple) else str(o)))


# why mo-asha stopped the trial: {"rung", "rung_trials", "kept", "dominated_by", "better_in", "values"}
PRUNED_BY = "pruned_by"
# why the search strategy's screen skipped a point (tuners/driver/strategies.py), and the trial whose
# values a skipped duplicate was told with
SCREENED_BY = "screened_by"
SCREENED_AS = "screened_as"
