"""TrainSettings: the training hyperparameters (a configuration's or study's ``training:`` section).

Every setting is a field written out in ``TrainSettings`` below, ``name: type = setting(default, help,
rule=..., ok=...)``; the training part of the knob table (``TRAINING``) is read back from those fields.
Every reader of training settings goes through this module: the study checker (``training:`` and
training knobs in ``space:``), ``lwnas train`` (a configuration's ``training:`` section), the sweep's
driver and workers, and the docs (docs/tasks.md's table is tested against it). ``trainers.loop``
re-exports ``TrainSettings``. Torch-free, so study files are checked without importing the trainers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .errors import ConfigError, did_you_mean
from .knob_fields import TrainingKnob, setting, training_knobs

SCHEDULES = ("cosine", "step", "noam", "constant")
DEVICES = ("auto", "cpu", "cuda")
MAX_THREADS = 1024  # torch's OpenMP pool allocates per thread: a huge count fails in libgomp, not with a line


def _int_from(low: int) -> Callable[[Any], bool]:
    """Whether a value is an integer (not a bool) of at least ``low``."""
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


@dataclass(frozen=True)
class TrainSettings:
    """Training hyperparameters (the ``training`` section of a configuration file)."""

    epochs: int = setting(
        10, "training epochs", rule="an integer >= 1", ok=_int_from(1), searchable=False, per_study=False
    )
    batch_size: int = setting(64, "examples per optimizer step", rule="an integer >= 1", ok=_int_from(1))
    lr: float = setting(1e-3, "AdamW learning rate", rule="a finite number > 0", ok=lambda v: _finite(v) and v > 0)
    weight_decay: float = setting(
        0.01, "AdamW weight decay", rule="a finite number >= 0", ok=lambda v: _finite(v) and v >= 0
    )
    warmup_epochs: float = setting(
        1.0, "linear warm-up, in epochs", rule="a finite number >= 0", ok=lambda v: _finite(v) and v >= 0
    )
    schedule: str = setting(
        "cosine",
        "`cosine`; `step` (LW-Transformer: x0.2 at 10/13 and 12/13 of training); "
        "`noam` (ORT: warm-up then 1/sqrt(step), peak = lr); `constant`",
        rule=f"one of {', '.join(SCHEDULES)}",
        ok=lambda v: v in SCHEDULES,
        choices=SCHEDULES,
    )
    lr_sqrt_groups: bool = setting(False, "LW-Transformer: base lr x sqrt(k)", rule="true or false", ok=_bool)
    grad_clip: float = setting(
        1.0,
        "max gradient norm (0: off)",
        rule="a finite number >= 0 (0 turns clipping off)",
        ok=lambda v: _finite(v) and v >= 0,
    )
    seed: int = setting(
        0,
        "seed of initialisation and shuffling",
        rule="an integer >= 0",
        ok=_int_from(0),
        searchable=False,
        per_study=False,
    )
    threads: int | None = setting(
        None,
        "CPU threads for torch (null: torch's default)",
        rule=f"an integer >= 1 or null (torch's default), at most {MAX_THREADS:,}",
        ok=lambda v: v is None or (_int_from(1)(v) and v <= MAX_THREADS),
        searchable=False,
    )
    device: str = setting(
        "auto",
        "`auto` uses CUDA when present",
        rule=f"one of {', '.join(DEVICES)}",
        ok=lambda v: v in DEVICES,
        searchable=False,
        choices=DEVICES,
    )
    amp: bool = setting(True, "bf16 autocast on CUDA", rule="true or false", ok=_bool, searchable=False)
    divergence_factor: float = setting(
        10.0,
        "an epoch's train loss above this x the first epoch's is a divergence",
        rule="a finite number > 1",
        ok=lambda v: _finite(v) and v > 1,
        searchable=False,
    )

    def __post_init__(self) -> None:
        """Refuse every value that breaks its rule."""
        problems = [(key, message) for (_, key), message in training_problems(asdict(self))]
        if problems:
            raise ConfigError(problems)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TrainSettings:
        """Settings from a ``training:`` mapping; unknown keys and bad values are all reported at once."""
        problems = [(key, message) for (_, key), message in training_problems(dict(data or {}))]
        if problems:
            raise ConfigError(problems)
        return cls(**dict(data or {}))

    def to_dict(self) -> dict[str, Any]:
        """Every setting, by name, in field order (what a trial record stores)."""
        return asdict(self)


# ---- the training part of the knob table, read back from the fields ----------------------------
TRAINING: tuple[TrainingKnob, ...] = training_knobs(TrainSettings)
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


def training_problems(raw: Any, allowed: tuple[str, ...] | None = None) -> list[tuple[tuple[Any, ...], str]]:
    """Every problem of a ``training:`` mapping, each as (path such as ``("training", "lr")``, message).

    ``allowed`` names the settings the mapping may hold (every one by default).
    """
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [(("training",), f"must be a mapping of training settings, got {raw!r}")]
    allowed = tuple(BY_NAME) if allowed is None else allowed
    problems: list[tuple[tuple[Any, ...], str]] = []
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
    "TrainSettings",
    "TrainingKnob",
    "training_problems",
    "training_value_problem",
]
