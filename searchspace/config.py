"""ArchConfig: one point of the lightweight-Transformer space, as plain validated data.

Configuration flows one way: YAML/dict -> ``ArchConfig`` (validated, frozen) -> ``build_model``.
Every knob keeps its public name (DESIGN.md, "Knob vocabulary"). Family-dependent knobs default to
``None`` and are filled from ``FAMILY_DEFAULTS`` when the config is built, so ``to_dict`` always
returns the full effective configuration and ``from_dict(cfg.to_dict()) == cfg``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .errors import ConfigError, did_you_mean
from .radix import digits_for
from .sharing import MAX_LAYERS, format_pattern, parse_pattern

FAMILIES = ("encoder", "mcan", "ort", "retrieval")
ATTENTION_KERNELS = ("standard", "coupled")
COUPLED_SCALES = ("quarter", "half")  # each coupled logit map x head_dim^-1/4 (authors' code) or ^-1/2
ATTENTION_SHARING = ("none", "qk", "kv")
POOLINGS = ("mean", "attention", "sketch")

# Knobs that only make sense for some families; any other family rejects them when set.
FAMILY_KNOBS: dict[str, frozenset[str]] = {
    "encoder": frozenset({"layers", "layer_sharing", "pooling", "sketch_n", "sketch_k",
                          "sketch_d", "grid", "patch_features", "num_classes", "coupled_scale"}),
    "retrieval": frozenset({"layers", "layer_sharing", "pooling", "sketch_n", "sketch_k", "sketch_d",
                            "image_regions", "region_features", "caption_tokens", "vocab_size"}),
    "mcan": frozenset({"layers", "encoder_layers", "decoder_layers", "layer_sharing",
                       "encoder_layer_sharing", "decoder_layer_sharing", "encoder_attention_sharing",
                       "decoder_attention_sharing", "pooling", "sketch_n", "sketch_k", "sketch_d",
                       "question_tokens", "image_regions", "region_features", "vocab_size", "num_answers"}),
    "ort": frozenset({"layers", "encoder_layers", "decoder_layers", "layer_sharing",
                      "encoder_layer_sharing", "decoder_layer_sharing", "encoder_attention_sharing",
                      "decoder_attention_sharing", "radix_base", "image_regions", "region_features",
                      "caption_tokens", "vocab_size"}),
}

# Defaults filled per family for knobs left unset (documented in docs/knobs.md).
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "encoder": {"pooling": "mean", "grid": (8, 8), "patch_features": 1,
                "num_classes": 10},
    "retrieval": {"pooling": "mean", "image_regions": 36, "region_features": 2048, "caption_tokens": 16,
                  "vocab_size": 10001},
    "mcan": {"pooling": "attention", "question_tokens": 14, "image_regions": 100, "region_features": 2048,
             "vocab_size": 10001, "num_answers": 3129},
    "ort": {"image_regions": 50, "region_features": 2048, "caption_tokens": 16, "vocab_size": 10001},
}
SKETCH_DEFAULTS = {"sketch_n": 8, "sketch_k": 8, "sketch_d": 8}  # T-EMDE §4: D=8; N=K=8 is its small coder
COUPLED_DEFAULT = "quarter"  # Couplformer's released code (wer010/Couplformer, 2022)


@dataclass(frozen=True)
class ArchConfig:
    """One architecture: the family, every knob of the four papers, and the input sizes."""

    family: str = "encoder"
    # widths and depths
    d_model: int = 128
    d_ff: int | None = None  # None -> 4 * d_model
    heads: int = 4
    layers: int = 2
    encoder_layers: int | None = None  # mcan/ort; None -> layers
    decoder_layers: int | None = None  # mcan/ort; None -> layers
    dropout: float = 0.1
    qkv_bias: bool = True  # biases on the Q/K/V projections (MCAN, ORT: on; Couplformer's KCT: off)
    # LW-Transformer (group-wise transformation)
    groups: int = 1
    g_mha: bool = False
    g_ffn: bool = False
    weight_sharing: bool = False
    qk_expansion: int = 1
    g_lml: bool = False
    g_il: bool = False
    # ACORT
    layer_sharing: tuple[int, ...] | None = None
    encoder_layer_sharing: tuple[int, ...] | None = None
    decoder_layer_sharing: tuple[int, ...] | None = None
    attention_sharing: str = "none"
    encoder_attention_sharing: str | None = None
    decoder_attention_sharing: str | None = None
    radix_base: int | None = None
    # Couplformer
    attention: str = "standard"
    coupled_scale: str | None = None  # attention: coupled only; None -> COUPLED_DEFAULT
    # T-EMDE
    pooling: str | None = None
    sketch_n: int | None = None
    sketch_k: int | None = None
    sketch_d: int | None = None
    # input sizes the model is built for and the cost model counts with
    grid: tuple[int, int] | None = None
    patch_features: int | None = None
    num_classes: int | None = None
    question_tokens: int | None = None
    image_regions: int | None = None
    region_features: int | None = None
    caption_tokens: int | None = None
    vocab_size: int | None = None
    num_answers: int | None = None

    def __post_init__(self) -> None:
        problems = _type_problems(self)
        if problems:
            raise ConfigError(problems)
        self._normalise()
        problems = _rule_problems(self)
        if problems:
            raise ConfigError([(knob, message) for _, knob, message in problems])

    def _normalise(self) -> None:
        """Parse patterns and fill family defaults (frozen, so via object.__setattr__)."""
        set_ = object.__setattr__
        for name in ("layer_sharing", "encoder_layer_sharing", "decoder_layer_sharing"):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, parse_pattern(value))
        if isinstance(self.grid, list):
            set_(self, "grid", tuple(self.grid))
        if self.family in FAMILY_DEFAULTS:
            for name, default in FAMILY_DEFAULTS[self.family].items():
                if getattr(self, name) is None:
                    set_(self, name, default)
            if self.pooling == "sketch":
                for name, default in SKETCH_DEFAULTS.items():
                    if getattr(self, name) is None:
                        set_(self, name, default)
            if self.attention == "coupled" and self.coupled_scale is None:
                set_(self, "coupled_scale", COUPLED_DEFAULT)

    # ---- derived values -------------------------------------------------------------------
    @property
    def ffn_dim(self) -> int:
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    @property
    def depths(self) -> dict[str, int]:
        """Layer count of each stack the family has."""
        if self.family in ("mcan", "ort"):
            return {"encoder": self.encoder_layers or self.layers, "decoder": self.decoder_layers or self.layers}
        return {"encoder": self.layers}

    def sharing_pattern(self, stack: str) -> tuple[int, ...]:
        """The effective cross-layer sharing pattern of ``stack`` (``encoder``/``decoder``)."""
        override = getattr(self, f"{stack}_layer_sharing", None)
        pattern = override or self.layer_sharing
        return pattern if pattern is not None else tuple(range(self.depths[stack]))

    def attention_sharing_of(self, stack: str) -> str:
        return getattr(self, f"{stack}_attention_sharing", None) or self.attention_sharing

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
            if key.endswith("layer_sharing"):
                value = format_pattern(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ArchConfig":
        """Build from a mapping; unknown keys are reported with a did-you-mean."""
        if not isinstance(data, dict):
            raise ConfigError([("<config>", f"an architecture is a mapping of knobs, got {type(data).__name__}")])
        known = knob_names()
        unknown = [(k, f"unknown knob{did_you_mean(k, known)}") for k in data if k not in known]
        if unknown:
            raise ConfigError(unknown)
        return cls(**data)

    def replace(self, **changes: Any) -> "ArchConfig":
        return replace(self, **changes)


def knob_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(ArchConfig))


# ---- validation ---------------------------------------------------------------------------------
_INT_KNOBS = ("d_model", "heads", "layers", "groups", "qk_expansion")
_OPT_INT_KNOBS = ("d_ff", "encoder_layers", "decoder_layers", "radix_base", "sketch_n", "sketch_k",
                  "sketch_d", "patch_features", "num_classes", "question_tokens", "image_regions",
                  "region_features", "caption_tokens", "vocab_size", "num_answers")
_BOOL_KNOBS = ("qkv_bias", "g_mha", "g_ffn", "weight_sharing", "g_lml", "g_il")

# Upper bound of every integer knob (docs/knobs.md), far above any Transformer the papers describe.
# Within them every tensor of a model has fewer than 2**63 bytes, so the cost model can shape it on
# the meta device; a value beyond is refused by rule rather than sized (d_model: 1e9 would overflow).
_SIZE, _TOKENS = 65_536, 65_536
KNOB_LIMITS: dict[str, int] = {
    "d_model": _SIZE, "d_ff": 4 * _SIZE, "heads": 1024, "layers": MAX_LAYERS, "encoder_layers": MAX_LAYERS,
    "decoder_layers": MAX_LAYERS, "groups": 1024, "qk_expansion": 64, "radix_base": 1_000_000,
    "sketch_n": 1024, "sketch_k": 1024, "sketch_d": 1024, "patch_features": _SIZE, "num_classes": 1_000_000,
    "question_tokens": _TOKENS, "image_regions": _TOKENS, "region_features": _SIZE, "caption_tokens": _TOKENS,
    "vocab_size": 10_000_000, "num_answers": 1_000_000,
}
GRID_LIMIT = 1024  # per side: at most a million tokens


def _type_problems(cfg: ArchConfig) -> list[tuple[str, str]]:
    """Type checks first: later rules assume the right types."""
    problems = []
    for name in _INT_KNOBS + _OPT_INT_KNOBS:
        value = getattr(cfg, name)
        if value is None and name in _OPT_INT_KNOBS:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append((name, f"must be an integer, got {value!r}"))
        elif value < 1:
            problems.append((name, f"must be >= 1, got {value}"))
        elif value > KNOB_LIMITS[name]:
            problems.append((name, f"must be at most {KNOB_LIMITS[name]:,} (the knob's limit), got {value:,}"))
    for name in _BOOL_KNOBS:
        if not isinstance(getattr(cfg, name), bool):
            problems.append((name, f"must be true or false, got {getattr(cfg, name)!r}"))
    if isinstance(cfg.dropout, bool) or not isinstance(cfg.dropout, (int, float)) or not 0 <= cfg.dropout < 1:
        problems.append(("dropout", f"must be a number in [0, 1), got {cfg.dropout!r}"))
    choices = [("family", FAMILIES), ("attention", ATTENTION_KERNELS), ("pooling", POOLINGS),
               ("attention_sharing", ATTENTION_SHARING), ("encoder_attention_sharing", ATTENTION_SHARING),
               ("decoder_attention_sharing", ATTENTION_SHARING), ("coupled_scale", COUPLED_SCALES)]
    for name, allowed in choices:
        value = getattr(cfg, name)
        if value is None and name not in ("family", "attention", "attention_sharing"):
            continue
        if value not in allowed:
            problems.append((name, f"must be one of {', '.join(allowed)}, got {value!r}"
                                   f"{did_you_mean(str(value), allowed)}"))
    for name in ("layer_sharing", "encoder_layer_sharing", "decoder_layer_sharing"):
        value = getattr(cfg, name)
        if value is not None:
            try:
                parse_pattern(value)
            except ValueError as exc:
                problems.append((name, f"{value!r}: {exc}"))
    if cfg.grid is not None and not (isinstance(cfg.grid, (list, tuple)) and len(cfg.grid) == 2
                                     and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                             for v in cfg.grid)):
        problems.append(("grid", f"must be two positive integers [height, width], got {cfg.grid!r}"))
    elif cfg.grid is not None and max(cfg.grid) > GRID_LIMIT:
        problems.append(("grid", f"each side must be at most {GRID_LIMIT:,} (the knob's limit), got {list(cfg.grid)}"))
    if cfg.family in FAMILY_KNOBS:
        allowed = FAMILY_KNOBS[cfg.family]
        for name in sorted(set().union(*FAMILY_KNOBS.values()) - allowed):
            if getattr(cfg, name) is not None:
                users = sorted(f for f, knobs in FAMILY_KNOBS.items() if name in knobs)
                problems.append((name, f"does not apply to family `{cfg.family}` (used by {', '.join(users)})"))
    return problems


_STACK_SHARING = ("attention_sharing", "encoder_attention_sharing", "decoder_attention_sharing")
_DEPTHS = ("layers", "encoder_layers", "decoder_layers")
_PATTERNS = ("layer_sharing", "encoder_layer_sharing", "decoder_layer_sharing")
_SKETCH = ("sketch_n", "sketch_k", "sketch_d")

# Every rule between knobs, with the knobs its outcome depends on. The search space uses this to
# check a study's discrete part rule by rule (searchspace/space.py); a rule must read no other knob.
RULES: dict[str, frozenset[str]] = {
    "heads_divide_d_model": frozenset({"d_model", "heads"}),
    "groups_need_grouping": frozenset({"groups", "g_mha", "g_ffn"}),
    "grouping_needs_groups": frozenset({"groups", "g_mha", "g_ffn"}),
    "groups_divide_heads": frozenset({"heads", "groups", "g_mha"}),
    "groups_divide_d_model": frozenset({"d_model", "groups", "g_mha", "g_ffn"}),
    "groups_divide_d_ff": frozenset({"d_ff", "d_model", "groups", "g_ffn"}),
    "weight_sharing_needs_grouping": frozenset({"weight_sharing", "g_mha", "g_ffn"}),
    "qk_expansion_needs_g_mha": frozenset({"qk_expansion", "g_mha"}),
    "g_lml_needs_g_mha": frozenset({"g_lml", "g_mha"}),
    "g_il_needs_g_ffn": frozenset({"g_il", "g_ffn"}),
    "kv_needs_no_expansion": frozenset({*_STACK_SHARING, "qk_expansion"}),
    "pattern_length": frozenset({*_DEPTHS, *_PATTERNS}),
    "radix_base_min": frozenset({"radix_base"}),
    "coupled_needs_grid": frozenset({"attention", "family"}),
    "coupled_scale_needs_coupled": frozenset({"coupled_scale", "attention"}),
    "sketch_needs_sketch_pooling": frozenset({"pooling", *_SKETCH}),
}


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
    p: list[tuple[str, str, str]] = []
    d, h, k, ff = cfg.d_model, cfg.heads, cfg.groups, cfg.ffn_dim
    if d % h:
        p.append(("heads_divide_d_model", "d_model", f"{d} must be divisible by `heads` ({h})"))
    # LW-Transformer §III-B: k groups, each running h/k heads on d/k features.
    if k > 1 and not (cfg.g_mha or cfg.g_ffn):
        p.append(("groups_need_grouping", "groups", f"{k} has no effect without `g_mha` or `g_ffn`; set one or use groups: 1"))
    for knob in ("g_mha", "g_ffn"):
        if getattr(cfg, knob) and k < 2:
            p.append(("grouping_needs_groups", knob, f"needs `groups` >= 2, got groups={k}"))
    if cfg.g_mha and k > 1:
        if h % k:
            p.append(("groups_divide_heads", "heads", f"{h} must be divisible by `groups` ({k}): G-MHA runs heads/groups heads per group"))
    if (cfg.g_mha or cfg.g_ffn) and k > 1 and d % k:
        p.append(("groups_divide_d_model", "d_model", f"{d} must be divisible by `groups` ({k})"))
    if cfg.g_ffn and k > 1 and ff % k:
        p.append(("groups_divide_d_ff", "d_ff", f"{ff} must be divisible by `groups` ({k}) for G-FFN"))
    if cfg.weight_sharing and not (cfg.g_mha or cfg.g_ffn):
        p.append(("weight_sharing_needs_grouping", "weight_sharing", "shares group weights, so it needs `g_mha` or `g_ffn`"))
    if cfg.qk_expansion > 1 and not cfg.g_mha:
        p.append(("qk_expansion_needs_g_mha", "qk_expansion", f"{cfg.qk_expansion} widens G-MHA's Q and K, so it needs `g_mha: true`"))
    if cfg.g_lml and not cfg.g_mha:
        p.append(("g_lml_needs_g_mha", "g_lml", "groups G-MHA's merge layer, so it needs `g_mha: true`"))
    if cfg.g_il and not cfg.g_ffn:
        p.append(("g_il_needs_g_ffn", "g_il", "groups G-FFN's first layer, so it needs `g_ffn: true`"))
    # ACORT attention sharing: kv feeds the projected key in as the value, so widths must match.
    for stack in cfg.depths:
        if cfg.attention_sharing_of(stack) == "kv" and cfg.qk_expansion > 1:
            knob = f"{stack}_attention_sharing" if getattr(cfg, f"{stack}_attention_sharing", None) else "attention_sharing"
            p.append(("kv_needs_no_expansion", knob, f"`kv` reuses the key as the value, which needs qk_expansion 1 (got {cfg.qk_expansion})"))
    # ACORT cross-layer sharing: one index per layer of the stack.
    for stack, depth in cfg.depths.items():
        override = f"{stack}_layer_sharing"
        knob = override if getattr(cfg, override, None) is not None else "layer_sharing"
        if (getattr(cfg, override, None) or cfg.layer_sharing) is None:
            continue  # every layer its own: the length matches by construction (and `layers` may be huge)
        pattern = cfg.sharing_pattern(stack)
        if len(pattern) != depth:
            depth_knob = f"{stack}_layers" if cfg.family in ("mcan", "ort") else "layers"
            p.append(("pattern_length", knob, f"{format_pattern(pattern)} has {len(pattern)} entries but the {stack} has "
                            f"{depth} layers (`{depth_knob}`)"))
    if cfg.radix_base is not None and cfg.radix_base < 2:
        p.append(("radix_base_min", "radix_base", f"must be >= 2, got {cfg.radix_base}"))
    if cfg.attention == "coupled":
        if cfg.family != "encoder":
            p.append(("coupled_needs_grid", "attention", "`coupled` needs a 2-D token grid, which only family `encoder` has"))
    if cfg.coupled_scale is not None and cfg.attention != "coupled":
        p.append(("coupled_scale_needs_coupled", "coupled_scale", f"is set to {cfg.coupled_scale!r} but only applies "
                  f"with `attention: coupled` (attention is {cfg.attention!r})"))
    if cfg.pooling != "sketch":
        for name in ("sketch_n", "sketch_k", "sketch_d"):
            if getattr(cfg, name) is not None:
                p.append(("sketch_needs_sketch_pooling", name, f"is set to {getattr(cfg, name)} but only applies with `pooling: sketch` "
                                f"(pooling is {cfg.pooling!r})"))
    return p
