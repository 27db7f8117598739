"""The knob table: every knob of the vocabulary, once.

Each architecture knob (``ArchKnob``) has its name, type, limits, default, the families it applies
to and their defaults, when it is active and its neutral value elsewhere, and its help text; each
rule between knobs (``Rule``) is a small function that declares the knobs it reads. The training
knobs (``TrainingKnob``) close the table. Everything that repeats a knob is derived from here:
``ArchConfig``'s fields, validation and defaults (``config.py``), the search space's activation and
the study language's checks (``space.py``, ``space_check.py``), ``docs/knobs.md``
(``python -m searchspace.knobs_doc > docs/knobs.md``), the model registry's coverage test and the
dashboard's sample trials. Adding a knob is one ``ArchKnob(...)`` line below (plus the layer that
reads it, if it changes the model); docs/architecture.md shows the diff.

Torch-free: the CLI and the study checker import this without torch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .conditions import Condition
from .sharing import MAX_LAYERS, format_pattern

FAMILIES = ("encoder", "mcan", "ort", "retrieval")
STACKED = ("mcan", "ort")  # the families with an encoder and a decoder stack
KINDS = ("int", "bool", "float", "choice", "pattern", "grid")
FAMILY_HELP = {
    "encoder": (
        "ViT-style classifier over an h×w grid of patch features, pre-LN, pooled head (no CLS token, so "
        "coupled attention sees the whole grid)",
        "patches `(B, h·w, patch_features)`",
    ),
    "mcan": (
        "LW-Transformer's VQA baseline: post-LN self-attention encoder over question tokens; decoder of "
        "self-attention + guided attention + FFN over image regions; both pooled, summed, classified",
        "question ids `(B, Tq)` (0 = pad), regions `(B, R, F)`",
    ),
    "ort": (
        "ACORT's captioning baseline (Object Relation Transformer): regions `Linear(F, d)`+ReLU, pre-LN encoder "
        "with the box-relation term, pre-LN decoder (masked self- + cross-attention), embeddings ×√d + "
        "sinusoidal positions, untied output layer with bias",
        "regions, boxes `(B, R, 4)` as (x0, y0, x1, y1) in 0–1 image coordinates (the box-relation embedding "
        "follows the authors' code, which adds 1.0 to widths and heights: docs/paper-fidelity.md), tokens "
        "`(B, T)`",
    ),
    "retrieval": (
        "image and text towers whose global vectors come from `pooling`; T-EMDE's concatenation head "
        "(Linear + ReLU + Linear) scores every image-text pair",
        "regions, caption ids `(B, T)`",
    ),
}  # what each family builds, and its forward inputs
SECTIONS = (
    "Family",
    "Widths and depths",
    "LW-Transformer (group-wise transformation)",
    "ACORT",
    "Couplformer",
    "T-EMDE",
    "Input sizes (what the model is built for and the cost model counts with)",
)


@dataclass(frozen=True)
class ArchKnob:
    """One architecture knob: its type and domain, defaults, families, activation and help."""

    name: str
    kind: str  # one of KINDS; a float knob is a fraction in [0, 1) (dropout)
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
    input_size: bool = False  # fixed by the task: a study may set it, never search it
    default_doc: str | None = None  # the default as docs/knobs.md shows it, where derived from other knobs

    def __post_init__(self) -> None:
        """The table checks itself when imported: a knob that breaks one of these is a bug in the table."""
        problems = [
            (self.kind not in KINDS, f"kind must be one of {', '.join(KINDS)}"),
            (self.section not in SECTIONS, f"section must be one of {', '.join(SECTIONS)}"),
            (
                (self.limit is not None) != (self.kind in ("int", "grid")),
                "int and grid knobs, and only they, have a limit",
            ),
            ((self.kind == "choice") != bool(self.choices), "choice knobs, and only they, have choices"),
            (not set(self.families) <= set(FAMILIES), "families must be among FAMILIES"),
            (not set(self.family_defaults) <= set(self.families), "family_defaults may name only its families"),
            (
                self.families != FAMILIES and self.default is not None,
                "a knob of some families only defaults to None (give `family_defaults` instead)",
            ),
            (
                self.active_when is None and (self.neutral, self.active_default) != (None, None),
                "only a knob with `active_when` has a neutral value or an active default",
            ),
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

    @property
    def type(self) -> Any:
        """The field's annotation in ``ArchConfig``."""
        base = {
            "int": int,
            "bool": bool,
            "float": float,
            "choice": str,
            "pattern": tuple[int, ...],
            "grid": tuple[int, int],
        }[self.kind]
        return base | None if self.optional else base


