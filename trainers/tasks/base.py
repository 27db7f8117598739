"""The Task protocol: data, splits, loss and metrics for one model family.

A task is any object with the attributes and methods of ``Task`` below; built-in tasks subclass it,
and users plug in their own as ``package.module:Class`` (see docs/tasks.md). Data is held as
tensors: each split is a dict of equally long tensors, and a batch is the same dict sliced.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
