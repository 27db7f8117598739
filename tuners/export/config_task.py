"""The task a configuration file trains on: its own `task` section, or the one a command names."""

from __future__ import annotations

from pathlib import Path

from searchspace import ConfigError
from searchspace.files import ConfigFile
from trainers.tasks import Task, resolve_task
from trainers.tasks.registry import absolute_path_options


def file_task(f: ConfigFile, task: str | None, data: Path | None) -> tuple[str, dict]:
    """The task to train and its options: the file's `task` section, or --task (which must agree with it).

    Path options (``features``' `path`) resolve against the file's folder; --data replaces `path`.
    """
    named, options = f.metadata.get("task"), f.metadata.get("task_options") or {}
    problems = []
    if named is not None and (not isinstance(named, str) or not named):
        problems.append((f"{f.path}: task", f"must be a task name, got {named!r}"))
    if not isinstance(options, dict):
        problems.append((f"{f.path}: task_options", f"must be a mapping of keyword arguments, got {options!r}"))
    if not problems and task and named and task != named:
        problems.append(
            (
                "--task",
                f"is {task!r} but {f.path} was trained on task {named!r}; leave --task out "
                "to use the file's, or remove the file's `task`",
            )
        )
    name = task or named
    if not problems and not name:
        problems.append(("--task", f"missing: {f.path} names no task; give one, e.g. --task digits"))
    if problems or not name:
        raise ConfigError(problems)
    options = {k: v for k, v in options.items() if not (data and k == "path")}
    options, missing = absolute_path_options(name, options, f.path.parent)
    if missing:
        raise ConfigError(
            [(f"{f.path}: task_options.{key}", f"no such file or directory: {options[key]}") for key in missing]
        )
    if data:
        options["path"] = str(data.resolve())
    return name, options


def file_task_built(f: ConfigFile, name: str, options: dict) -> Task:
    """Task ``name`` constructed with ``options`` from ``f``; an option it refuses is named with the file."""
    try:
        return resolve_task(name, **options)
    except ConfigError as exc:  # the task's own checks name `task_options.<key>`; say which file holds it
        raise ConfigError([(f"{f.path}: {key}", message) for key, message in exc.problems]) from None


def config_task(f: ConfigFile, task: str | None, cache: dict) -> Task | None:
    """The task ``f`` is costed at (--task or the file's own), or None when neither names one."""
    if task is None and f.metadata.get("task") is None:
        return None
    try:
        name, options = file_task(f, task, None)
        key = (name, repr(sorted(options.items())))
        if key not in cache:
            cache[key] = file_task_built(f, name, options)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:  # an unknown task or a plugin that does not load
        raise ConfigError([(f"{f.path}: task" if task is None else "--task", str(exc))]) from None
    return cache[key]