# Limits: far above any Transformer the papers describe. Within them every tensor of a model has fewer
# than 2**63 bytes, so the cost model can shape it on the meta device; a value beyond is refused rather
# than sized (d_model: 1e9 would overflow).
_SIZE = 65_536  # widths and token counts
_GROUPING = [{"g_mha": True}, {"g_ffn": True}]
_WIDE = "Widths and depths"
_LW, _ACORT, _COUPLED, _TEMDE = SECTIONS[2], "ACORT", "Couplformer", "T-EMDE"
_INPUT = SECTIONS[-1]
_PATTERN_HELP = (
    "pattern in the paper's notation, `(0,0,1,1,2,2)`, `(0x3,1x3)`, `(0,1,2,2,1,0)`, `(0x6)`; one "
    "entry per layer of every stack; independent layers numbered 0..m−1 without gaps. Shared depths "
    "are the same module (LayerNorms included); each stack's final LayerNorm is separate (ACORT §4.2)"
)
_SHARING = ("none", "qk", "kv")

ARCH: tuple[ArchKnob, ...] = (
    ArchKnob("family", "choice", "encoder", "the base architecture (the families above)", "Family", choices=FAMILIES),
    # widths and depths
    ArchKnob("d_model", "int", 128, "model width d", _WIDE, limit=_SIZE),
    ArchKnob("d_ff", "int", None, "inner FFN width", _WIDE, limit=4 * _SIZE, default_doc="4·`d_model`"),
    ArchKnob("heads", "int", 4, "attention heads h", _WIDE, limit=1024),
    ArchKnob("layers", "int", 2, "depth of every stack unless overridden", _WIDE, limit=MAX_LAYERS),
    ArchKnob(
        "encoder_layers",
        "int",
        None,
        "depth of the encoder stack",
        _WIDE,
        families=STACKED,
        limit=MAX_LAYERS,
        default_doc="`layers`",
    ),
    ArchKnob(
        "decoder_layers",
        "int",
        None,
        "depth of the decoder stack",
        _WIDE,
        families=STACKED,
        limit=MAX_LAYERS,
        default_doc="`layers`",
    ),
    ArchKnob("dropout", "float", 0.1, "dropout everywhere; a number in [0, 1)", _WIDE),
    ArchKnob(
        "qkv_bias",
        "bool",
        True,
        "biases on the Q, K and V projections (W_O always keeps its bias). On in MCAN, ORT and Couplformer's "
        "`vic.py`; off in Couplformer's KCT `Attention` (docs/paper-fidelity.md). Off saves each projection's "
        "bias (as wide as its output): (2n + 1)·d per attention module with `qk_expansion` n (3·d at n = 1), "
        "(n + 1)·d with `attention_sharing: qk`, 2·d with `kv`; ÷k with `weight_sharing`",
        _WIDE,
    ),
    # LW-Transformer (group-wise transformation)
    ArchKnob(
        "groups",
        "int",
        1,
        "k; > 1 needs `g_mha` or `g_ffn`; in a study, `groups: {choice: [1, 2, 4]}` is "
        "fine: k = 1 is the points without grouping (docs/studies.md). Grouped projections run as one batched "
        "einsum over a group axis (searchspace/layers/grouped_linear.py)",
        _LW,
        limit=1024,
        active_when=_GROUPING,
        neutral=1,
    ),
    ArchKnob(
        "g_mha",
        "bool",
        False,
        "G-MHA (Eq. 6): features split into k chunks *before* the Q/K/V projections; "
        "each group runs heads/groups heads; needs groups ≥ 2",
        _LW,
    ),
    ArchKnob(
        "g_ffn", "bool", False, "G-FFN (Eq. 8): the second FFN layer runs in k groups; the first stays dense", _LW
    ),
    ArchKnob(
        "weight_sharing",
        "bool",
        False,
        "one set of group weights serves all k groups (§III-B)",
        _LW,
        active_when=_GROUPING,
        neutral=False,
    ),
    ArchKnob(
        "qk_expansion",
        "int",
        1,
        "n: Q and K projected to n·d (head size n·d/h; Tab. I, II)",
        _LW,
        limit=64,
        active_when={"g_mha": True},
        neutral=1,
    ),
    ArchKnob(
        "g_lml",
        "bool",
        False,
        "G-LML: the merge layer W_O is grouped too (Tab. III)",
        _LW,
        active_when={"g_mha": True},
        neutral=False,
    ),
    ArchKnob(
        "g_il",
        "bool",
        False,
        "G-IL: the first FFN layer is grouped too (Tab. III)",
        _LW,
        active_when={"g_ffn": True},
        neutral=False,
    ),
    # ACORT
    ArchKnob("layer_sharing", "pattern", None, _PATTERN_HELP, _ACORT),
    ArchKnob(
        "encoder_layer_sharing",
        "pattern",
        None,
        "per-stack override of `layer_sharing`",
        _ACORT,
        families=STACKED,
        default_doc="`layer_sharing`",
    ),
    ArchKnob(
        "decoder_layer_sharing",
        "pattern",
        None,
        "per-stack override of `layer_sharing`",
        _ACORT,
        families=STACKED,
        default_doc="`layer_sharing`",
    ),
    ArchKnob(
        "attention_sharing",
        "choice",
        "none",
        "`qk`: Q and K share one projection (Q=W0(q), K=W0(k), "
        "V=W1(v), O=W2); `kv`: the projected key is reused as the value (Q=W0, K=W1, V=K, O=W2), in self- and "
        "cross-attention (§4.3, Tab. 10)",
        _ACORT,
        choices=_SHARING,
    ),
    ArchKnob(
        "encoder_attention_sharing",
        "choice",
        None,
        "per-stack override of `attention_sharing`",
        _ACORT,
        families=STACKED,
        choices=_SHARING,
        default_doc="`attention_sharing`",
    ),
    ArchKnob(
        "decoder_attention_sharing",
        "choice",
        None,
        "per-stack override of `attention_sharing`",
        _ACORT,
        families=STACKED,
        choices=_SHARING,
        default_doc="`attention_sharing`",
    ),
    ArchKnob(
        "radix_base",
        "int",
        None,
        "v: words become ⌈log_v(vocab_size)⌉ digit tokens, most-significant first; "
        "vocabulary v+3 (pad 0, digits 1..v, BOS v+1, EOS v+2) (§4.1, Tab. 6)",
        _ACORT,
        families=("ort",),
        limit=1_000_000,
        default_doc="none (word tokens)",
    ),
    # Couplformer
    ArchKnob(
        "attention",
        "choice",
        "standard",
        "`coupled`: softmax(A)·V_c·softmax(B)ᵀ with A over rows (h×h) and B "
        "over columns (w×w) of the token grid, never forming the (hw)×(hw) map (§3)",
        _COUPLED,
        choices=("standard", "coupled"),
    ),
    ArchKnob(
        "coupled_scale",
        "choice",
        None,
        "the scale of each logit map A and B before its softmax: `quarter` "
        "multiplies it by d_h^−1/4 (the authors' released code, wer010/Couplformer, 2022); `half` by d_h^−1/2 "
        "(their 2021 code; what standard attention uses). lwnas's coupled kernel used `half` before this knob "
        "existed: add `coupled_scale: half` to a configuration or export saved earlier to rebuild the model it "
        "trained (a checkpoint saved earlier rebuilds with `quarter`)",
        _COUPLED,
        families=("encoder",),
        choices=("quarter", "half"),
        active_when={"attention": "coupled"},
        active_default="quarter",
    ),
    # T-EMDE
    ArchKnob(
        "pooling",
        "choice",
        None,
        "`mean`, `attention` (AttFlat-style), `sketch` (§3.2)",
        _TEMDE,
        families=("encoder", "mcan", "retrieval"),
        choices=("mean", "attention", "sketch"),
        family_defaults={"encoder": "mean", "retrieval": "mean", "mcan": "attention"},
    ),
    *(
        ArchKnob(
            name,
            "int",
            None,
            f"{what} of Listing 1's coder",
            _TEMDE,
            families=("encoder", "mcan", "retrieval"),
            limit=1024,
            active_when={"pooling": "sketch"},
            active_default=8,
        )
        for name, what in (("sketch_n", "depth N"), ("sketch_k", "width K"), ("sketch_d", "centroid space D"))
    ),
    # input sizes
    ArchKnob(
        "grid",
        "grid",
        None,
        "the token grid [height, width]",
        _INPUT,
        families=("encoder",),
        limit=1024,
        family_defaults={"encoder": (8, 8)},
        input_size=True,
    ),
    ArchKnob(
        "patch_features",
        "int",
        None,
        "features per patch",
        _INPUT,
        families=("encoder",),
        limit=_SIZE,
        family_defaults={"encoder": 1},
        input_size=True,
    ),
    ArchKnob(
        "num_classes",
        "int",
        None,
        "classes",
        _INPUT,
        families=("encoder",),
        limit=1_000_000,
        family_defaults={"encoder": 10},
        input_size=True,
    ),
    ArchKnob(
        "question_tokens",
        "int",
        None,
        "question length",
        _INPUT,
        families=("mcan",),
        limit=_SIZE,
        family_defaults={"mcan": 14},
        input_size=True,
    ),
    ArchKnob(
        "image_regions",
        "int",
        None,
        "image regions",
        _INPUT,
        families=("mcan", "ort", "retrieval"),
        limit=_SIZE,
        family_defaults={"mcan": 100, "ort": 50, "retrieval": 36},
        input_size=True,
    ),
    ArchKnob(
        "region_features",
        "int",
        None,
        "features per region",
        _INPUT,
        families=("mcan", "ort", "retrieval"),
        limit=_SIZE,
        family_defaults={"mcan": 2048, "ort": 2048, "retrieval": 2048},
        input_size=True,
    ),
    ArchKnob(
        "caption_tokens",
        "int",
        None,
        "caption length in words (radix digits multiply the decoder length)",
        _INPUT,
        families=("ort", "retrieval"),
        limit=_SIZE,
        family_defaults={"ort": 16, "retrieval": 16},
        input_size=True,
    ),
    ArchKnob(
        "vocab_size",
        "int",
        None,
        "word vocabulary",
        _INPUT,
        families=("mcan", "ort", "retrieval"),
        limit=10_000_000,
        family_defaults={"mcan": 10001, "ort": 10001, "retrieval": 10001},
        input_size=True,
    ),
    ArchKnob(
        "num_answers",
        "int",
        None,
        "answer classes",
        _INPUT,
        families=("mcan",),
        limit=1_000_000,
        family_defaults={"mcan": 3129},
        input_size=True,
    ),
)
BY_NAME: dict[str, ArchKnob] = {k.name: k for k in ARCH}


