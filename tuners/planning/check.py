"""Studies checked against their task and the cost model (what ``searchspace`` alone cannot know).

``open_study`` reads a study knowing the built-in tasks (so ``family`` may be left out);
``check_study`` adds the task's checks (family, metric names and directions) and costs a sample of
points, reporting constraints that none of them meets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np

from searchspace.space import Point
from searchspace.study import COST_METRICS, Study, StudyError, load_study, with_budget
from trainers.tasks import Task, resolve_task
from trainers.tasks.registry import absolute_path_options, task_class
from tuners.planning.costs import StaticCosts, Verdict


def task_family(name: str) -> str | None:
    """The model family of a built-in task or of a plugin class that declares one.

    Raises ValueError for a name that is neither a built-in task nor a loadable plugin.
    """
    family = getattr(task_class(name), "family", None)
    return family if isinstance(family, str) and family else None


def open_study(path: str | Path) -> Study:
    """A study file, read and checked, with its task's path options made absolute (see ``absolute_paths``)."""
    return absolute_paths(load_study(path, task_family=task_family))


def absolute_paths(study: Study) -> Study:
    """The study with its task's path options resolved against the study file's folder.

    A relative `path` then names the same file from any working directory and in Ray's workers (whose
    working directory is a trial folder), and it travels to them absolute in the study's spec. A path
    that names nothing is a located error now, not a failure of every trial later.
    """
    if not study.task_options or study.path is None:
        return study
    try:
        options, missing = absolute_path_options(study.task, study.task_options, study.path.parent)
    except ValueError:  # the task itself does not resolve; make_task reports it with its line
        return study
    if missing:
        raise StudyError(
            [
                (
                    study.where(("task_options", key)),
                    f"no such file or directory: {options[key]} (relative paths start at the study file's folder)",
                )
                for key in missing
            ]
        )
    return replace(study, task_options=options, source={**study.source, "task_options": options})


def with_data(study: Study, data: Path | None) -> Study:
    """The study with ``lwnas sweep --data PATH`` as its task's `path` option (absolute, so workers find it)."""
    if data is None:
        return study
    if "path" not in getattr(task_class(study.task), "path_options", ()):
        raise StudyError(
            [
                (
                    "--data",
                    f"task `{study.task}` reads no data path; --data serves the tasks that read "
                    f"your data ({', '.join(data_tasks())})",
                )
            ]
        )
    if not data.exists():
        raise StudyError([("--data", f"no such file or directory: {data}")])
    options = {**study.task_options, "path": str(data.resolve())}
    return replace(study, task_options=options, source={**study.source, "task_options": options})


def data_tasks() -> tuple[str, ...]:
    from trainers.tasks import DATA_TASKS

    return DATA_TASKS


def make_task(study: Study) -> Task:
    """The study's task, constructed (a plugin's constructor runs: sweeps and training need its data)."""
    try:
        return resolve_task(study.task, **study.task_options)
    except (ValueError, TypeError) as exc:
        raise StudyError([(study.where(("task",)), str(exc))]) from None


@dataclass(frozen=True)
class Prepared:
    """A study ready to sweep: its task built once (data loaded) and its static-cost model. The command line
    builds it to check the study, and the driver sweeps with the same objects instead of building them again."""

    study: Study
    task: Task
    costs: StaticCosts


def prepare(study: Study) -> Prepared:
    """The study's task and cost model, built once."""
    task = make_task(study)
    return Prepared(study, task, StaticCosts(study, task))


