"""The training knobs' checks and derived listings; the knobs themselves are in the knob table.

Every reader of training settings uses ``searchspace.knobs.TRAINING`` through this module: the
study checker (``training:`` and training knobs in ``space:``), ``trainers.loop.TrainSettings``
(its fields and checks are built from it), ``lwnas train`` (a configuration's ``training:``
section), the sweep's workers and the docs (docs/tasks.md's table is tested against it). It is
torch-free so study files are checked without importing the trainers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import did_you_mean
from .knobs import DEVICES, SCHEDULES, TRAINING, TrainingKnob

BY_NAME: dict[str, TrainingKnob] = {k.name: k for k in TRAINING}
TRAINING_KNOBS: tuple[str, ...] = tuple(k.name for k in TRAINING if k.searchable)  # searchable in `space`
STUDY_TRAINING_KEYS: tuple[str, ...] = tuple(k.name for k in TRAINING if k.per_study)
TRAINING_DEFAULTS: dict[str, Any] = {k.name: k.default for k in TRAINING if k.searchable}


def training_value_problem(knob: str, value: Any) -> str | None:
    """Why ``value`` is not allowed for training knob ``knob`` (None when it is)."""
    spec = BY_NAME[knob]
    if spec.ok(value):
        return None
    hint = did_you_mean(value, spec.choices) if spec.choices and isinstance(value, str) else ""
    return f"must be {spec.rule}, got {value!r}{hint}"


def training_problems(raw: Any, allowed: tuple[str, ...] = tuple(BY_NAME)) -> list[tuple[tuple, str]]:
    """Every problem of a ``training:`` mapping, each as (path such as ``("training", "lr")``, message)."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [(("training",), f"must be a mapping of training settings, got {raw!r}")]
    problems = []
    for key, value in raw.items():
        if key not in allowed:
            problems.append((("training", key), f"unknown training setting{did_you_mean(str(key), allowed)}"))
        elif (message := training_value_problem(key, value)) is not None:
            problems.append((("training", key), message))
    return problems


__all__ = [
    "BY_NAME",
    "DEVICES",
    "SCHEDULES",
    "STUDY_TRAINING_KEYS",
    "TRAINING",
    "TRAINING_DEFAULTS",
    "TRAINING_KNOBS",
    "TrainingKnob",
    "training_problems",
    "training_value_problem",
]
