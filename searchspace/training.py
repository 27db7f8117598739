"""The training knobs: one table of name, type, default, rule and help, and the checks it implies.

Every reader of training settings uses this table: the study checker (``training:`` and training
knobs in ``space:``), ``trainers.loop.TrainSettings`` (its fields and checks are built from it),
``lwnas train`` (a configuration's ``training:`` section), the sweep's workers and the docs
(docs/tasks.md's table is tested against it). It is torch-free so study files are checked without
importing the trainers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import did_you_mean

SCHEDULES = ("cosine", "step", "noam", "constant")
DEVICES = ("auto", "cpu", "cuda")


def _int_from(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class TrainingKnob:
    """One training setting: its type, default, the rule a value must meet, and what it does."""

    name: str
    type: type
    default: Any
    rule: str  # "must be <rule>"
    ok: Callable[[Any], bool]
    help: str
    searchable: bool = True  # may be searched in a study's `space`
    per_study: bool = True  # may be set in a study's `training` (epochs and seed come from elsewhere)
    choices: tuple[str, ...] = ()


TRAINING: tuple[TrainingKnob, ...] = (
    TrainingKnob("epochs", int, 10, "an integer >= 1", _int_from(1), "training epochs",
                 searchable=False, per_study=False),
    TrainingKnob("batch_size", int, 64, "an integer >= 1", _int_from(1), "examples per optimizer step"),
    TrainingKnob("lr", float, 1e-3, "a finite number > 0", lambda v: _finite(v) and v > 0, "AdamW learning rate"),
    TrainingKnob("weight_decay", float, 0.01, "a finite number >= 0", lambda v: _finite(v) and v >= 0,
                 "AdamW weight decay"),
    TrainingKnob("warmup_epochs", float, 1.0, "a finite number >= 0", lambda v: _finite(v) and v >= 0,
                 "linear warm-up, in epochs"),
    TrainingKnob("schedule", str, "cosine", f"one of {', '.join(SCHEDULES)}", lambda v: v in SCHEDULES,
                 "`cosine`; `step` (LW-Transformer: x0.2 at 10/13 and 12/13 of training); "
                 "`noam` (ORT: warm-up then 1/sqrt(step), peak = lr); `constant`", choices=SCHEDULES),
    TrainingKnob("lr_sqrt_groups", bool, False, "true or false", lambda v: isinstance(v, bool),
                 "LW-Transformer: base lr x sqrt(k)"),
    TrainingKnob("grad_clip", float, 1.0, "a finite number >= 0 (0 turns clipping off)",
                 lambda v: _finite(v) and v >= 0, "max gradient norm (0: off)"),
    TrainingKnob("seed", int, 0, "an integer >= 0", _int_from(0), "seed of initialisation and shuffling",
                 searchable=False, per_study=False),
    TrainingKnob("threads", int, None, "an integer >= 1 or null (torch's default)",
                 lambda v: v is None or _int_from(1)(v), "CPU threads for torch (null: torch's default)",
                 searchable=False),
    TrainingKnob("device", str, "auto", f"one of {', '.join(DEVICES)}", lambda v: v in DEVICES,
                 "`auto` uses CUDA when present", searchable=False, choices=DEVICES),
    TrainingKnob("amp", bool, True, "true or false", lambda v: isinstance(v, bool), "bf16 autocast on CUDA",
                 searchable=False),
    TrainingKnob("divergence_factor", float, 10.0, "a finite number > 1", lambda v: _finite(v) and v > 1,
                 "an epoch's train loss above this x the first epoch's is a divergence", searchable=False),
)
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
