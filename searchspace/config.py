"""ArchConfig: one point of the lightweight-Transformer space, as plain validated data.

Configuration flows one way: YAML/dict -> ``ArchConfig`` (validated, frozen) -> ``build_model``.
Every knob keeps its public name (DESIGN.md, "Knob vocabulary"). Family-dependent knobs default to
``None`` and are filled from ``FAMILY_DEFAULTS`` when the config is built, so ``to_dict`` always
returns the full effective configuration and ``from_dict(cfg.to_dict()) == cfg``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .errors import ConfigError, did_you_mean
from .knobs import ARCH, BY_NAME, FAMILIES, RULES_TABLE, STACKED, ArchKnob
from .radix import digits_for
from .sharing import format_pattern, parse_pattern

# Derived from the knob table (searchspace/knobs.py) for the modules that read them by these names.
COUPLED_DEFAULT = BY_NAME["coupled_scale"].active_default  # Couplformer's released code (wer010/Couplformer, 2022)
# Defaults filled per family for knobs left unset (the tasks read them).
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    f: {k.name: k.family_defaults[f] for k in ARCH if f in k.family_defaults} for f in FAMILIES
}
# Every rule between knobs, with the knobs its outcome depends on. The search space uses this to
# check a study's discrete part rule by rule (searchspace/space_check.py).
RULES: dict[str, frozenset[str]] = {r.name: r.reads for r in RULES_TABLE}


def _with_knob_fields(cls: type) -> type:
    """Give ``cls`` one dataclass field per knob of the table, in table order, then make it a frozen dataclass."""
    cls.__annotations__ = {knob.name: knob.type for knob in ARCH}
    for knob in ARCH:
        setattr(cls, knob.name, knob.default)
    return dataclass(frozen=True)(cls)


@_with_knob_fields
class ArchConfig:
    """One architecture: the family, every knob of the four papers, and the input sizes.

    Its fields are the knobs of ``searchspace/knobs.py: ARCH`` (name, type, default), added by
    ``_with_knob_fields``; docs/knobs.md lists them.
    """

    def __post_init__(self) -> None:
        problems = _type_problems(self)
        if problems:
            raise ConfigError(problems)
        self._normalise()
        problems = _rule_problems(self)
        if problems:
            raise ConfigError([(knob, message) for _, knob, message in problems])

    def _normalise(self) -> None:
        """Parse patterns and fill family and activation defaults (frozen, so via object.__setattr__)."""
        set_ = object.__setattr__
        for knob in ARCH:
            value = getattr(self, knob.name)
            if knob.kind == "pattern" and value is not None:
                set_(self, knob.name, parse_pattern(value))
            elif knob.kind == "grid" and isinstance(value, list):
                set_(self, knob.name, tuple(value))
        for knob in ARCH:
            if self.family in knob.family_defaults and getattr(self, knob.name) is None:
                set_(self, knob.name, knob.family_defaults[self.family])
        values = self.__dict__
        for knob in ARCH:  # after the family defaults: an activation may read one (sketch_n reads pooling)
            if knob.active_default is not None and getattr(self, knob.name) is None and knob.activation.holds(values):
                set_(self, knob.name, knob.active_default)

    # ---- derived values -------------------------------------------------------------------
    @property
    def ffn_dim(self) -> int:
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    @property
    def stacks(self) -> tuple[str, ...]:
        """The stacks the family has: ``encoder``, and ``decoder`` for ``mcan`` and ``ort``."""
        return ("encoder", "decoder") if self.family in STACKED else ("encoder",)

    @property
    def depths(self) -> dict[str, int]:
        """Layer count of each stack the family has."""
        if self.family in STACKED:
            return {"encoder": self.encoder_layers or self.layers, "decoder": self.decoder_layers or self.layers}
        return {"encoder": self.layers}

    def sharing_pattern(self, stack: str) -> tuple[int, ...]:
        """The effective cross-layer sharing pattern of ``stack`` (``encoder``/``decoder``)."""
        override = {"encoder": self.encoder_layer_sharing, "decoder": self.decoder_layer_sharing}[stack]
        pattern = override or self.layer_sharing
        return pattern if pattern is not None else tuple(range(self.depths[stack]))

    def attention_sharing_of(self, stack: str) -> str:
        override = {"encoder": self.encoder_attention_sharing, "decoder": self.decoder_attention_sharing}[stack]
        return override or self.attention_sharing

    @property
    def radix_digits(self) -> int | None:
        """Digits per word when radix encoding is on (ACORT Eq. 1): ceil(log_v(vocab))."""
        if self.radix_base is None:
            return None
        return digits_for(self.vocab_size, self.radix_base)

    # ---- (de)serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain, YAML-safe dict of every knob that is set (patterns in the paper's notation)."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if value is None:
                continue
            if BY_NAME[key].kind == "pattern":
                value = format_pattern(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchConfig:
        """Build from a mapping; unknown keys are reported with a did-you-mean."""
        if not isinstance(data, dict):
            raise ConfigError([("<config>", f"an architecture is a mapping of knobs, got {type(data).__name__}")])
        known = knob_names()
        unknown = [(k, f"unknown knob{did_you_mean(k, known)}") for k in data if k not in known]
        if unknown:
            raise ConfigError(unknown)
        return cls(**data)

    def replace(self, **changes: Any) -> ArchConfig:
        return replace(self, **changes)


def knob_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(ArchConfig))


# ---- validation ---------------------------------------------------------------------------------
def _int_problem(knob: ArchKnob, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer, got {value!r}"
    if value < 1:
        return f"must be >= 1, got {value}"
    if value > knob.limit:
        return f"must be at most {knob.limit:,} (the knob's limit), got {value:,}"
    return None


def _bool_problem(knob: ArchKnob, value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {value!r}"


def _float_problem(knob: ArchKnob, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        return f"must be a number in [0, 1), got {value!r}"
    return None


def _choice_problem(knob: ArchKnob, value: Any) -> str | None:
    if value in knob.choices:
        return None
    return f"must be one of {', '.join(knob.choices)}, got {value!r}{did_you_mean(str(value), knob.choices)}"


def _pattern_problem(knob: ArchKnob, value: Any) -> str | None:
    try:
        parse_pattern(value)
    except ValueError as exc:
        return f"{value!r}: {exc}"
    return None


def _grid_problem(knob: ArchKnob, value: Any) -> str | None:
    if not (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)
    ):
        return f"must be two positive integers [height, width], got {value!r}"
    if max(value) > knob.limit:
        return f"each side must be at most {knob.limit:,} (the knob's limit), got {list(value)}"
    return None


# One check per kind of knob, in the order problems are reported.
_KIND_CHECKS: dict[str, Callable[[ArchKnob, Any], str | None]] = {
    "int": _int_problem,
    "bool": _bool_problem,
    "float": _float_problem,
    "choice": _choice_problem,
    "pattern": _pattern_problem,
    "grid": _grid_problem,
}


def _type_problems(cfg: ArchConfig) -> list[tuple[str, str]]:
    """Type checks first: later rules assume the right types."""
    problems = []
    for kind, check in _KIND_CHECKS.items():
        for knob in ARCH:
            value = getattr(cfg, knob.name)
            if knob.kind == kind and not (value is None and knob.optional):
                if (message := check(knob, value)) is not None:
                    problems.append((knob.name, message))
    if cfg.family in FAMILIES:
        for knob in sorted(ARCH, key=lambda k: k.name):
            if cfg.family not in knob.families and getattr(cfg, knob.name) is not None:
                problems.append(
                    (knob.name, f"does not apply to family `{cfg.family}` (used by {', '.join(sorted(knob.families))})")
                )
    return problems


def _unchecked(values: dict[str, Any]) -> ArchConfig:
    cfg = object.__new__(ArchConfig)
    for f in fields(ArchConfig):
        object.__setattr__(cfg, f.name, values.get(f.name, f.default))
    return cfg


def type_problems(values: dict[str, Any]) -> list[tuple[str, str]]:
    """``(knob, message)`` for every knob of ``values`` with a wrong type or value, without raising."""
    return _type_problems(_unchecked(values))


def rule_violations(values: dict[str, Any]) -> list[tuple[str, str, str]] | None:
    """``(rule, knob, message)`` for every broken rule of a would-be configuration, without raising.

    Returns None when the values fail the type checks (rules assume the right types).
    """
    cfg = _unchecked(values)
    if _type_problems(cfg):
        return None
    cfg._normalise()
    return _rule_problems(cfg)


def _rule_problems(cfg: ArchConfig) -> list[tuple[str, str, str]]:
    """Rules between knobs (divisibility, dependencies, pattern lengths), as (rule, knob, message)."""
    return [(r.name, knob, message) for r in RULES_TABLE for knob, message in r.check(cfg)]
