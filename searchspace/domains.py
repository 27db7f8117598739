"""Domains of one knob in a study's space: fixed, choice, integer range, float range.

Every domain checks its arguments when built and says what is wrong, and round-trips through the
dict form a study file uses (``{choice: [...]}``, ``{int: [low, high], step: s}``,
``{float: [low, high], log: true}``; a fixed value is written as the bare value).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import LwnasError, shown

Scalar = str | int | float | bool | None


class DomainError(LwnasError, ValueError):
    """A domain is malformed; ``key`` is the offending key inside the knob's mapping (or None)."""

    def __init__(self, message: str, key: str | None = None):
        self.key = key
        super().__init__(message)


def show_value(value: Any) -> str:
    """A value as it is written in YAML (true, null, plain text)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


CHECKED_VALUES = 64  # values of one domain that checks look at; wider domains are represented, not enumerated


def checked_values(domain: Any, limit: int = CHECKED_VALUES) -> list[Any]:
    """Every value of a discrete domain, or for a wider one a fixed, evenly spread subset of ``limit``
    values that keeps both ends and the first few (where divisibility and small-number rules bite).

    Checks built on this cost the same for `int: [1, 100000000]` as for `int: [1, 10]`.
    """
    n = domain.size()
    if n <= limit:
        return [domain.at(i) for i in range(n)]
    head = limit // 4
    spread = limit - head
    picks = list(range(head)) + [head + (n - 1 - head) * j // (spread - 1) for j in range(spread)]
    return [domain.at(i) for i in dict.fromkeys(picks)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Fixed:
    value: Any

    discrete = True

    def values(self) -> list[Any]:
        return [self.value]

    def size(self) -> int:
        return 1

    def at(self, i: int) -> Any:
        return self.value

    def contains(self, value: Any) -> bool:
        return value == self.value

    def sample(self, rng: np.random.Generator) -> Any:
        return self.value

    def describe(self) -> str:
        return f"= {show_value(self.value)}"

    def to_dict(self) -> Any:
        return self.value


@dataclass(frozen=True)
class Choice:
    choices: tuple[Scalar, ...]

    discrete = True

    def __post_init__(self) -> None:
        if not self.choices:
            raise DomainError("`choice` is empty: list at least one value", "choice")
        bad = [c for c in self.choices if not isinstance(c, (str, int, float, bool, type(None)))]
        if bad:
            raise DomainError(
                f"choices must be plain values (text, numbers, true/false, null), got {shown(bad[0])}", "choice"
            )
        counts = Counter((type(c), c) for c in self.choices)  # 1 and 1.0 and true are different choices
        repeated = sorted(repr(c) for (_, c), n in counts.items() if n > 1)
        if repeated:
            raise DomainError(f"choice lists {', '.join(repeated)} more than once", "choice")

    def values(self) -> list[Any]:
        return list(self.choices)

    def size(self) -> int:
        return len(self.choices)

    def at(self, i: int) -> Any:
        return self.choices[i]

    def contains(self, value: Any) -> bool:
        return any(value == c and type(value) is type(c) for c in self.choices)

    def sample(self, rng: np.random.Generator) -> Any:
        return self.choices[int(rng.integers(len(self.choices)))]

    def describe(self) -> str:
        return "choice " + ", ".join(map(show_value, self.choices))

    def to_dict(self) -> dict[str, Any]:
        return {"choice": list(self.choices)}


@dataclass(frozen=True)
class IntRange:
    low: int
    high: int
    step: int = 1
    log: bool = False

    discrete = True

    def __post_init__(self) -> None:
        if not (_is_int(self.low) and _is_int(self.high)):
            raise DomainError(f"`int` bounds must be integers, got ({shown(self.low)}, {shown(self.high)})", "int")
        if self.low > self.high:
            raise DomainError(f"`low <= high` must hold, but got (low={self.low}, high={self.high})", "int")
        if not _is_int(self.step) or self.step < 1:
            raise DomainError(f"`step` must be an integer >= 1, got {shown(self.step)}", "step")
        if (self.high - self.low) % self.step:
            raise DomainError(
                f"`high - low` must be a multiple of `step`, but got (low={self.low}, "
                f"high={self.high}, step={self.step})",
                "step",
            )
        if self.log and (self.low < 1 or self.step != 1):
            raise DomainError(
                f"a log integer range needs low >= 1 and step 1, got (low={self.low}, step={self.step})", "log"
            )

    def values(self) -> list[int]:
        return list(range(self.low, self.high + 1, self.step))

    def size(self) -> int:
        return (self.high - self.low) // self.step + 1

    def at(self, i: int) -> int:
        return self.low + i * self.step

    def contains(self, value: Any) -> bool:
        return _is_int(value) and self.low <= value <= self.high and (value - self.low) % self.step == 0

    def sample(self, rng: np.random.Generator) -> int:
        if self.log:
            x = math.exp(rng.uniform(math.log(self.low - 0.5), math.log(self.high + 0.5)))
            return min(self.high, max(self.low, round(x)))
        return self.low + self.step * int(rng.integers((self.high - self.low) // self.step + 1))

    def describe(self) -> str:
        step = f" step {self.step}" if self.step != 1 else ""
        return f"int {self.low}..{self.high}{step}{' (log)' if self.log else ''}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"int": [self.low, self.high]}
        if self.step != 1:
            out["step"] = self.step
        if self.log:
            out["log"] = True
        return out


@dataclass(frozen=True)
class FloatRange:
    low: float
    high: float
    log: bool = False

    discrete = False

    def __post_init__(self) -> None:
        if not (_is_number(self.low) and _is_number(self.high)):
            raise DomainError(f"`float` bounds must be numbers, got ({shown(self.low)}, {shown(self.high)})", "float")
        if self.low > self.high:
            raise DomainError(f"`low <= high` must hold, but got (low={self.low}, high={self.high})", "float")
        if self.log and self.low <= 0:
            raise DomainError(f"a log range needs low > 0, got low={self.low}", "log")

    def values(self) -> list[float]:
        return [float(self.low), float(self.high)]  # the end points: enough for rule checks on floats

    def size(self) -> int:
        return 2

    def at(self, i: int) -> float:
        return self.values()[i]

    def contains(self, value: Any) -> bool:
        return _is_number(value) and self.low <= value <= self.high

    def sample(self, rng: np.random.Generator) -> float:
        if self.log:
            return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))
        return float(rng.uniform(self.low, self.high))

    def describe(self) -> str:
        return f"float {self.low:g}..{self.high:g}{' (log)' if self.log else ''}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"float": [self.low, self.high]}
        if self.log:
            out["log"] = True
        return out


Domain = Fixed | Choice | IntRange | FloatRange
DOMAIN_KEYS = ("choice", "int", "float")
SPEC_KEYS = ("choice", "int", "float", "step", "log", "value", "when", "default")


def parse_domain(spec: Mapping[str, Any]) -> Domain:
    """Build a domain from a knob's mapping (``when``/``default`` are read by the caller)."""
    kinds = [k for k in (*DOMAIN_KEYS, "value") if k in spec]
    if len(kinds) != 1:
        what = "none" if not kinds else ", ".join(f"`{k}`" for k in kinds)
        raise DomainError(f"give exactly one of `choice`, `int`, `float` or `value`, got {what}")
    kind = kinds[0]
    extra = {"choice": ("step", "log"), "value": ("step", "log"), "float": ("step",)}.get(kind, ())
    for key in extra:
        if key in spec:
            raise DomainError(f"`{key}` does not apply to `{kind}`", key)
    if kind == "value":
        return Fixed(spec["value"])
    if kind == "choice":
        if not isinstance(spec["choice"], list):
            raise DomainError(f"`choice` must be a list of values, got {shown(spec['choice'])}", "choice")
        return Choice(tuple(spec["choice"]))
    bounds = spec[kind]
    if not (isinstance(bounds, list) and len(bounds) == 2):
        raise DomainError(f"`{kind}` must be a list [low, high], got {shown(bounds)}", kind)
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise DomainError(f"`log` must be true or false, got {shown(log)}", "log")
    if kind == "int":
        return IntRange(bounds[0], bounds[1], spec.get("step", 1), log)
    return FloatRange(bounds[0], bounds[1], log)