# ---- rules between knobs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """A rule between knobs: ``check(cfg)`` yields ``(knob, message)`` per violation and reads only ``reads``."""

    name: str
    reads: frozenset[str]
    check: Callable[[Any], Iterator[tuple[str, str]]]
    activation: bool  # "knob X applies only where ...": the search space makes it a condition (`active_when`)


RULES_TABLE: list[Rule] = []  # in the order messages are reported


def rule(name: str, *reads: str, activation: bool = False) -> Callable:
    """Register the decorated function as rule ``name`` reading ``reads`` (a normalised ``ArchConfig``)."""

    def register(check: Callable[[Any], Iterator[tuple[str, str]]]) -> Callable:
        RULES_TABLE.append(Rule(name, frozenset(reads), check, activation))
        return check

    return register


_STACK_SHARING = ("attention_sharing", "encoder_attention_sharing", "decoder_attention_sharing")
_DEPTHS = ("layers", "encoder_layers", "decoder_layers")
_PATTERNS = ("layer_sharing", "encoder_layer_sharing", "decoder_layer_sharing")


@rule("heads_divide_d_model", "d_model", "heads")
def _heads_divide_d_model(cfg):
    """`d_model` is divisible by `heads`."""
    if cfg.d_model % cfg.heads:
        yield "d_model", f"{cfg.d_model} must be divisible by `heads` ({cfg.heads})"


