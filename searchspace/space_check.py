"""Checks over a space's discrete part: every point valid, every knob reachable, and its size.

The architecture's rules between knobs (``config.RULES``) each read a few knobs. Knobs joined by
a rule form a component; each component is enumerated on its own (with the knobs its conditions
read), so a study with many knobs is checked in thousands of steps, not their full product. A wide
domain (`int: [1, 100000000]`, a long `choice`) takes part through a fixed subset of its values
(``domains.checked_values``), so checking costs the same whatever the widths.
A value that no combination can use is reported as such; otherwise the first combination that
breaks a rule is shown with how many do.

``checked_space`` parses a ``space`` mapping and runs these checks (what a study does when it is read).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from .conditions import same_value
from .config import RULES, rule_violations
from .domains import Fixed, FloatRange, checked_values, show_value
from .knobs import ACTIVATION_RULES, BY_NAME
from .space import Knob, Problem, SearchSpace, SpaceError

ENUMERATION_LIMIT = 200_000  # combinations enumerated exactly; beyond, a random sample is checked
SAMPLED_COMBINATIONS = 50_000


def checked_space(data: Any, family: str) -> SearchSpace:
    """The space of a study's ``space`` mapping, parsed and checked; raises SpaceError listing every problem."""
    space = SearchSpace.from_dict(data, family)
    problems = check_space(space)
    if problems:
        raise SpaceError(problems)
    return space


def check_space(space: SearchSpace) -> list[Problem]:
    """Every problem of ``space``: unreachable knobs, conditions that never hold, broken rules."""
    problems = _condition_problems(space)
    if not problems:
        for component, rules in _rule_components(space):
            problems.extend(_check_component(space, component, rules))
    return problems


def discrete_size(space: SearchSpace) -> tuple[int, bool]:
    """Distinct combinations of the searched discrete knobs, and whether the count is exact.

    Float knobs are continuous and left out. Knobs that conditions read are enumerated jointly;
    every other knob multiplies the count by its domain size wherever it is active.
    """
    parents = _closure(space, {r for k in space.searched if k.condition for r in k.condition.knobs})
    leaves = [k for k in space.searched if k.name not in parents and not isinstance(k.domain, FloatRange)]
    total, exact = 0, True
    for values, _ in _combinations(space, parents):
        total += math.prod(k.domain.size() for k in leaves if _active(k, values))
    if _product(space, parents) > ENUMERATION_LIMIT:
        exact = False
    return total, exact


# ---- conditions --------------------------------------------------------------------------------
def _active(knob: Knob, values: dict[str, Any]) -> bool:
    return knob.condition is None or knob.condition.holds(values)


def _condition_problems(space: SearchSpace) -> list[Problem]:
    problems: list[Problem] = []
    names = set(space.names)
    for knob in space.knobs:
        if knob.when is not None:
            for clause in knob.when.clauses:
                for ref, allowed in clause:
                    if ref not in names:
                        continue
                    domain = space.knob(ref).domain
                    if isinstance(domain, FloatRange):
                        continue
                    missing = [v for v in allowed if not domain.contains(v)]
                    if missing:
                        problems.append(
                            (
                                ("space", knob.name, "when"),
                                f"`{ref}` never takes {', '.join(map(repr, missing))} "
                                f"(its domain is {domain.describe()})",
                            )
                        )
        if knob.condition is None or problems:
            continue
        reads = _closure(space, set(knob.condition.knobs))
        if knob.written is not None and all(_active(knob, v) for v, _ in _combinations(space, reads)):
            problems.append((("space", knob.name), _neutral_never_problem(knob)))
        if not any(_active(knob, values) for values, _ in _combinations(space, reads)):
            fixed = knob.domain.value if isinstance(knob.domain, Fixed) else None
            if knob.searched or (knob.implied is not None and not same_value(fixed, knob.neutral)):
                problems.append(
                    (
                        ("space", knob.name),
                        f"is {'searched' if knob.searched else 'set'} but never active: it applies only "
                        f"when {knob.condition.describe()}, which no point of the space meets",
                    )
                )
    return problems


def _neutral_never_problem(knob: Knob) -> str:
    """A ``neutral_means`` knob lists its neutral value, but the knob is active at every point of the space."""
    assert knob.written is not None and knob.implied is not None and knob.condition is not None
    left_out = ", ".join(show_value(v) for v in knob.written.values() if not knob.domain.contains(v))
    return (
        f"`{knob.name}: {left_out}` means {BY_NAME[knob.name].neutral_means}, but `{knob.name}` applies at every "
        f"point here ({knob.condition.describe()} always holds): remove it or set {knob.implied.negation()}"
    )