def check_sweep(
    path: str | Path, data: Path | None, trials: int | None, epochs: int | None, on_this_machine: bool, samples: int
) -> Prepared:
    """What ``lwnas sweep`` runs before Ray starts, in one pass: the study file read and checked, with ``--data``,
    ``--trials`` and ``--epochs`` applied; the training device (when the sweep runs ``on_this_machine``); the task
    built and checked against the study; and the constraints against ``samples`` costed points. Returns the
    study prepared, its task and cost model built once (the driver sweeps with them); raises StudyError with
    the problems found.
    """
    study = with_budget(with_data(open_study(path), data), trials, epochs)
    # a cluster may have the GPUs this machine lacks: Ray places trials on nodes that have them
    problems = device_problems(study) if on_this_machine else []
    if problems:
        raise StudyError(problems)
    prepared = prepare(study)
    problems = task_problems(study, prepared.task)
    if not problems and study.constraints:
        # the check `lwnas space validate` makes: constraints that no point meets are refused before Ray
        # starts, instead of a sweep that records infeasible points until it gives up
        problems = unmet_constraints(study, prepared.costs, samples)
    if problems:
        raise StudyError(problems)
    return prepared


def task_for_checks(study: Study) -> tuple[Task | type[Task], Task | None]:
    """What validation checks a study against, without calling anything a plugin names.

    Returns ``(described, task)``: a built-in task is constructed (lwnas's own code) and is both; a
    plugin is only its class, checked against the Task protocol, and ``task`` is None (its input sizes
    are then the study's own, as constructing it could run anything).
    """
    from trainers.tasks import BUILTIN_TASKS

    if study.task in BUILTIN_TASKS:
        cls = BUILTIN_TASKS[study.task]
        if cls.family and "path" in cls.path_options and "path" not in study.task_options:
            # a study shipped without its data (`lwnas sweep --data` gives it): checked against the class,
            # costed at the study's own input sizes; with a path, at the sizes the data fixes. (`features`,
            # whose family the data decides, still needs its data to be checked.)
            return cls, None
        task = make_task(study)
        return task, task
    try:
        # passed the Task protocol, checked statically (nothing of the class ran)
        return cast("type[Task]", task_class(study.task)), None
    except ValueError as exc:
        raise StudyError([(study.where(("task",)), str(exc))]) from None


def task_problems(study: Study, task: Task | type[Task]) -> list[tuple[str, str]]:
    """The study's family and objectives against what the task trains and reports."""
    problems = []
    if task.family and task.family != study.family:  # a plugin class may leave its family to the study
        problems.append(
            (
                study.where(("family",)),
                f"task `{study.task}` trains family `{task.family}`, but the study says `{study.family}`",
            )
        )
    metrics = {task.metric: task.direction, **getattr(task, "metrics", {})}
    as_mapping = isinstance(study.source.get("objectives"), dict)
    for i, objective in enumerate(study.objectives):
        if objective.is_cost:
            continue
        where = study.where(("objectives", objective.metric if as_mapping else i))
        if objective.metric not in metrics:
            problems.append(
                (
                    where,
                    f"task `{study.task}` reports no metric `{objective.metric}`; it reports "
                    f"{', '.join(sorted(metrics))} (and the costs {', '.join(COST_METRICS)})",
                )
            )
        elif metrics[objective.metric] != objective.direction:
            problems.append(
                (where, f"`{objective.metric}` should be {metrics[objective.metric]}d, not {objective.direction}d")
            )
    return problems


def device_problems(study: Study) -> list[tuple[str, str]]:
    """A training device this machine does not have: ``training: {device: cuda}`` where torch sees no GPU.

    Only for a run on this machine (``lwnas space validate``, ``lwnas sweep`` without ``--address``): every
    trial would fail on its first step. A remote cluster may have GPUs this machine lacks; there Ray places
    a trial only on a node with the ``gpus_per_trial`` it asks for.
    """
    if study.training.get("device") != "cuda":
        return []
    import socket

    import torch

    if torch.cuda.is_available():
        return []
    return [
        (
            study.where(("training", "device")),
            f"`cuda` was asked for, but torch sees no CUDA GPU on this machine ({socket.gethostname()}), so every "
            f"trial would fail: use `auto` or `cpu`, or sweep on a cluster with GPUs (lwnas sweep --address)",
        )
    ]


