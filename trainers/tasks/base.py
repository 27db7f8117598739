"""The Task protocol: data, splits, loss and metrics for one model family.

A task is any object with the attributes and methods of ``Task`` below; built-in tasks subclass it,
and users plug in their own as ``package.module:Class`` (see docs/tasks.md). Data is held as
tensors: each split is a dict of equally long tensors, and a batch is the same dict sliced.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import torch

from searchspace import FAMILY_DEFAULTS, ArchConfig, ConfigError


class Rows(Protocol):
    """One field of a split: a tensor, or rows read on demand (``lazy.py``); ``rows[idx]`` is one tensor."""

    def __len__(self) -> int: ...

    def __getitem__(self, idx: torch.Tensor, /) -> torch.Tensor: ...


Split = dict[str, Rows]  # a split's fields by name (`patches`, `labels`, ...), each with one row per example
Batch = dict[str, torch.Tensor]  # rows of a split, as tensors on the training device


# The seed every run loads its data with: sweeps, `lwnas train` and `lwnas evaluate` see the same split,
# so an exported trial retrains on the data it was scored on; the training seed varies only the
# initialisation and shuffling.
DATA_SEED = 0


class Task:
    """Base class of tasks. Subclasses set the class attributes and implement the methods."""

    name: str = ""
    family: str = ""
    metric: str = ""  # the primary validation metric a sweep optimises
    direction: str = "maximize"
    # every metric ``evaluate`` returns that a study may optimise, with its direction
    metrics: dict[str, str] = {}
    # constructor options that name files or folders: lwnas resolves them against the folder of the
    # study or configuration file that sets them, so they work from any working directory and in Ray workers
    path_options: tuple[str, ...] = ()

    def input_sizes(self) -> dict[str, Any]:
        """Input-size knobs the task's data fixes (grid, vocab_size, ...)."""
        return {}

    def load(self, seed: int = DATA_SEED) -> dict[str, Split]:
        """``{"train": split, "val": split, "test": split}``; deterministic for a seed."""
        raise NotImplementedError

    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        raise NotImplementedError

    def evaluate(self, model: torch.nn.Module, data: Split, batch_size: int = 256) -> dict[str, float]:
        """Metrics on one split (the model is in eval mode, gradients off)."""
        raise NotImplementedError


def batches(
    data: Mapping[str, Rows],
    batch_size: int,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> Iterator[Batch]:
    """Slices of a split; shuffled when a generator is given."""
    n = len(next(iter(data.values())))
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    for start in range(0, n, batch_size):
        idx = order[start : start + batch_size]
        yield {k: v[idx].to(device) for k, v in data.items()}


def split_size(data: Mapping[str, Rows]) -> int:
    """Examples in a split or a batch."""
    return len(next(iter(data.values())))


def adapt_config(config: ArchConfig, task: Task) -> ArchConfig:
    """The configuration with the task's input sizes.

    A size left at its family default is replaced by the task's; a size set to anything else that
    disagrees with the task is an error, never silently overridden.
    """
    if config.family != task.family:
        raise ConfigError(
            [
                (
                    "family",
                    f"task `{task.name}` trains family `{task.family}`, but the configuration is `{config.family}`",
                )
            ]
        )
    defaults = FAMILY_DEFAULTS[config.family]
    changes, problems = {}, []
    for knob, wanted in task.input_sizes().items():
        have = getattr(config, knob)
        have_cmp = tuple(have) if isinstance(have, list) else have
        wanted_cmp = tuple(wanted) if isinstance(wanted, list) else wanted
        if have_cmp == wanted_cmp:
            continue
        if knob in defaults and have_cmp == defaults[knob]:
            changes[knob] = wanted_cmp
        else:
            problems.append((knob, f"is {have!r} but task `{task.name}` needs {wanted!r}"))
    if problems:
        raise ConfigError(problems)
    return config.replace(**changes) if changes else config


def _import_from_working_directory() -> None:
    """Let a plugin next to the user's study import, as ``python -m`` would find it: the ``lwnas``
    console script's own directory, not the working directory, is first on ``sys.path``."""
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)


# ``package.module:Class``: dotted identifiers, a colon, one identifier (nothing else is imported).
_PLUGIN_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", re.ASCII)
# ``family`` may be "" (the Task default) when the data decides it: the study must then give `family`.
_PROTOCOL_STRINGS = ("name", "family", "metric")
_PROTOCOL_METHODS = ("input_sizes", "load", "loss", "evaluate")
_MISSING = object()


def task_class(name: str) -> type:
    """The class of a built-in task by name, or of a plugin given as ``package.module:Class``.

    A plugin's module is imported (that runs its code, as ``import`` does), but nothing it names is
    called: the attribute is read statically and must be a class implementing the Task protocol.
    """
    from . import BUILTIN_TASKS

    if name in BUILTIN_TASKS:
        return BUILTIN_TASKS[name]
    if ":" not in name:
        from searchspace.errors import did_you_mean

        raise ValueError(
            f"unknown task {name!r}{did_you_mean(name, BUILTIN_TASKS)}; built-in tasks are "
            f"{', '.join(BUILTIN_TASKS)}, or give a plugin as package.module:Class"
        )
    if not _PLUGIN_REF.fullmatch(name):
        raise ValueError(f"task plugin {name!r} is not of the form package.module:Class (dotted Python names)")
    module_name, _, attr = name.partition(":")
    if module_name.split(".")[0] in sys.stdlib_module_names:
        raise ValueError(
            f"task plugin {name!r}: `{module_name}` is part of Python's standard library, which holds "
            f"no task; a plugin is a class implementing the Task protocol (docs/tasks.md)"
        )
    _import_from_working_directory()
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
    """A built-in task by name, or ``package.module:Class`` for a plugin, constructed with ``options``.

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
