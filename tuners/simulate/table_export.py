"""A finished grid sweep (``tuner: {sampler: grid}``) in the trial store, turned into a table
(``tuners/simulate/table.py``): what ``lwnas table export NAME -o FILE`` writes.

Trials are grouped by their params (each group is one architecture, its trials its seeds; grouping by
params rather than by ``seed_of`` keeps a re-queued trial with its point). Each architecture gets its exact
costs from ``trainers.cost`` (parameters, MAdds and peak training memory, whatever the study's objectives)
and its training-free scores from ``trainers.proxies`` at the seed of its first trial; each completed trial
becomes a run: its seed, each task objective's validation value per epoch and each epoch's seconds.
A grid point with no trial, or with fewer completed trials than the study's ``grid_seeds``, is refused
unless ``partial`` (the table then says how many points it holds of the grid's).
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

from searchspace import ArchConfig
from searchspace.grid import grid_points
from searchspace.study import Study
from tuners.simulate.table import Entry, Run, Table, params_key
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord


class TableExportError(ValueError):
    """The study cannot become a table (not a grid sweep, or not finished); the message says what to do."""


def table_from_records(
    study: Study,
    records: list[TrialRecord],
    proxies: bool = True,
    partial: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Table:
    """The table of a grid sweep of ``study`` whose trials are ``records``.

    Args:
        study: the study the sweep recorded (its space, objectives, epochs, ``grid_seeds``).
        records: every trial's record.
        proxies: compute the training-free scores (``trainers.proxies``; about 0.1 s per architecture).
        partial: export a sweep that has not trained every point with every seed.
        progress: called with (architectures done, total) as they are costed and scored.
    """
    if study.tuner.sampler != "grid":
        raise TableExportError(f"study {study.name!r} is not a grid sweep (its sampler is {study.tuner.sampler})")
    groups: dict[str, list[TrialRecord]] = {}
    for record in sorted(records, key=lambda r: r.number):
        if record.outcome != Outcome.INTERRUPTED:  # its re-queued copy is the trial that ran
            groups.setdefault(params_key(record.params), []).append(record)
    grid = [params_key(p) for p in grid_points(study.space)]
    missing = [k for k in grid if len(_complete(groups.get(k, []))) < study.tuner.grid_seeds]
    if missing and not partial:
        raise TableExportError(
            f"{len(missing)} of {len(grid)} grid points lack a completed trial per seed "
            f"({study.tuner.grid_seeds}); finish the sweep with `lwnas resume {study.name}`, or export it as it "
            "is with --partial"
        )
    task, data = _task_and_data(study) if proxies else (None, None)
    entries = []
    keys = [k for k in grid if k in groups]
    for i, key in enumerate(keys):
        entries.append(_entry(groups[key], study, task, data))
        if progress is not None:
            progress(i + 1, len(keys))
    return Table(
        task=study.task,
        study=study.name,
        family=study.family,
        space=study.space.to_dict(),
        objectives=study.objectives,
        epochs=study.budget.epochs,
        seeds=study.tuner.grid_seeds,
        entries=tuple(entries),
        task_options=dict(study.task_options),
        training=dict(study.training),
        built={
            "grid_points": len(grid),
            "complete_points": len(grid) - len(missing),
            "trials": sum(len(g) for g in groups.values()),
            "failed_trials": sum(r.outcome == Outcome.FAILED for g in groups.values() for r in g),
            "machine": f"{platform.machine()}, {platform.system()}",
        },
    )


def _complete(records: list[TrialRecord]) -> list[TrialRecord]:
    return [r for r in records if r.outcome == Outcome.COMPLETE]


def _task_and_data(study: Study) -> tuple[Any, Any]:
    from trainers.tasks import resolve_task
    from trainers.tasks.base import DATA_SEED

    task = resolve_task(study.task, **study.task_options)
    return task, task.load(seed=DATA_SEED)


def _entry(records: list[TrialRecord], study: Study, task: Any, data: Any) -> Entry:
    """One architecture from its trials (the first one's configuration: all of them train the same)."""
    from trainers.cost import cost

    first = records[0]
    config = ArchConfig.from_dict(first.config)  # as the worker built it: already adapted to the task
    report = cost(config, memory=True)
    costs: dict[str, float] = {"params": report.params, "madds": report.madds, "memory": report.memory_bytes or 0}
    scores: dict[str, Any] = {}
    if task is not None:
        from trainers.proxies import proxy_scores

        scores = proxy_scores(config, task, data, seed=int(first.seed or 0))
    metrics = [o.metric for o in study.objectives if not o.is_cost]
    runs = tuple(
        Run(
            seed=int(r.seed if r.seed is not None else r.number),
            metrics={m: [float(e[f"val_{m}"]) for e in r.epochs] for m in metrics},
            wall_s=[round(float(e["epoch_time"]), 4) for e in r.epochs],
        )
        for r in _complete(records)
    )
    failures = tuple(f"trial {r.number}: {r.failure or r.outcome}" for r in records if r.outcome == Outcome.FAILED)
    return Entry(params=dict(first.params), costs=costs, scores=scores, runs=runs, failures=failures)
