"""``knob(...)`` and ``setting(...)``: dataclass fields that carry their knob's metadata.

``ArchConfig`` (``config.py``) and ``TrainSettings`` (``training.py``) write every field out, each
as ``name: type = knob(default, help, ...)``; the metadata (limits, families, activation, help)
rides on the field. ``arch_knobs`` and ``training_knobs`` read a class's fields back as the knob
table's records (``ArchKnob``, ``TrainingKnob``; the kind or type from the field's annotation), and
each record checks itself when it is built, so a malformed field fails the import of the module that
defines its class.
``Rule`` is the record of a rule between knobs; ``activation_rule`` derives one from a knob's
``active_when`` (the knob keeps its neutral value where the condition does not hold).

Torch-free: the CLI and the study checker import this without torch.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .conditions import Condition, same_value
from .domains import show_value
from .errors import did_you_mean
from .sharing import parse_pattern

FAMILIES = ("encoder", "mcan", "ort", "retrieval")
STACKED = ("mcan", "ort")  # the families with an encoder and a decoder stack
KINDS = ("int", "bool", "float", "choice", "pattern", "grid")  # in the order type problems are reported

# The sections of docs/knobs.md, in order; every architecture knob names one.
FAMILY_SECTION = "Family"
WIDTHS = "Widths and depths"
LW = "LW-Transformer (group-wise transformation)"
ACORT = "ACORT"
COUPLFORMER = "Couplformer"
TEMDE = "T-EMDE"
INPUTS = "Input sizes (what the model is built for and the cost model counts with)"
SECTIONS = (FAMILY_SECTION, WIDTHS, LW, ACORT, COUPLFORMER, TEMDE, INPUTS)

T = TypeVar("T")


@dataclass(frozen=True)
class ArchKnob:
    """One architecture knob: its type and domain, defaults, families, activation and help.

    ``name``, ``kind`` and ``default`` come from the ``ArchConfig`` field; the rest is the field's metadata.
    """

    name: str
    kind: str  # one of KINDS, from the field's annotation; a float knob is a fraction in [0, 1) (dropout)
    default: Any  # where unset (None: unset, filled from `family_defaults` or `active_default`)
    help: str
    section: str
    families: tuple[str, ...] = FAMILIES  # the families it may be set for; others refuse it
    family_defaults: Mapping[str, Any] = field(default_factory=dict)  # per family, where unset
    limit: int | None = None  # int: at most this (at least 1); grid: per side
    choices: tuple[str, ...] = ()  # choice: the allowed values
    active_when: Any = None  # where it applies, in the study language's `when:` syntax
    neutral: Any = None  # its value where `active_when` does not hold
    active_default: Any = None  # filled where `active_when` holds and the knob is unset
    # The error where the knob is set but `active_when` does not hold, formatted with the knobs it names
    # (None: "is set to V but only applies with `k: v` (k is ...)", from `active_when`).
    inactive_error: str | None = None
    # What `neutral` means ("no grouping"), for a knob whose neutral value is never valid where it is
    # active: a study may still list it, and it stands for the points where the knob is inactive.
    neutral_means: str | None = None
    input_size: bool = False  # fixed by the task: a study may set it, never search it
    default_doc: str | None = None  # the default as docs/knobs.md shows it, where derived from other knobs

    def __post_init__(self) -> None:
        """The table checks itself when imported: a knob that breaks one of these is a bug in the table."""
        inactive_only = (self.neutral, self.active_default, self.inactive_error, self.neutral_means)
        problems = [
            (self.kind not in KINDS, f"kind must be one of {', '.join(KINDS)}"),
            (self.section not in SECTIONS, f"section must be one of {', '.join(SECTIONS)}"),
            (
                (self.limit is not None) != (self.kind in ("int", "grid")),
                "int and grid knobs, and only they, have a limit",
            ),
            ((self.kind == "choice") != bool(self.choices), "choice knobs (str fields), and only they, have choices"),
            (not set(self.families) <= set(FAMILIES), "families must be among FAMILIES"),
            (not set(self.family_defaults) <= set(self.families), "family_defaults may name only its families"),
            (
                self.families != FAMILIES and self.default is not None,
                "a knob of some families only defaults to None (give `family_defaults` instead)",
            ),
            (
                self.active_when is None and any(v is not None for v in inactive_only),
                "only a knob with `active_when` has a neutral value, an active default, an inactive error or "
                "`neutral_means`",
            ),
            (self.neutral_means is not None and self.neutral is None, "`neutral_means` needs a `neutral` value"),
        ]
        broken = [message for failed, message in problems if failed]
        if broken:
            raise ValueError(f"knob table: {self.name}: {'; '.join(broken)}")

    @property
    def optional(self) -> bool:
        """Whether the knob may be null (unset) in a configuration."""
        return self.default is None

    @functools.cached_property
    def activation(self) -> Condition | None:
        """``active_when`` parsed, as the search space and ``ArchConfig`` evaluate it."""
        return None if self.active_when is None else Condition.parse(self.active_when)

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not a valid value of this knob on its own (None when it is, or is unset)."""
        if value is None and self.optional:
            return None
        return _KIND_CHECKS[self.kind](self, value)


def knob(
    default: T,
    help: str,
    *,
    section: str,
    families: tuple[str, ...] = FAMILIES,
    family_defaults: Mapping[str, Any] | None = None,
    limit: int | None = None,
    choices: tuple[str, ...] = (),
    active_when: Any = None,
    neutral: Any = None,
    active_default: Any = None,
    inactive_error: str | None = None,
    neutral_means: str | None = None,
    input_size: bool = False,
    default_doc: str | None = None,
) -> T:
    """An ``ArchConfig`` field with default ``default`` and its knob's metadata (``ArchKnob`` says what each means)."""
    metadata = {
        "help": help,
        "section": section,
        "families": families,
        "family_defaults": dict(family_defaults or {}),
        "limit": limit,
        "choices": choices,
        "active_when": active_when,
        "neutral": neutral,
        "active_default": active_default,
        "inactive_error": inactive_error,
        "neutral_means": neutral_means,
        "input_size": input_size,
        "default_doc": default_doc,
    }
    return field(default=default, metadata=metadata)


