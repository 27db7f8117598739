"""The Ray Tune trainable: one trial trains one point of a study and reports every epoch.

Ray runs this function in a worker process (on any node of a cluster). It receives the params the
searcher suggested plus the trial's number, rebuilds the study from the spec that travels with the
job, trains with the shared loop and reports each epoch's validation metrics. A deterministic
training failure (non-finite loss, divergence, out of memory) is reported as the trial's outcome and
not retried; any other exception is reported and re-raised so Ray retries it (``max_failures``).
"""

from __future__ import annotations

import socket
import traceback
from typing import Any

# Keys the searcher adds to a trial's config next to the params.
NUMBER = "_lwnas_number"
SEED = "_lwnas_seed"

_cache: dict[tuple, Any] = {}  # per worker process: study, task and data survive actor reuse


def _study(spec: dict):
    from searchspace.study import study_from_dict

    from .study_check import task_family

    key = ("study", repr(spec))
    if key not in _cache:
        _cache[key] = study_from_dict(spec, task_family=task_family, check_space=False)
    return _cache[key]


def _task_and_data(study, seed: int):
    from .study_check import make_task

    key = ("task", study.task, repr(study.task_options), seed)
    if key not in _cache:
        task = make_task(study)
        _cache[key] = (task, task.load(seed=seed))
    return _cache[key]


def trial_seed(study_seed: int, number: int) -> int:
    """The training seed of trial ``number``: distinct per trial, reproducible from the study."""
    return study_seed + number


def trial_training(study, point_training: dict[str, Any], seed: int, cpus: float) -> dict[str, Any]:
    """The training settings a trial runs with; an export writes the same, so ``lwnas train`` reproduces it.

    Threads default to the trial's Ray CPU reservation: on CPU the thread count can change the order of
    floating-point sums, and with it the last digits of the result.
    """
    return {"threads": max(1, int(cpus)), **study.training, **point_training,
            "epochs": study.budget.epochs, "seed": seed}


def params_of(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if not k.startswith("_lwnas")}


def run_trial(config: dict[str, Any], spec: dict[str, Any], cpus: float = 1.0) -> None:
    """Train one point; reports ``{"epoch", "val_<metric>", ...}`` to Ray Tune every epoch."""
    from ray import tune

    from trainers.loop import TrainingError, TrainSettings, train
    from trainers.tasks.base import DATA_SEED

    import ray

    host = socket.gethostname()
    node = ray.get_runtime_context().get_node_id()  # tells apart two nodes on one host
    study = _study(spec)
    point = study.space.resolve(params_of(config))
    settings = TrainSettings.from_dict(trial_training(study, point.training, int(config.get(SEED, 0)), cpus))
    task, data = _task_and_data(study, seed=DATA_SEED)  # the data split is fixed; the seed varies the training
    try:
        train(point.config, task, settings, callback=lambda r: tune.report({**r, "host": host, "node": node}),
              progress=False, data=data)
    except TrainingError as exc:
        tune.report({"epoch": exc.epoch, "lwnas_failed": str(exc), "host": host, "node": node})
    except Exception as exc:
        tune.report({"lwnas_error": f"{type(exc).__name__}: {exc}", "host": host, "node": node,
                     "lwnas_traceback": traceback.format_exc(limit=8)})
        raise
