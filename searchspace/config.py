"""ArchConfig: one point of the lightweight-Transformer space, as plain validated data.

Every knob is a field written out in ``ArchConfig`` below, ``name: type = knob(default, help, ...)``
(``knob_fields.py``), with its metadata (section, families, limit, choices, activation) on the field.
The knob table (``ARCH``, gathered with the training knobs in ``knobs.py``) is read back from those
fields, and what repeats a knob comes from it: the checks of each value, the family and activation
defaults, one activation rule per knob with ``active_when``, the study language's checks,
docs/knobs.md, the model registry's coverage check and the dashboard's sample space. The rules
between knobs (divisibility, pattern lengths, kv sharing) are written at the end of this module.

Configuration flows one way: YAML/dict -> ``ArchConfig`` (validated, frozen) -> ``build_model``.
Family-dependent knobs default to ``None`` and are filled from their ``family_defaults`` when the
config is built, so ``to_dict`` always returns the full effective configuration and
``from_dict(cfg.to_dict()) == cfg``.

Torch-free: the CLI and the study checker import this without torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .errors import ConfigError, did_you_mean
from .knob_fields import (
    ACORT,
    COUPLFORMER,
    FAMILIES,
    FAMILY_SECTION,
    INPUTS,
    KINDS,
    LW,
    STACKED,
    TEMDE,
    WIDTHS,
    ArchKnob,
    Check,
    Rule,
    activation_rule,
    arch_knobs,
    knob,
)
from .radix import digits_for
from .sharing import MAX_LAYERS, format_pattern, parse_pattern

# Limits: far above any Transformer the papers describe. Within them every tensor of a model has fewer
# than 2**63 bytes, so the cost model can shape it on the meta device; a value beyond is refused rather
# than sized (d_model: 1e9 would overflow).
SIZE = 65_536  # widths and token counts
GROUPING = [{"g_mha": True}, {"g_ffn": True}]  # where the group-wise transformation is on
SHARING = ("none", "qk", "kv")
PATTERN_HELP = (
    "pattern in the paper's notation, `(0,0,1,1,2,2)`, `(0x3,1x3)`, `(0,1,2,2,1,0)`, `(0x6)`; one "
    "entry per layer of every stack; independent layers numbered 0..m−1 without gaps. Shared depths "
    "are the same module (LayerNorms included); each stack's final LayerNorm is separate (ACORT §4.2)"
)
SKETCHED = ("encoder", "mcan", "retrieval")  # the families with a pooled global vector
REGIONS = ("mcan", "ort", "retrieval")  # the families over image regions


@dataclass(frozen=True)
class ArchConfig:
    """One architecture: the family, every knob of the four papers, and the input sizes (docs/knobs.md)."""

    family: str = knob(
        "encoder", "the base architecture (the families above)", section=FAMILY_SECTION, choices=FAMILIES
    )

    # ---- widths and depths
    d_model: int = knob(128, "model width d", section=WIDTHS, limit=SIZE)
    d_ff: int | None = knob(None, "inner FFN width", section=WIDTHS, limit=4 * SIZE, default_doc="4·`d_model`")
    heads: int = knob(4, "attention heads h", section=WIDTHS, limit=1024)
    layers: int = knob(2, "depth of every stack unless overridden", section=WIDTHS, limit=MAX_LAYERS)
    encoder_layers: int | None = knob(
        None,
        "depth of the encoder stack",
        section=WIDTHS,
        families=STACKED,
        limit=MAX_LAYERS,
        default_doc="`layers`",
    )
    decoder_layers: int | None = knob(
        None,
        "depth of the decoder stack",
        section=WIDTHS,
        families=STACKED,
        limit=MAX_LAYERS,
        default_doc="`layers`",
    )
    dropout: float = knob(0.1, "dropout everywhere; a number in [0, 1)", section=WIDTHS)
    qkv_bias: bool = knob(
        True,
        "biases on the Q, K and V projections (W_O always keeps its bias). On in MCAN, ORT and Couplformer's "
        "`vic.py`; off in Couplformer's KCT `Attention` (docs/paper-fidelity.md). Off saves each projection's "
        "bias (as wide as its output): (2n + 1)·d per attention module with `qk_expansion` n (3·d at n = 1), "
        "(n + 1)·d with `attention_sharing: qk`, 2·d with `kv`; ÷k with `weight_sharing`",
        section=WIDTHS,
    )

    # ---- LW-Transformer (group-wise transformation)
    groups: int = knob(
        1,
        "k; > 1 needs `g_mha` or `g_ffn`; in a study, `groups: {choice: [1, 2, 4]}` is fine: k = 1 is the points "
        "without grouping (docs/studies.md). Grouped projections run as one batched einsum over a group axis "
        "(searchspace/layers/grouped_linear.py)",
        section=LW,
        limit=1024,
        active_when=GROUPING,
        neutral=1,
        inactive_error="{groups} has no effect without `g_mha` or `g_ffn`; set one or use groups: 1",
        neutral_means="no grouping",  # LW-Transformer's baseline is k = 1; where grouping is on, k >= 2
    )
    g_mha: bool = knob(
        False,
        "G-MHA (Eq. 6): features split into k chunks *before* the Q/K/V projections; each group runs "
        "heads/groups heads; needs groups ≥ 2",
        section=LW,
    )
    g_ffn: bool = knob(False, "G-FFN (Eq. 8): the second FFN layer runs in k groups; the first stays dense", section=LW)
    weight_sharing: bool = knob(
        False,
        "one set of group weights serves all k groups (§III-B)",
        section=LW,
        active_when=GROUPING,
        neutral=False,
        inactive_error="shares group weights, so it needs `g_mha` or `g_ffn`",
    )
    qk_expansion: int = knob(
        1,
        "n: Q and K projected to n·d (head size n·d/h; Tab. I, II)",
        section=LW,
        limit=64,
        active_when={"g_mha": True},
        neutral=1,
        inactive_error="{qk_expansion} widens G-MHA's Q and K, so it needs `g_mha: true`",
    )
    g_lml: bool = knob(
        False,
        "G-LML: the merge layer W_O is grouped too (Tab. III)",
        section=LW,
        active_when={"g_mha": True},
        neutral=False,
        inactive_error="groups G-MHA's merge layer, so it needs `g_mha: true`",
    )
    g_il: bool = knob(
        False,
        "G-IL: the first FFN layer is grouped too (Tab. III)",
        section=LW,
        active_when={"g_ffn": True},
        neutral=False,
        inactive_error="groups G-FFN's first layer, so it needs `g_ffn: true`",
    )

    # ---- ACORT
    layer_sharing: tuple[int, ...] | None = knob(None, PATTERN_HELP, section=ACORT)
    encoder_layer_sharing: tuple[int, ...] | None = knob(
        None,
        "per-stack override of `layer_sharing`",
        section=ACORT,
        families=STACKED,
        default_doc="`layer_sharing`",
    )
    decoder_layer_sharing: tuple[int, ...] | None = knob(
        None,
        "per-stack override of `layer_sharing`",
        section=ACORT,
        families=STACKED,
        default_doc="`layer_sharing`",
    )
    attention_sharing: str = knob(
        "none",
        "`qk`: Q and K share one projection (Q=W0(q), K=W0(k), V=W1(v), O=W2); `kv`: the projected key is reused "
        "as the value (Q=W0, K=W1, V=K, O=W2), in self- and cross-attention (§4.3, Tab. 10)",
        section=ACORT,
        choices=SHARING,
    )
    encoder_attention_sharing: str | None = knob(
        None,
        "per-stack override of `attention_sharing`",
        section=ACORT,
        families=STACKED,
        choices=SHARING,
        default_doc="`attention_sharing`",
    )
    decoder_attention_sharing: str | None = knob(
        None,
        "per-stack override of `attention_sharing`",
        section=ACORT,
        families=STACKED,
        choices=SHARING,
        default_doc="`attention_sharing`",
    )
    radix_base: int | None = knob(
        None,
        "v: words become ⌈log_v(vocab_size)⌉ digit tokens, most-significant first; vocabulary v+3 (pad 0, digits "
        "1..v, BOS v+1, EOS v+2) (§4.1, Tab. 6)",
        section=ACORT,
        families=("ort",),
        limit=1_000_000,
        default_doc="none (word tokens)",
    )

    # ---- Couplformer
    attention: str = knob(
        "standard",
        "`coupled`: softmax(A)·V_c·softmax(B)ᵀ with A over rows (h×h) and B over columns (w×w) of the token grid, "
        "never forming the (hw)×(hw) map (§3)",
        section=COUPLFORMER,
        choices=("standard", "coupled"),
    )
    coupled_scale: str | None = knob(
        None,
        "the scale of each logit map A and B before its softmax: `quarter` multiplies it by d_h^−1/4 (the "
        "authors' released code, wer010/Couplformer, 2022); `half` by d_h^−1/2 (their 2021 code; what standard "
        "attention uses). lwnas's coupled kernel used `half` before this knob existed: add `coupled_scale: half` "
        "to a configuration or export saved earlier to rebuild the model it trained (a checkpoint saved earlier "
        "rebuilds with `quarter`)",
        section=COUPLFORMER,
        families=("encoder",),
        choices=("quarter", "half"),
        active_when={"attention": "coupled"},
        active_default="quarter",
    )

    # ---- T-EMDE
    pooling: str | None = knob(
        None,
        "`mean`, `attention` (AttFlat-style), `sketch` (§3.2)",
        section=TEMDE,
        families=SKETCHED,
        choices=("mean", "attention", "sketch"),
        family_defaults={"encoder": "mean", "retrieval": "mean", "mcan": "attention"},
    )
    sketch_n: int | None = knob(
        None,
        "depth N of Listing 1's coder",
        section=TEMDE,
        families=SKETCHED,
        limit=1024,
        active_when={"pooling": "sketch"},
        active_default=8,
    )
    sketch_k: int | None = knob(
        None,
        "width K of Listing 1's coder",
        section=TEMDE,
        families=SKETCHED,
        limit=1024,
        active_when={"pooling": "sketch"},
        active_default=8,
    )
    sketch_d: int | None = knob(
        None,
        "centroid space D of Listing 1's coder",
        section=TEMDE,
        families=SKETCHED,
        limit=1024,
        active_when={"pooling": "sketch"},
        active_default=8,
    )

    # ---- input sizes: fixed by the task (a study may set one, never search it)
    grid: tuple[int, int] | None = knob(
        None,
        "the token grid [height, width]",
        section=INPUTS,
        families=("encoder",),
        limit=1024,
        family_defaults={"encoder": (8, 8)},
        input_size=True,
    )
    patch_features: int | None = knob(
        None,
        "features per patch",
        section=INPUTS,
        families=("encoder",),
        limit=SIZE,
        family_defaults={"encoder": 1},
        input_size=True,
    )
    num_classes: int | None = knob(
        None,
        "classes",
        section=INPUTS,
        families=("encoder",),
        limit=1_000_000,
        family_defaults={"encoder": 10},
        input_size=True,
    )
    question_tokens: int | None = knob(
        None,
        "question length",
        section=INPUTS,
        families=("mcan",),
        limit=SIZE,
        family_defaults={"mcan": 14},
        input_size=True,
    )
    image_regions: int | None = knob(
        None,
        "image regions",
        section=INPUTS,
        families=REGIONS,
        limit=SIZE,
        family_defaults={"mcan": 100, "ort": 50, "retrieval": 36},
        input_size=True,
    )
    region_features: int | None = knob(
        None,
        "features per region",
        section=INPUTS,
        families=REGIONS,
        limit=SIZE,
        family_defaults={"mcan": 2048, "ort": 2048, "retrieval": 2048},
        input_size=True,
    )
    caption_tokens: int | None = knob(
        None,
        "caption length in words (radix digits multiply the decoder length)",
        section=INPUTS,
        families=("ort", "retrieval"),
        limit=SIZE,
        family_defaults={"ort": 16, "retrieval": 16},
        input_size=True,
    )
    vocab_size: int | None = knob(
        None,
        "word vocabulary",
        section=INPUTS,
        families=REGIONS,
        limit=10_000_000,
        family_defaults={"mcan": 10001, "ort": 10001, "retrieval": 10001},
        input_size=True,
    )
    num_answers: int | None = knob(
        None,
        "answer classes",
        section=INPUTS,
        families=("mcan",),
        limit=1_000_000,
        family_defaults={"mcan": 3129},
        input_size=True,
    )

    def __post_init__(self) -> None:
        problems = _type_problems(self)
        if problems:
            raise ConfigError(problems)
        self._normalise()
        violations = _rule_problems(self)
        if violations:
            raise ConfigError([(name, message) for _, name, message in violations])

    def _normalise(self) -> None:
        """Parse patterns and fill family and activation defaults (frozen, so via object.__setattr__)."""
        set_ = object.__setattr__
        for k in ARCH:
            value = getattr(self, k.name)
            if k.kind == "pattern" and value is not None:
                set_(self, k.name, parse_pattern(value))
            elif k.kind == "grid" and isinstance(value, list):
                set_(self, k.name, tuple(value))
        for k in ARCH:
            if self.family in k.family_defaults and getattr(self, k.name) is None:
                set_(self, k.name, k.family_defaults[self.family])
        values = self.__dict__
        for k in ARCH:  # after the family defaults: an activation may read one (sketch_n reads pooling)
            if k.activation is not None and k.active_default is not None and getattr(self, k.name) is None:
                if k.activation.holds(values):
                    set_(self, k.name, k.active_default)

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
        if self.radix_base is None or self.vocab_size is None:
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
    return tuple(k.name for k in ARCH)


# ---- validation ---------------------------------------------------------------------------------
def _type_problems(cfg: ArchConfig) -> list[tuple[str, str]]:
    """Type checks first (kind by kind, in table order): later rules assume the right types."""
    problems = []
    for kind in KINDS:
        for k in ARCH:
            if k.kind == kind and (message := k.problem(getattr(cfg, k.name))) is not None:
                problems.append((k.name, message))
    if cfg.family in FAMILIES:
        for k in sorted(ARCH, key=lambda k: k.name):
            if cfg.family not in k.families and getattr(cfg, k.name) is not None:
                problems.append(
                    (k.name, f"does not apply to family `{cfg.family}` (used by {', '.join(sorted(k.families))})")
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
    """Every rule (activation, divisibility, dependencies, pattern lengths), as (rule, knob, message)."""
    return [(r.name, knob, message) for r in RULES_TABLE for knob, message in r.check(cfg)]


# ---- rules between knobs -------------------------------------------------------------------------
# Each a small function of a normalised ArchConfig under `@rule(name, *knobs it reads)`;
# tests/test_knob_table.py checks that it reads no other knob. They run whenever an ArchConfig is built
# (after the activation rules, which are derived from `active_when`), and space_check.py runs them over
# a study's space.
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
    for name, on in (("g_mha", cfg.g_mha), ("g_ffn", cfg.g_ffn)):
        if on and cfg.groups < 2:
            yield name, f"needs `groups` >= 2, got groups={cfg.groups}"


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
            name, own = overrides[stack]
            yield (
                name if own else "attention_sharing",
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


# ---- the knob table, read back from the fields ---------------------------------------------------
ARCH: tuple[ArchKnob, ...] = arch_knobs(ArchConfig)
BY_NAME: dict[str, ArchKnob] = {k.name: k for k in ARCH}
# Activation rules first (one per knob with `active_when`), then the rules between knobs.
RULES_TABLE: tuple[Rule, ...] = (*(activation_rule(k) for k in ARCH if k.activation is not None), *BETWEEN)
# Every rule between knobs, with the knobs its outcome depends on. The search space uses this to
# check a study's discrete part rule by rule (searchspace/space_check.py).
RULES: dict[str, frozenset[str]] = {r.name: r.reads for r in RULES_TABLE}
# Defaults filled per family for knobs left unset (the tasks read them).
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    f: {k.name: k.family_defaults[f] for k in ARCH if f in k.family_defaults} for f in FAMILIES
}
COUPLED_DEFAULT: str = BY_NAME["coupled_scale"].active_default  # Couplformer's released code (wer010, 2022)
