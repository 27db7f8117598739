"""Training hyperparameters a study may search, with the rule each value must meet.

The training loop (``trainers.loop.TrainSettings``) owns the full settings; this module names the
ones a search space can vary, so study files are checked without importing the trainers.
"""

from __future__ import annotations

from typing import Any

SCHEDULES = ("cosine", "step", "noam", "constant")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# knob -> (rule, predicate); defaults mirror TrainSettings.
TRAINING_KNOBS: dict[str, tuple[str, Any]] = {
    "lr": ("a number > 0", lambda v: _number(v) and v > 0),
    "batch_size": ("an integer >= 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
    "weight_decay": ("a number >= 0", lambda v: _number(v) and v >= 0),
    "warmup_epochs": ("a number >= 0", lambda v: _number(v) and v >= 0),
    "grad_clip": ("a number >= 0 (0 turns clipping off)", lambda v: _number(v) and v >= 0),
    "schedule": (f"one of {', '.join(SCHEDULES)}", lambda v: v in SCHEDULES),
    "lr_sqrt_groups": ("true or false", lambda v: isinstance(v, bool)),
}
TRAINING_DEFAULTS: dict[str, Any] = {"lr": 1e-3, "batch_size": 64, "weight_decay": 0.01, "warmup_epochs": 1.0,
                                     "grad_clip": 1.0, "schedule": "cosine", "lr_sqrt_groups": False}


def training_value_problem(knob: str, value: Any) -> str | None:
    """Why ``value`` is not allowed for training knob ``knob`` (None when it is)."""
    rule, ok = TRAINING_KNOBS[knob]
    return None if ok(value) else f"must be {rule}, got {value!r}"