# LW-Transformer §III-B: k groups, each running h/k heads on d/k features.
@rule("groups_need_grouping", "groups", "g_mha", "g_ffn", activation=True)
def _groups_need_grouping(cfg):
    """`groups` > 1 needs `g_mha` or `g_ffn` (LW-Transformer §III-B)."""
    if cfg.groups > 1 and not (cfg.g_mha or cfg.g_ffn):
        yield "groups", f"{cfg.groups} has no effect without `g_mha` or `g_ffn`; set one or use groups: 1"


@rule("grouping_needs_groups", "groups", "g_mha", "g_ffn")
def _grouping_needs_groups(cfg):
    """`g_mha` and `g_ffn` need `groups` >= 2."""
    for knob, on in (("g_mha", cfg.g_mha), ("g_ffn", cfg.g_ffn)):
        if on and cfg.groups < 2:
            yield knob, f"needs `groups` >= 2, got groups={cfg.groups}"


@rule("groups_divide_heads", "heads", "groups", "g_mha")
def _groups_divide_heads(cfg):
    """with `g_mha`, `heads` is divisible by `groups`: each group runs heads/groups heads."""
    if cfg.g_mha and cfg.groups > 1 and cfg.heads % cfg.groups:
        yield (
            "heads",
            (f"{cfg.heads} must be divisible by `groups` ({cfg.groups}): G-MHA runs heads/groups heads per group"),
        )