def mo_asha_rungs(max_epochs: int, grace_epochs: int, reduction_factor: int) -> list[int]:
    """The epochs at which mo-asha judges trials: ``grace * rf**k`` below the full budget."""
    rungs, milestone = [], grace_epochs
    while milestone < max_epochs:
        rungs.append(milestone)
        milestone *= reduction_factor
    return rungs


def scheduler_warnings(study: Study) -> list[str]:
    """What makes the study's mo-asha rungs meaningless for its budget (empty when they are not, or no mo-asha)."""
    if study.tuner.scheduler != "mo-asha":
        return []
    rf, grace, epochs, trials = (
        study.tuner.reduction_factor,
        study.tuner.grace_epochs,
        study.budget.epochs,
        study.budget.trials,
    )
    rungs = mo_asha_rungs(epochs, grace, rf)
    if not rungs:
        return [
            f"mo-asha has no rung: budget.epochs {epochs} is not above tuner.grace_epochs {grace}, so it stops "
            f"no trial; use scheduler none or give more epochs"
        ]
    if trials < rf * rf:
        costs = [o.metric for o in study.objectives if o.is_cost]
        weighed = f" (rungs weigh every objective, {', '.join(costs)} included)" if costs else ""
        return [
            f"mo-asha with {trials} trials and reduction_factor {rf}: a rung (at epoch{'s' if len(rungs) > 1 else ''} "
            f"{', '.join(map(str, rungs))}) keeps the best 1/{rf} of the few trials that reached it first{weighed}, "
            f"so most trials may be stopped on little evidence; give at least {rf * rf} trials or use scheduler none"
        ]
    return []


@dataclass(frozen=True)
class CostedPoint:
    point: Point
    verdict: Verdict


def cost_sample(
    study: Study, static: StaticCosts, n: int, seed: int = 0, step: Callable[[], None] | None = None
) -> list[CostedPoint]:
    """The low corner plus ``n - 1`` random points of the space, each with its static costs."""
    return list(costed_points(study, static, n, seed, step))


def costed_points(
    study: Study, static: StaticCosts, n: int, seed: int = 0, step: Callable[[], None] | None = None
) -> Iterator[CostedPoint]:
    """``cost_sample``'s points one by one, each costed when it is asked for (the same points, in order)."""
    rng = np.random.default_rng(seed)
    for i in range(max(1, n)):
        point = study.space.resolve(study.space.low_corner() if i == 0 else study.space.sample(rng))
        yield CostedPoint(point, static.verdict(point.config))
        if step:
            step()


def unmet_constraints(study: Study, static: StaticCosts, n: int) -> list[tuple[str, str]]:
    """``constraint_problems`` over ``cost_sample(study, static, n)``, costing no point after the first that meets
    every constraint: with one such point no constraint is unmet, whatever the others cost."""
    sample = []
    for costed in costed_points(study, static, n):
        sample.append(costed)
        if costed.verdict.feasible:
            break
    return constraint_problems(study, sample)


def constraint_problems(study: Study, sample: list[CostedPoint]) -> list[tuple[str, str]]:
    """Constraints that no sampled point meets (each on its own, then all together)."""
    problems = []
    for constraint in study.constraints:
        values = [c.verdict.costs[constraint.metric] for c in sample]
        if all(constraint.violation(float(v)) > 0 for v in values):
            problems.append(
                (
                    study.where(("constraints", constraint.metric)),
                    f"no point meets {constraint.describe()}: across {len(sample)} sampled points "
                    f"(including the smallest widths) {constraint.metric} runs from {min(values):,.0f} "
                    f"to {max(values):,.0f}",
                )
            )
    if not problems and study.constraints and not any(c.verdict.feasible for c in sample):
        problems.append(
            (
                study.where(("constraints",)),
                f"no sampled point meets all constraints together ({len(sample)} points tried)",
            )
        )
    return problems
