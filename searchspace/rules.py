"""Rules between knobs: each a small function of a normalised ``ArchConfig`` that declares the knobs it reads.

Two kinds. An *activation* rule is derived from a knob's ``active_when`` (``activation_rule``): where
the condition does not hold, the knob keeps its neutral value. A rule *between* knobs (divisibility,
pattern lengths, kv sharing) is written below under ``@rule(name, *knobs it reads)``;
``tests/test_knob_table.py`` checks that it reads no other knob. ``config.py`` runs both whenever an
``ArchConfig`` is built, and ``space_check.py`` runs the rules between knobs over a study's space.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .conditions import same_value
from .domains import show_value
from .knob_fields import STACKED, ArchKnob
from .sharing import format_pattern

if TYPE_CHECKING:  # for the annotations only: config.py imports this module to run the rules
    from .config import ArchConfig

Check = Callable[["ArchConfig"], Iterator[tuple[str, str]]]


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
    assert condition is not None, knob.name  # only knobs with `active_when` have one
    reads = frozenset({knob.name, *condition.knobs})

    def check(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
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


BETWEEN: list[Rule] = []  # the rules between knobs, in the order their messages are reported


def rule(name: str, *reads: str) -> Callable[[Check], Check]:
    """Register the decorated function as rule ``name`` reading ``reads``; its docstring says what it checks."""

    def register(check: Check) -> Check:
        BETWEEN.append(Rule(name, frozenset(reads), check, (check.__doc__ or "").strip()))
        return check

    return register


_STACK_SHARING = ("attention_sharing", "encoder_attention_sharing", "decoder_attention_sharing")
_DEPTHS = ("layers", "encoder_layers", "decoder_layers")
_PATTERNS = ("layer_sharing", "encoder_layer_sharing", "decoder_layer_sharing")


@rule("heads_divide_d_model", "d_model", "heads")
def _heads_divide_d_model(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """`d_model` is divisible by `heads`."""
    if cfg.d_model % cfg.heads:
        yield "d_model", f"{cfg.d_model} must be divisible by `heads` ({cfg.heads})"


# LW-Transformer §III-B: k groups, each running h/k heads on d/k features.
@rule("grouping_needs_groups", "groups", "g_mha", "g_ffn")
def _grouping_needs_groups(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """`g_mha` and `g_ffn` need `groups` >= 2."""
    for knob, on in (("g_mha", cfg.g_mha), ("g_ffn", cfg.g_ffn)):
        if on and cfg.groups < 2:
            yield knob, f"needs `groups` >= 2, got groups={cfg.groups}"


@rule("groups_divide_heads", "heads", "groups", "g_mha")
def _groups_divide_heads(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """with `g_mha`, `heads` is divisible by `groups`: each group runs heads/groups heads."""
    if cfg.g_mha and cfg.groups > 1 and cfg.heads % cfg.groups:
        yield (
            "heads",
            f"{cfg.heads} must be divisible by `groups` ({cfg.groups}): G-MHA runs heads/groups heads per group",
        )


@rule("groups_divide_d_model", "d_model", "groups", "g_mha", "g_ffn")
def _groups_divide_d_model(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """with grouping, `d_model` is divisible by `groups`."""
    if (cfg.g_mha or cfg.g_ffn) and cfg.groups > 1 and cfg.d_model % cfg.groups:
        yield "d_model", f"{cfg.d_model} must be divisible by `groups` ({cfg.groups})"


@rule("groups_divide_d_ff", "d_ff", "d_model", "groups", "g_ffn")
def _groups_divide_d_ff(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """with `g_ffn`, `d_ff` is divisible by `groups`."""
    if cfg.g_ffn and cfg.groups > 1 and cfg.ffn_dim % cfg.groups:
        yield "d_ff", f"{cfg.ffn_dim} must be divisible by `groups` ({cfg.groups}) for G-FFN"


# ACORT attention sharing: kv feeds the projected key in as the value, so widths must match.
@rule("kv_needs_no_expansion", *_STACK_SHARING, "qk_expansion")
def _kv_needs_no_expansion(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """`kv` attention sharing (of any stack) needs `qk_expansion: 1`: the key is reused as the value."""
    overrides = {
        "encoder": ("encoder_attention_sharing", cfg.encoder_attention_sharing),
        "decoder": ("decoder_attention_sharing", cfg.decoder_attention_sharing),
    }
    for stack in cfg.stacks:
        if cfg.attention_sharing_of(stack) == "kv" and cfg.qk_expansion > 1:
            knob, own = overrides[stack]
            yield (
                knob if own else "attention_sharing",
                f"`kv` reuses the key as the value, which needs qk_expansion 1 (got {cfg.qk_expansion})",
            )


# ACORT cross-layer sharing: one index per layer of the stack.
@rule("pattern_length", *_DEPTHS, *_PATTERNS)
def _pattern_length(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """a sharing pattern has one entry per layer of the stack it applies to."""
    overrides = {
        "encoder": ("encoder_layer_sharing", cfg.encoder_layer_sharing, "encoder_layers"),
        "decoder": ("decoder_layer_sharing", cfg.decoder_layer_sharing, "decoder_layers"),
    }
    for stack, depth in cfg.depths.items():
        override, own, stack_depth = overrides[stack]
        if (own or cfg.layer_sharing) is None:
            continue  # every layer its own: the length matches by construction (and `layers` may be huge)
        pattern = cfg.sharing_pattern(stack)
        if len(pattern) != depth:
            depth_knob = stack_depth if cfg.family in STACKED else "layers"
            yield (
                override if own is not None else "layer_sharing",
                f"{format_pattern(pattern)} has {len(pattern)} entries but the {stack} has {depth} layers "
                f"(`{depth_knob}`)",
            )


@rule("radix_base_min", "radix_base")
def _radix_base_min(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """`radix_base` is at least 2."""
    if cfg.radix_base is not None and cfg.radix_base < 2:
        yield "radix_base", f"must be >= 2, got {cfg.radix_base}"


@rule("coupled_needs_grid", "attention", "family")
def _coupled_needs_grid(cfg: ArchConfig) -> Iterator[tuple[str, str]]:
    """`attention: coupled` needs the 2-D token grid of family `encoder`."""
    if cfg.attention == "coupled" and cfg.family != "encoder":
        yield "attention", "`coupled` needs a 2-D token grid, which only family `encoder` has"