@rule("groups_divide_d_model", "d_model", "groups", "g_mha", "g_ffn")
def _groups_divide_d_model(cfg):
    """with grouping, `d_model` is divisible by `groups`."""
    if (cfg.g_mha or cfg.g_ffn) and cfg.groups > 1 and cfg.d_model % cfg.groups:
        yield "d_model", f"{cfg.d_model} must be divisible by `groups` ({cfg.groups})"


@rule("groups_divide_d_ff", "d_ff", "d_model", "groups", "g_ffn")
def _groups_divide_d_ff(cfg):
    """with `g_ffn`, `d_ff` is divisible by `groups`."""
    if cfg.g_ffn and cfg.groups > 1 and cfg.ffn_dim % cfg.groups:
        yield "d_ff", f"{cfg.ffn_dim} must be divisible by `groups` ({cfg.groups}) for G-FFN"


@rule("weight_sharing_needs_grouping", "weight_sharing", "g_mha", "g_ffn", activation=True)
def _weight_sharing_needs_grouping(cfg):
    """`weight_sharing` needs `g_mha` or `g_ffn`."""
    if cfg.weight_sharing and not (cfg.g_mha or cfg.g_ffn):
        yield "weight_sharing", "shares group weights, so it needs `g_mha` or `g_ffn`"


@rule("qk_expansion_needs_g_mha", "qk_expansion", "g_mha", activation=True)
def _qk_expansion_needs_g_mha(cfg):
    """`qk_expansion` > 1 needs `g_mha`."""
    if cfg.qk_expansion > 1 and not cfg.g_mha:
        yield "qk_expansion", f"{cfg.qk_expansion} widens G-MHA's Q and K, so it needs `g_mha: true`"


@rule("g_lml_needs_g_mha", "g_lml", "g_mha", activation=True)
def _g_lml_needs_g_mha(cfg):
    """`g_lml` needs `g_mha`."""
    if cfg.g_lml and not cfg.g_mha:
        yield "g_lml", "groups G-MHA's merge layer, so it needs `g_mha: true`"


@rule("g_il_needs_g_ffn", "g_il", "g_ffn", activation=True)
def _g_il_needs_g_ffn(cfg):
    """`g_il` needs `g_ffn`."""
    if cfg.g_il and not cfg.g_ffn:
        yield "g_il", "groups G-FFN's first layer, so it needs `g_ffn: true`"


# ACORT attention sharing: kv feeds the projected key in as the value, so widths must match.
@rule("kv_needs_no_expansion", *_STACK_SHARING, "qk_expansion")
def _kv_needs_no_expansion(cfg):
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
def _pattern_length(cfg):
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
def _radix_base_min(cfg):
    """`radix_base` is at least 2."""
    if cfg.radix_base is not None and cfg.radix_base < 2:
        yield "radix_base", f"must be >= 2, got {cfg.radix_base}"


@rule("coupled_needs_grid", "attention", "family")
def _coupled_needs_grid(cfg):
    """`attention: coupled` needs the 2-D token grid of family `encoder`."""
    if cfg.attention == "coupled" and cfg.family != "encoder":
        yield "attention", "`coupled` needs a 2-D token grid, which only family `encoder` has"


