"""The Ray Tune trainable: one trial trains its record and reports every epoch.

Ray runs this function in a worker process (on any node of a cluster). The trial's config carries
the record the driver planned (``tuners/store/record.py``): the adapted configuration, every training
setting, the task and the costs. The worker builds that configuration and trains it with those
settings on that task; it never reads the study file, resolves params, adapts or costs a
configuration, so what storage holds is what ran. Its path goes one way down the packages:
``tuners`` (this file) -> ``trainers`` (task registry, training loop) -> ``searchspace`` (models).

Its first epoch's report says what it built (configuration, parameter count of the model, training
settings; Ray writes it to the trial's ``result.json``), which a test compares with the stored
record. A deterministic training failure (non-finite loss, divergence, out of memory) is reported as
the trial's outcome and not retried; any other exception is reported and re-raised so Ray retries it
(``max_failures``).
"""

from __future__ import annotations

import json
import socket
import traceback
from collections.abc import Callable
from typing import Any

from tuners.store.record import TrialRecord

# Keys the searcher puts in a Ray trial's config next to the params.
NUMBER = "_lwnas_number"
RECORD = "_lwnas_record"  # TrialRecord.for_worker(): all the worker gets to know
# the ``module:Class`` task plugins the driver's command line allowed (--allow-plugin): a worker imports one
# only when its driver's user allowed it, as the driver itself does (trainers/tasks/registry.py)
ALLOWED_PLUGINS = "_lwnas_allowed_plugins"
BUILT = "built"  # in the first epoch's report: what the worker built (Ray keeps it in result.json)

_cache: dict[tuple, Any] = {}  # per worker process: tasks and their data survive actor reuse


def _task_and_data(name: str, options: dict[str, Any]):
    """The task a record names, built through the task registry, and its data (the split is fixed)."""
    from trainers.tasks import resolve_task
    from trainers.tasks.base import DATA_SEED

    key = (name, json.dumps(options, sort_keys=True))
    if key not in _cache:
        task = resolve_task(name, **options)
        _cache[key] = (task, task.load(seed=DATA_SEED))  # the seed varies the training, not the split
    return _cache[key]


def train_record(record: TrialRecord, report: Callable[[dict[str, Any]], None]) -> None:
    """Train ``record`` as planned, calling ``report`` after every epoch; a training failure is reported.

    The first epoch's report also carries ``built``: what this worker built and trains (configuration,
    parameters counted on its model, training settings, task), for the record's readers to check.
    Raises whatever is not a training failure (Ray retries the trial).
    """
    from searchspace import ArchConfig
    from trainers.loop import TrainingError, TrainSettings, fit

    config = ArchConfig.from_dict(record.config)
    settings = TrainSettings.from_dict(record.training)
    task, data = task_and_data(record)

    epoch = epoch_reporter(record, config, settings, report)
    try:
        fit(
            config,
            task,
            settings,
            callback=epoch,
            progress=False,
            data=data,
            madds=_int_or_none(record.costs.get("madds")),
        )
    except TrainingError as exc:
        report({"epoch": exc.epoch, "lwnas_failed": str(exc)})


def epoch_reporter(
    record: TrialRecord, config: Any, settings: Any, report: Callable[[dict[str, Any]], None]
) -> Callable[[dict[str, Any]], None]:
    """The epoch callback of one trial's training: its report with the planned costs, and ``built`` at epoch 1."""
    # The planned static costs ride on every report: mo-asha ranks a rung on the study's objectives, and
    # a cost objective the training loop does not measure (memory, latency) is known only from the plan.
    planned = {k: v for k, v in record.costs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def epoch(result: dict[str, Any]) -> None:
        result = {**planned, **result}  # what this worker counted (params) wins over the plan
        if result["epoch"] == 1:  # the model exists now and its parameters are counted
            result = {
                **result,
                BUILT: {
                    "config": config.to_dict(),
                    "params": result["params"],
                    "training": settings.to_dict(),
                    "task": record.task,
                    "task_options": record.task_options,
                },
            }
        report(result)

    return epoch


def task_and_data(record: TrialRecord):
    """The task and data of a record (cached per worker process)."""
    if record.task is None:  # the driver plans every trial it hands a worker with its task
        raise ValueError(f"trial {record.number}: its record names no task")
    return _task_and_data(record.task, record.task_options)


def where_this_runs() -> dict[str, str]:
    """The host and Ray node of this worker: every report carries them."""
    import ray

    return {"host": socket.gethostname(), "node": ray.get_runtime_context().get_node_id()}


def run_trial(config: dict[str, Any]) -> None:
    """Train the record in ``config``; reports ``{"epoch", "val_<metric>", ...}`` to Ray Tune every epoch."""
    from ray import tune

    from trainers.tasks.registry import allow_plugins

    allow_plugins(config.get(ALLOWED_PLUGINS, ()))
    where = where_this_runs()  # the node tells apart two nodes on one host
    try:
        train_record(TrialRecord.from_worker(config[RECORD]), lambda r: tune.report({**r, **where}))
    except Exception as exc:
        tune.report(
            {"lwnas_error": f"{type(exc).__name__}: {exc}", **where, "lwnas_traceback": traceback.format_exc(limit=8)}
        )
        raise


def _int_or_none(value: float | str | None) -> int | None:
    return None if value is None else int(value)