def _closure(space: SearchSpace, names: set[str]) -> set[str]:
    """``names`` plus every knob their conditions read, transitively (knobs in the space only)."""
    in_space = set(space.names)
    todo, seen = [n for n in names if n in in_space], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        condition = space.knob(name).condition
        todo.extend(r for r in (condition.knobs if condition else ()) if r in in_space)
    return seen


# ---- enumeration -------------------------------------------------------------------------------
def _product(space: SearchSpace, names: set[str]) -> int:
    """Combinations of the knobs ``names`` that the checks look at (wide domains represented)."""
    return math.prod(len(checked_values(k.domain)) for k in space.knobs if k.name in names)


def _combinations(space: SearchSpace, names: set[str]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Decided values for every combination of the knobs ``names`` (others at their first value).

    Yields ``(values, chosen)``: all knob values, and the values of the active knobs of ``names``.
    Beyond ``ENUMERATION_LIMIT`` combinations a seeded random sample is yielded instead.
    """
    order = [k for k in space.knobs if k.name in names]
    domains = [checked_values(k.domain) for k in order]  # never a whole wide range or a long choice
    grids: Iterable[tuple[Any, ...]]
    if _product(space, names) <= ENUMERATION_LIMIT:
        grids = itertools.product(*domains)
    else:
        rng = np.random.default_rng(0)
        grids = (tuple(d[int(rng.integers(len(d)))] for d in domains) for _ in range(SAMPLED_COMBINATIONS))
    seen: set[tuple] = set()
    for combo in grids:
        values = space.effective(_picker(dict(zip((k.name for k in order), combo))))
        chosen = {k.name: values[k.name] for k in order if _active(k, values) and not isinstance(k.domain, Fixed)}
        key = tuple(sorted((k, repr(v)) for k, v in chosen.items()))
        if key in seen:  # inactive knobs make several combinations the same point
            continue
        seen.add(key)
        yield values, chosen


def _picker(pick: dict[str, Any]) -> Callable[[Knob], Any]:
    """``effective``'s choice: the value in ``pick``, else the knob's first value."""
    return lambda knob: pick.get(knob.name, knob.domain.at(0))


# ---- rules ---------------------------------------------------------------------------------------
def _rule_components(space: SearchSpace) -> list[tuple[set[str], list[str]]]:
    """Groups of space knobs joined by (non-activation) rules, each with the rules it must meet."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    rules = {r: knobs for r, knobs in RULES.items() if r not in ACTIVATION_RULES}
    for knobs in rules.values():
        first, *rest = sorted(knobs)
        for other in rest:
            parent[find(other)] = find(first)
    groups: dict[str, set[str]] = {}
    for name in space.names:
        if name in parent or any(name in k for k in rules.values()):
            groups.setdefault(find(name), set()).add(name)
    out = []
    for members in groups.values():
        component_rules = [r for r, knobs in rules.items() if knobs & members]
        out.append((members, component_rules))
    return out


def _check_component(space: SearchSpace, members: set[str], rules: list[str]) -> list[Problem]:
    names = _closure(space, members) | {"family"}
    failures: dict[str, list[tuple[dict, str, str]]] = {}
    seen_values: dict[tuple[str, str], list[bool]] = {}
    total = 0
    for values, chosen in _combinations(space, names):
        total += 1
        broken = [(r, knob, m) for r, knob, m in rule_violations(space.arch_values(values)) or [] if r in rules]
        for rule, knob, message in broken:
            failures.setdefault(rule, []).append((chosen, knob, message))
        for name, value in chosen.items():
            seen_values.setdefault((name, show_value(value)), []).append(not broken)
    problems: list[Problem] = []
    hopeless = set()
    for (name, value), oks in seen_values.items():
        if name in members and not any(oks):
            hopeless.add((name, value))
    for rule, cases in failures.items():
        chosen, knob, message = cases[0]
        example = ", ".join(f"{k}: {show_value(v)}" for k, v in chosen.items() if k in RULES[rule] | members)
        where = knob if knob in space.names else next(n for n in sorted(RULES[rule]) if n in space.names)
        bad_values = sorted(f"`{n}: {v}`" for n, v in hopeless if n in RULES[rule])
        if bad_values:  # point at the knob whose value is at fault
            where = sorted(n for n, _ in hopeless if n in RULES[rule])[0]
        head = (
            f"{', '.join(bad_values)} can never be valid"
            if bad_values
            else f"{len(cases)} of {total} combinations break a rule"
        )
        problems.append(
            (
                ("space", where),
                f"{head}: `{knob}` {message} (e.g. {example or 'as set'}); "
                "remove the values or separate them with `when:`",
            )
        )
    return problems
