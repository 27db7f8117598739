"""A study's search space: one domain per knob, conditions, and the params a backend suggests.

The space is data (``SearchSpace.from_dict`` / ``to_dict``). Knobs are ordered so that every
condition reads only knobs decided before it. Besides the user's ``when:`` conditions, the
architecture's activation rules are known to the space as *implied* conditions, read from the knob
table's ``active_when`` (``qk_expansion`` applies only with ``g_mha``, ``sketch_n`` only with
``pooling: sketch``, ...): where one does not hold, the knob takes its neutral value. The remaining
rules between knobs (divisibility, pattern length, kv sharing) are checked over the whole discrete
part by ``space_check.check_space`` (a study runs it when it is read), so sampling a checked space
never yields an invalid configuration.

Params (what a search backend suggests, and what an Optuna trial stores) are the values of the
active searched knobs; ``resolve`` turns them into an ``ArchConfig`` plus training settings.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .conditions import Condition, is_member, same_value
from .config import ArchConfig, type_problems
from .domains import (
    SPEC_KEYS,
    Choice,
    Domain,
    DomainError,
    Fixed,
    FloatRange,
    IntRange,
    checked_values,
    parse_domain,
    show_value,
)
from .errors import LwnasError, did_you_mean, shown
from .knobs import ARCH, BY_NAME, FAMILIES, STACKED
from .sharing import PATTERN_FAMILIES, generate_pattern, parse_pattern
from .training import TRAINING_DEFAULTS, TRAINING_KNOBS, training_value_problem

INPUT_SIZES = tuple(k.name for k in ARCH if k.input_size)
PATTERN_KNOBS = tuple(k.name for k in ARCH if k.kind == "pattern")
ARCH_KNOBS = tuple(k.name for k in ARCH if k.name != "family")
SPACE_KNOBS = (*ARCH_KNOBS, *TRAINING_KNOBS)

# Activation rules of the architecture as conditions, with the value a knob takes where its
# condition does not hold (the knob table's `active_when` and `neutral`).
IMPLIED: dict[str, tuple[Condition, Any]] = {k.name: (k.activation, k.neutral) for k in ARCH if k.activation}

Problem = tuple[tuple[Any, ...], str]  # (path inside the study, message)


class SpaceError(LwnasError, ValueError):
    """Every problem found in a space, each as (path inside the study file, message)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(f"{'.'.join(map(str, p))}: {m}" for p, m in problems))


@dataclass(frozen=True)
class Knob:
    name: str
    domain: Domain
    when: Condition | None = None  # the user's condition
    implied: Condition | None = None  # the architecture's activation rule
    default: Any = None  # the value where `when` does not hold
    neutral: Any = None  # the value where the implied activation rule does not hold
    written: Domain | None = None  # the domain as the study wrote it, where `domain` leaves values out

    @property
    def searched(self) -> bool:
        return not isinstance(self.domain, Fixed)

    @property
    def condition(self) -> Condition | None:
        if self.when is None:
            return self.implied
        return self.when & self.implied