def arch_knobs(cls: type) -> tuple[ArchKnob, ...]:
    """The knob records of a dataclass whose fields are ``knob(...)``s, in field order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        base, optional = _unwrap_optional(hints[f.name])
        if base not in _KIND_OF:
            raise ValueError(f"knob table: {f.name}: the annotation must be one of {_ANNOTATIONS} (or `| None`)")
        if optional != (f.default is None):
            raise ValueError(f"knob table: {f.name}: a knob is `T | None` exactly when it defaults to None")
        out.append(ArchKnob(f.name, _KIND_OF[base], f.default, **f.metadata))
    return tuple(out)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    """``(T, True)`` for ``T | None``, ``(T, False)`` otherwise."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return annotation, False


# The annotation of each kind of field (after `| None`): a pattern is a tuple of layer indices, a grid (h, w).
_KIND_OF: dict[Any, str] = {
    int: "int",
    bool: "bool",
    float: "float",
    str: "choice",
    tuple[int, ...]: "pattern",
    tuple[int, int]: "grid",
}
_ANNOTATIONS = "int, bool, float, str, tuple[int, ...], tuple[int, int]"


# ---- rules between knobs ----------------------------------------------------------------------------
Check = Callable[[Any], Iterator[tuple[str, str]]]  # a rule's check of a normalised ArchConfig


@dataclass(frozen=True)
class Rule:
    """A rule between knobs: ``check(cfg)`` yields ``(knob, message)`` per violation and reads only ``reads``."""

    name: str
    reads: frozenset[str]
    check: Check
    doc: str  # what it checks, one sentence (docs/knobs.md)
    activation: bool = False  # derived from a knob's `active_when`: a study searches the knob only where it holds


def activation_rule(knob: ArchKnob) -> Rule:
    """The rule that keeps ``knob`` at its neutral value wherever its ``active_when`` does not hold."""
    condition = knob.activation
    if condition is None:
        raise ValueError(f"knob table: {knob.name}: only a knob with `active_when` has an activation rule")
    reads = frozenset({knob.name, *condition.knobs})

    def check(cfg: Any) -> Iterator[tuple[str, str]]:
        values = {name: getattr(cfg, name) for name in sorted(reads)}
        if condition.holds(values) or same_value(values[knob.name], knob.neutral):
            return
        if knob.inactive_error is not None:
            yield knob.name, knob.inactive_error.format(**values)
        else:
            where = " or ".join(", ".join(f"`{k}: {show_value(v[0])}`" for k, v in c) for c in condition.clauses)
            now = ", ".join(f"{k} is {values[k]!r}" for k in sorted(condition.knobs))
            yield knob.name, f"is set to {values[knob.name]!r} but only applies with {where} ({now})"

    unset = "unset" if knob.neutral is None else show_value(knob.neutral)
    doc = f"`{knob.name}` is {unset} unless {condition.describe()}."
    return Rule(f"{knob.name}_activation", reads, check, doc, activation=True)


# ---- a value of one knob, on its own ----------------------------------------------------------------
def _int_problem(knob: ArchKnob, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer, got {value!r}"
    if value < 1:
        return f"must be >= 1, got {value}"
    if knob.limit is not None and value > knob.limit:
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
    if knob.limit is not None and max(value) > knob.limit:
        return f"each side must be at most {knob.limit:,} (the knob's limit), got {list(value)}"
    return None


_KIND_CHECKS: dict[str, Callable[[ArchKnob, Any], str | None]] = {
    "int": _int_problem,
    "bool": _bool_problem,
    "float": _float_problem,
    "choice": _choice_problem,
    "pattern": _pattern_problem,
    "grid": _grid_problem,
}


# ---- training settings ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainingKnob:
    """One training setting: its type, default, the rule a value must meet, and what it does.

    ``name``, ``type`` and ``default`` come from the ``TrainSettings`` field; the rest is the field's metadata.
    """

    name: str
    type: type  # the field's annotation without `| None`
    default: Any
    help: str
    rule: str  # "must be <rule>"
    ok: Callable[[Any], bool]
    searchable: bool = True  # may be searched in a study's `space`
    per_study: bool = True  # may be set in a study's `training` (epochs and seed come from elsewhere)
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """The table checks itself when imported: a default must meet its own rule."""
        if not self.ok(self.default):
            raise ValueError(f"knob table: {self.name}: the default {self.default!r} is not {self.rule}")


def setting(
    default: T,
    help: str,
    *,
    rule: str,
    ok: Callable[[Any], bool],
    searchable: bool = True,
    per_study: bool = True,
    choices: tuple[str, ...] = (),
) -> T:
    """A ``TrainSettings`` field with default ``default`` and its setting's metadata (see ``TrainingKnob``)."""
    metadata = {"help": help, "rule": rule, "ok": ok, "searchable": searchable, "per_study": per_study}
    return field(default=default, metadata={**metadata, "choices": choices})


def training_knobs(cls: type) -> tuple[TrainingKnob, ...]:
    """The setting records of a dataclass whose fields are ``setting(...)``s, in field order."""
    hints = typing.get_type_hints(cls)
    return tuple(
        TrainingKnob(f.name, _unwrap_optional(hints[f.name])[0], f.default, **f.metadata)
        for f in dataclasses.fields(cls)
    )