@rule("coupled_scale_needs_coupled", "coupled_scale", "attention", activation=True)
def _coupled_scale_needs_coupled(cfg):
    """`coupled_scale` is set only with `attention: coupled`."""
    if cfg.coupled_scale is not None and cfg.attention != "coupled":
        yield (
            "coupled_scale",
            (
                f"is set to {cfg.coupled_scale!r} but only applies with `attention: coupled` "
                f"(attention is {cfg.attention!r})"
            ),
        )


@rule("sketch_needs_sketch_pooling", "pooling", "sketch_n", "sketch_k", "sketch_d", activation=True)
def _sketch_needs_sketch_pooling(cfg):
    """`sketch_n`, `sketch_k`, `sketch_d` are set only with `pooling: sketch`."""
    if cfg.pooling != "sketch":
        for knob, value in (("sketch_n", cfg.sketch_n), ("sketch_k", cfg.sketch_k), ("sketch_d", cfg.sketch_d)):
            if value is not None:
                yield knob, (f"is set to {value} but only applies with `pooling: sketch` (pooling is {cfg.pooling!r})")


def rules_of(knob: str) -> tuple[str, ...]:
    """The names of the rules that read ``knob``."""
    return tuple(r.name for r in RULES_TABLE if knob in r.reads)


# ---- training knobs -------------------------------------------------------------------------------
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
    TrainingKnob(
        "epochs", int, 10, "an integer >= 1", _int_from(1), "training epochs", searchable=False, per_study=False
    ),
    TrainingKnob("batch_size", int, 64, "an integer >= 1", _int_from(1), "examples per optimizer step"),
    TrainingKnob("lr", float, 1e-3, "a finite number > 0", lambda v: _finite(v) and v > 0, "AdamW learning rate"),
    TrainingKnob(
        "weight_decay", float, 0.01, "a finite number >= 0", lambda v: _finite(v) and v >= 0, "AdamW weight decay"
    ),
    TrainingKnob(
        "warmup_epochs",
        float,
        1.0,
        "a finite number >= 0",
        lambda v: _finite(v) and v >= 0,
        "linear warm-up, in epochs",
    ),
    TrainingKnob(
        "schedule",
        str,
        "cosine",
        f"one of {', '.join(SCHEDULES)}",
        lambda v: v in SCHEDULES,
        "`cosine`; `step` (LW-Transformer: x0.2 at 10/13 and 12/13 of training); "
        "`noam` (ORT: warm-up then 1/sqrt(step), peak = lr); `constant`",
        choices=SCHEDULES,
    ),
    TrainingKnob(
        "lr_sqrt_groups",
        bool,
        False,
        "true or false",
        lambda v: isinstance(v, bool),
        "LW-Transformer: base lr x sqrt(k)",
    ),
    TrainingKnob(
        "grad_clip",
        float,
        1.0,
        "a finite number >= 0 (0 turns clipping off)",
        lambda v: _finite(v) and v >= 0,
        "max gradient norm (0: off)",
    ),
    TrainingKnob(
        "seed",
        int,
        0,
        "an integer >= 0",
        _int_from(0),
        "seed of initialisation and shuffling",
        searchable=False,
        per_study=False,
    ),
    TrainingKnob(
        "threads",
        int,
        None,
        "an integer >= 1 or null (torch's default)",
        lambda v: v is None or _int_from(1)(v),
        "CPU threads for torch (null: torch's default)",
        searchable=False,
    ),
    TrainingKnob(
        "device",
        str,
        "auto",
        f"one of {', '.join(DEVICES)}",
        lambda v: v in DEVICES,
        "`auto` uses CUDA when present",
        searchable=False,
        choices=DEVICES,
    ),
    TrainingKnob(
        "amp", bool, True, "true or false", lambda v: isinstance(v, bool), "bf16 autocast on CUDA", searchable=False
    ),
    TrainingKnob(
        "divergence_factor",
        float,
        10.0,
        "a finite number > 1",
        lambda v: _finite(v) and v > 1,
        "an epoch's train loss above this x the first epoch's is a divergence",
        searchable=False,
    ),
)

VOCABULARY: tuple[str, ...] = (*(k.name for k in ARCH), *(k.name for k in TRAINING))  # every knob, by name