@dataclass(frozen=True)
class Point:
    """One sampled point: the params a backend suggested and what they resolve to."""

    params: dict[str, Any]
    config: ArchConfig
    training: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchSpace:
    family: str
    knobs: tuple[Knob, ...]  # in decision order: a condition reads only earlier knobs

    # ---- building --------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, family: str) -> SearchSpace:
        """Parse the ``space`` mapping of a study; raises SpaceError listing every problem.

        The rules between knobs are checked over the parsed space by ``space_check.check_space``.
        """
        if family not in FAMILIES:
            raise SpaceError([(("family",), f"must be one of {', '.join(FAMILIES)}, got {shown(family)}")])
        if not isinstance(data, Mapping):
            raise SpaceError([(("space",), f"must map knob names to domains, got {type(data).__name__}")])
        problems: list[Problem] = []
        knobs = []
        for name, spec in data.items():
            knob = _parse_knob(str(name), spec, family, problems)
            if knob is not None:
                knobs.append(knob)
        ordered = _order(knobs, family, problems)
        if problems:
            raise SpaceError(problems)
        return cls(family, tuple(ordered))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for knob in self.knobs:
            spec = (knob.written or knob.domain).to_dict()
            if knob.when is not None:
                spec = spec if isinstance(spec, dict) else {"value": spec}
                spec["when"] = knob.when.to_dict()
                if knob.default != _base_default(knob.name, self.family):
                    spec["default"] = knob.default
            out[knob.name] = spec
        return out

    # ---- queries -----------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    @property
    def searched(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.searched)

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)

    def base_values(self) -> dict[str, Any]:
        """Values of knobs the space leaves out: the family's defaults (conditions may read them)."""
        return dict(_family_base(self.family))

    def effective(self, choose: Callable[[Knob], Any]) -> dict[str, Any]:
        """Walk the knobs in order: active ones take ``choose(knob)``, others their neutral value."""
        values = self.base_values()
        for knob in self.knobs:
            if knob.implied is not None and not knob.implied.holds(values):
                values[knob.name] = knob.neutral
            elif knob.when is not None and not knob.when.holds(values):
                values[knob.name] = knob.default
            else:
                values[knob.name] = knob.domain.value if isinstance(knob.domain, Fixed) else choose(knob)
        return values

    def active_params(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The params (active searched knobs) of fully decided ``values``."""
        return {k.name: values[k.name] for k in self.searched if k.condition is None or k.condition.holds(values)}

    def low_corner(self) -> dict[str, Any]:
        """Params of the point with every searched knob at its first value, numbers at their lowest.

        Usually the cheapest point, so a constraint it meets is not reported as unsatisfiable (the first point
        ``tuners.planning.check.cost_sample`` costs).
        """

        def lowest(knob: Knob) -> Any:
            d = knob.domain
            if isinstance(d, IntRange):
                return d.low
            if isinstance(d, Choice) and all(isinstance(v, int) for v in d.choices):
                return min(v for v in d.choices if isinstance(v, int))
            return d.at(0)

        return self.active_params(self.effective(lowest))

    # ---- points ------------------------------------------------------------------------------
    def resolve(self, params: Mapping[str, Any], strict: bool = True) -> Point:
        """The configuration of ``params``; ``strict`` rejects missing, extra or out-of-domain values.

        With ``strict=False`` values of inactive knobs are ignored (backends without conditionals,
        such as a flat Ray Tune ``param_space``, suggest every knob every time).
        """
        problems: list[Problem] = []

        def choose(knob: Knob) -> Any:
            if knob.name not in params:
                problems.append((("space", knob.name), "is active here but has no value"))
                return knob.domain.at(0)
            value = params[knob.name]
            if not knob.domain.contains(value):
                problems.append(
                    (("space", knob.name), f"{shown(value)} is outside its domain ({knob.domain.describe()})")
                )
            return value

        values = self.effective(choose)
        active = self.active_params(values)
        if strict:
            for name in params:
                if name not in active:
                    why = "is not in the space" if name not in self.names else "is not active for these values"
                    problems.append(
                        (("space", name), f"{why}{did_you_mean(name, self.names) if name not in self.names else ''}")
                    )
        if problems:
            raise SpaceError(problems)
        return Point(active, self.to_config(values), {k: values[k] for k in self.names if k in TRAINING_KNOBS})

    def to_config(self, values: Mapping[str, Any]) -> ArchConfig:
        return ArchConfig.from_dict(self.arch_values(values))

    def arch_values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """ArchConfig keyword arguments from decided values: pattern families become patterns."""
        out: dict[str, Any] = {"family": self.family}
        out.update({k: values[k] for k in self.names if k in ARCH_KNOBS})
        return resolve_patterns(out)

    def partial_problems(self, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Problems of a partial point (a seed config; the tuner samples the knobs it leaves out)."""
        problems = []
        by_name = {k.name: k for k in self.knobs}
        for name, value in params.items():
            knob = by_name.get(name)
            if knob is None:
                problems.append((name, f"is not in the space{did_you_mean(name, self.names)}"))
            elif knob.written is not None and knob.written.contains(value) and not knob.domain.contains(value):
                problems.append((name, _neutral_problem(knob, value)))
            elif not knob.domain.contains(value):
                problems.append((name, f"{shown(value)} is outside its domain ({knob.domain.describe()})"))
        if problems:
            return problems
        known, unknown = self.base_values(), set()
        for knob in self.knobs:
            if knob.name in params:
                known[knob.name] = params[knob.name]
            elif isinstance(knob.domain, Fixed) and knob.condition is None:
                known[knob.name] = knob.domain.value
            else:
                unknown.add(knob.name)
        for name in params:
            condition = by_name[name].condition
            if condition is not None and not condition.knobs & unknown and not condition.holds(known):
                problems.append((name, f"is not active here: it applies only when {condition.describe()}"))
        return problems

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """Params of one point drawn uniformly per knob (log-uniform where asked)."""
        return self.active_params(self.effective(lambda knob: knob.domain.sample(rng)))

    def sample_points(self, n: int, seed: int | None = None) -> list[Point]:
        rng = np.random.default_rng(seed)
        return [self.resolve(self.sample(rng)) for _ in range(n)]


@functools.cache
def _family_base(family: str) -> dict[str, Any]:
    cfg = ArchConfig(family=family)
    return {**{k: getattr(cfg, k) for k in ARCH_KNOBS}, **TRAINING_DEFAULTS}


def resolve_patterns(values: dict[str, Any]) -> dict[str, Any]:
    """Turn pattern family names (``successive``, ``symmetric``, ``albert``, ``none``) into patterns.

    ``layer_sharing`` by family name is generated per stack, for each stack's own depth.
    """
    family = values.get("family", "encoder")
    layers = values.get("layers", 2)
    depths = {"encoder": values.get("encoder_layers") or layers}
    own_knob = {"encoder": "encoder_layer_sharing", "decoder": "decoder_layer_sharing"}  # each stack's override
    if family in STACKED:
        depths["decoder"] = values.get("decoder_layers") or layers
    out = dict(values)
    shared = values.get("layer_sharing")
    if isinstance(shared, str) and shared in PATTERN_FAMILIES:
        generated = {s: _generate(shared, d) for s, d in depths.items()}
        if len({*depths.values()}) == 1:
            out["layer_sharing"] = generated["encoder"]
        else:  # stacks of different depth: one generated pattern each
            out["layer_sharing"] = None
            for stack, pattern in generated.items():
                if out.get(own_knob[stack]) is None:
                    out[own_knob[stack]] = pattern
    for stack, depth in depths.items():
        own = values.get(own_knob[stack])
        if isinstance(own, str) and own in PATTERN_FAMILIES:
            out[own_knob[stack]] = _generate(own, depth)
    return {k: v for k, v in out.items() if v is not None or k not in PATTERN_KNOBS}


def _generate(family: str, depth: int) -> str | None:
    from .sharing import format_pattern

    return None if family == "none" else format_pattern(generate_pattern(family, depth))


# ---- parsing -----------------------------------------------------------------------------------
def _parse_knob(name: str, spec: Any, family: str, problems: list[Problem]) -> Knob | None:
    path = ("space", name)
    if name == "family":
        problems.append((path, "the family is set at the top of the study (`family:`), not in `space`"))
        return None
    if name == "epochs":
        problems.append((path, "epochs per trial are set in `budget: {epochs: N}`"))
        return None
    if name not in SPACE_KNOBS:
        problems.append((path, f"unknown knob{did_you_mean(name, SPACE_KNOBS)}"))
        return None
    when = default = None
    try:
        if isinstance(spec, Mapping):
            unknown = [k for k in spec if k not in SPEC_KEYS]
            for key in unknown:
                problems.append(
                    (
                        (*path, key),
                        f"unknown key{did_you_mean(str(key), SPEC_KEYS)}; a knob takes "
                        "`choice`, `int` (+ `step`, `log`), `float` (+ `log`), `value`, "
                        "`when`, `default`",
                    )
                )
            if unknown:
                return None
            domain = parse_domain(spec)
            if "when" in spec:
                when = Condition.parse(spec["when"])
            default = spec.get("default")
        else:
            domain = Fixed(spec)
    except DomainError as exc:
        problems.append(((*path, exc.key) if exc.key else path, str(exc)))
        return None
    if name in INPUT_SIZES and not isinstance(domain, Fixed):
        problems.append((path, "is an input size the task fixes; it can be set to one value, not searched"))
        return None
    bad = [(v, m) for v in checked_values(domain) if (m := _value_problem(name, v, family))]
    key = _domain_key(spec)
    by_rule: dict[str, list[str]] = {}  # one line per rule broken: a wide range breaks one at every value checked
    for _, message in bad:
        by_rule.setdefault(message.split(", got ", 1)[0], []).append(message)
    for messages in by_rule.values():
        more = f" (and {len(messages) - 1} more of the values checked)" if len(messages) > 1 else ""
        problems.append(((*path, key) if key else path, messages[0] + more))
    if default is not None and (m := _value_problem(name, default, family)):
        problems.append(((*path, "default"), f"default: {m}"))
    if bad:
        return None
    implied, neutral = IMPLIED.get(name, (None, None))
    if default is None:
        default = _base_default(name, family)
    arch = BY_NAME.get(name)
    searched = _without(domain, neutral) if arch is not None and arch.neutral_means is not None else domain
    return Knob(name, searched, when, implied, default, neutral, written=domain if searched != domain else None)


def _without(domain: Domain, neutral: Any) -> Domain:
    """``domain`` without ``neutral`` where it has other values, for a knob whose neutral value is never valid
    where it is active (the table's ``neutral_means``: `groups: 1` is "no grouping", LW-Transformer's baseline).

    Such a knob is active only where its ``active_when`` holds, and there the neutral value breaks a rule;
    the points with the neutral value are those where it is inactive and takes that value anyway. Leaving
    it out of the searched domain keeps every point valid and trains no point twice.
    """
    if isinstance(domain, Choice) and len(domain.choices) > 1 and is_member(neutral, domain.choices):
        return Choice(tuple(c for c in domain.choices if not same_value(c, neutral)))
    if isinstance(domain, IntRange) and same_value(domain.low, neutral) and domain.high > domain.low:
        return IntRange(domain.low + domain.step, domain.high, domain.step, domain.log and domain.step == 1)
    return domain


def _neutral_problem(knob: Knob, value: Any) -> str:
    """The neutral value of a ``neutral_means`` knob given where the knob is searched (a seed config)."""
    assert knob.implied is not None  # a knob with `neutral_means` has `active_when` (the table checks)
    return (
        f"`{knob.name}: {show_value(value)}` means {BY_NAME[knob.name].neutral_means}: leave `{knob.name}` out "
        f"and set {knob.implied.negation()}"
    )


def _domain_key(spec: Any) -> str | None:
    if isinstance(spec, Mapping):
        return next((k for k in ("choice", "int", "float", "value") if k in spec), None)
    return None


def _value_problem(name: str, value: Any, family: str) -> str | None:
    if name in TRAINING_KNOBS:
        return training_value_problem(name, value)
    if name in PATTERN_KNOBS:
        if isinstance(value, str) and value in PATTERN_FAMILIES:
            return None
        try:
            parse_pattern(value)
        except ValueError as exc:
            return f"{shown(value)} is neither a pattern family ({', '.join(PATTERN_FAMILIES)}) nor a pattern: {exc}"
        return None
    problems = [m for k, m in type_problems({"family": family, name: value}) if k == name]
    return problems[0] if problems else None


def _base_default(name: str, family: str) -> Any:
    if name in TRAINING_DEFAULTS:
        return TRAINING_DEFAULTS[name]
    value = getattr(ArchConfig(family=family), name)
    return list(value) if isinstance(value, tuple) and name not in PATTERN_KNOBS else value


def _order(knobs: list[Knob], family: str, problems: list[Problem]) -> list[Knob]:
    """Topological order by condition references (stable in vocabulary order); report cycles."""
    by_name = {k.name: k for k in knobs}
    for knob in knobs:
        if knob.when is None:
            continue
        for ref in sorted(knob.when.knobs):
            if ref not in SPACE_KNOBS:
                problems.append(
                    (("space", knob.name, "when"), f"condition on unknown knob `{ref}`{did_you_mean(ref, SPACE_KNOBS)}")
                )
            elif ref not in by_name:
                problems.append(
                    (
                        ("space", knob.name, "when"),
                        f"condition on `{ref}`, which the space does not set; add `{ref}` to `space`",
                    )
                )
            elif ref == knob.name:
                problems.append((("space", knob.name, "when"), "a knob's condition cannot read the knob itself"))
    rank = {name: i for i, name in enumerate(SPACE_KNOBS)}
    deps = {
        k.name: {r for r in (k.condition.knobs if k.condition else ()) if r in by_name and r != k.name} for k in knobs
    }
    ordered: list[Knob] = []
    placed: set[str] = set()
    while len(ordered) < len(knobs):
        ready = sorted((n for n in by_name if n not in placed and deps[n] <= placed), key=rank.__getitem__)
        if not ready:
            cycle = sorted(n for n in by_name if n not in placed)
            problems.append((("space",), f"conditions form a cycle among {', '.join(f'`{n}`' for n in cycle)}"))
            return ordered
        ordered.append(by_name[ready[0]])
        placed.add(ready[0])
    return ordered


__all__ = [
    "IMPLIED",
    "INPUT_SIZES",
    "SPACE_KNOBS",
    "Choice",
    "FloatRange",
    "IntRange",
    "Knob",
    "Point",
    "SearchSpace",
    "SpaceError",
    "is_member",
]
