"""Which class a task name means: the built-in tasks by name, or a plugin an installed package registered
(entry-point group ``lwnas.tasks``) or the command line allowed, checked against the Task protocol without
calling it; and constructing it with its options. A study, configuration or checkpoint is data: what it
names is looked up, and nothing it names is imported unless a package registered it."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from searchspace import ConfigError

from .base import Task
from .caption_tasks import CaptionRetrieval, Captions
from .digits import Digits
from .features import Features
from .images import Cifar, ImageFolder
from .scene_captions import SceneCaptions
from .scene_retrieval import SceneRetrieval
from .shapes_vqa import ShapesVQA
from .vqa import VQA

BUILTIN_TASKS: dict[str, type[Task]] = {
    t.name: t
    for t in (
        Digits,
        ShapesVQA,
        SceneCaptions,
        SceneRetrieval,
        Features,
        ImageFolder,
        Cifar,
        VQA,
        Captions,
        CaptionRetrieval,
    )
}
# tasks that read the user's data from the `path` option (lwnas train --data, or task_options in a study)
DATA_TASKS = tuple(name for name, t in BUILTIN_TASKS.items() if "path" in t.path_options)


# The entry-point group a package registers its tasks in (pyproject.toml: [project.entry-points."lwnas.tasks"]).
ENTRY_POINT_GROUP = "lwnas.tasks"
REGISTER_HINT = (
    f"register a plugin as an entry point of group `{ENTRY_POINT_GROUP}` in its package "
    f"(docs/tasks.md#registering-a-plugin)"
)
# ``package.module:Class``: dotted identifiers, a colon, one identifier (nothing else is imported).
_PLUGIN_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", re.ASCII)
# ``family`` may be "" (the Task default) when the data decides it: the study must then give `family`.
_PROTOCOL_STRINGS = ("name", "family", "metric")
_PROTOCOL_METHODS = ("input_sizes", "load", "loss", "evaluate")
_MISSING = object()
# ``module:Class`` references this process may import although no package registered them: only the command
# line adds to it (``--allow-plugin``), never a study, configuration or checkpoint.
_allowed: set[str] = set()


def registered_tasks() -> dict[str, str]:
    """The tasks installed packages register, ``{name: "package.module:Class"}`` (nothing is imported).

    A name a built-in task has stays the built-in's; of two packages registering one name, the first found wins.
    """
    found: dict[str, str] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in BUILTIN_TASKS:
            found.setdefault(entry.name, entry.value.strip())
    return found


def allow_plugins(references: Iterable[str]) -> None:
    """Let this process import each ``package.module:Class`` of ``references`` as a task, registered or not.

    Called with what the user typed on the command line (``--allow-plugin``); raises ValueError for a
    reference that is not of that form, is a ``__main__`` module or part of the standard library.
    """
    for reference in references:
        _check_reference(reference)
        _allowed.add(reference)


def allowed_plugins() -> tuple[str, ...]:
    """What ``allow_plugins`` allowed in this process (a sweep hands it to its Ray workers)."""
    return tuple(sorted(_allowed))


def _check_reference(reference: str) -> None:
    """Refuse a ``module:Class`` that is never imported, whoever names it."""
    if not _PLUGIN_REF.fullmatch(reference):
        raise ValueError(f"task plugin {reference!r} is not of the form package.module:Class (dotted Python names)")
    module_name = reference.partition(":")[0]
    if "__main__" in module_name.split("."):
        raise ValueError(
            f"task plugin {reference!r}: a `__main__` module is a program, not a task, and is never imported; "
            f"{REGISTER_HINT}"
        )
    if module_name.split(".")[0] in sys.stdlib_module_names:
        raise ValueError(
            f"task plugin {reference!r}: `{module_name}` is part of Python's standard library, which holds "
            f"no task; a plugin is a class implementing the Task protocol (docs/tasks.md)"
        )


def task_class(name: str) -> type:
    """The class a task name means: a built-in task, a plugin registered in the ``lwnas.tasks`` entry-point
    group (by its entry point's name, or the ``package.module:Class`` it registers), or a
    ``package.module:Class`` the command line allowed (``allow_plugins``).

    Nothing a file names is imported unless an installed package registered it or the user allowed it on the
    command line: no working directory on ``sys.path``, never a ``__main__`` module or the standard library.
    A plugin's module is imported (that runs its code, as ``import`` does), but nothing it names is called:
    the attribute is read statically and must be a class implementing the Task protocol.
    """
    if not isinstance(name, str):
        raise ValueError(f"a task is named by a string, got {_shown(name)}")
    if name in BUILTIN_TASKS:
        return BUILTIN_TASKS[name]
    registered = registered_tasks()
    if name in registered:
        return _load(name, registered[name])
    if ":" not in name:
        from searchspace.errors import did_you_mean

        plugins = f"; registered plugins are {', '.join(registered)}" if registered else ""
        raise ValueError(
            f"unknown task {name!r}{did_you_mean(name, [*BUILTIN_TASKS, *registered])}; built-in tasks are "
            f"{', '.join(BUILTIN_TASKS)}{plugins}; {REGISTER_HINT}"
        )
    _check_reference(name)
    if name not in registered.values() and name not in _allowed:
        raise ValueError(
            f"task plugin {name!r} is not registered: a study, configuration or checkpoint names a built-in task "
            f"or a plugin an installed package registers, and never imports other code; {REGISTER_HINT}, or "
            f"import this class anyway with --allow-plugin {name} on the command line"
        )
    return _load(name, name)


def _load(name: str, reference: str) -> type:
    """The class ``reference`` (``package.module:Class``) names, imported and checked statically."""
    _check_reference(reference)
    module_name, _, attr = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot load task plugin {name!r}: {exc}") from None
    try:
        found = inspect.getattr_static(module, attr)  # static: a module-level __getattr__ is not called
    except AttributeError:
        raise ValueError(f"cannot load task plugin {name!r}: module `{module_name}` has no `{attr}`") from None
    problems = protocol_problems(found)
    if problems:
        raise ValueError(
            f"task plugin {name!r} is not a Task: {'; '.join(problems)} (docs/tasks.md, the Task protocol)"
        )
    return found


def _describe(obj: Any) -> str:
    """What a plugin reference found, for messages (never its repr: that would call its code)."""
    return f"class {obj.__qualname__}" if isinstance(obj, type) else f"a {type(obj).__qualname__}"


def protocol_problems(found: Any) -> list[str]:
    """Why ``found`` is not a class implementing the Task protocol (empty if it is), checked statically."""
    if not isinstance(found, type):
        return [f"found {_describe(found)}, not a class"]
    problems = []
    for member in _PROTOCOL_STRINGS:
        value = _static(found, member)
        if not isinstance(value, str) or not (value or member == "family"):
            problems.append(f"`{member}` must be a non-empty string class attribute, found {_shown(value)}")
    direction = _static(found, "direction")
    if direction not in ("maximize", "minimize"):
        problems.append(f"`direction` must be maximize or minimize, found {_shown(direction)}")
    metrics = _static(found, "metrics")
    if metrics is not _MISSING and not (
        isinstance(metrics, dict)
        and all(isinstance(k, str) and v in ("maximize", "minimize") for k, v in metrics.items())
    ):
        problems.append(f"`metrics` must map metric names to maximize or minimize, found {_shown(metrics)}")
    for member in _PROTOCOL_METHODS:
        method = _static(found, member)
        if not isinstance(method, (staticmethod, classmethod)) and not inspect.isfunction(method):
            problems.append(f"`{member}` must be a method, found {_shown(method)}")
        elif method is Task.__dict__.get(member) and member != "input_sizes":
            problems.append(f"`{member}` is not implemented (only Task's placeholder)")
    return problems


def _static(cls: type, member: str) -> Any:
    return inspect.getattr_static(cls, member, _MISSING)


def _shown(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    return repr(value)[:60] if isinstance(value, (str, int, float, bool, type(None))) else _describe(value)


def absolute_path_options(name: str, options: dict[str, Any], base: Path) -> tuple[dict[str, Any], list[str]]:
    """``options`` with the task's path options made absolute against ``base``, and those naming nothing."""
    out, missing = dict(options), []
    for key in getattr(task_class(name), "path_options", ()):
        value = options.get(key)
        if not isinstance(value, (str, os.PathLike)):
            continue  # absent or not a path: the task's own constructor reports it
        path = Path(base, Path(value).expanduser()).resolve()
        out[key] = str(path)
        if not path.exists():
            missing.append(key)
    return out, missing


def resolve_task(name: str, **options: Any) -> Task:
    """The task ``name`` means (``task_class``: a built-in, a registered or allowed plugin), constructed with
    ``options``.

    Constructing a plugin runs its code; validation uses ``task_class`` alone. Options the class does
    not take are refused first, as a ConfigError naming them (not a TypeError from the constructor).
    """
    cls = task_class(name)
    accepted = inspect.signature(cls).parameters  # reads the signature: nothing of the class runs
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    unknown = [key for key in options if key not in accepted and not takes_any]
    if unknown:
        known = ", ".join(k for k, p in accepted.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL) or "none"
        raise ConfigError(
            [
                (
                    "task_options",
                    f"task `{name}` takes no option {key!r} (its options: {known})"
                    + ("; --data serves tasks that read a data file, such as `features`" if key == "path" else ""),
                )
                for key in unknown
            ]
        )
    return cls(**options)
