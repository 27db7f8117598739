"""Convert a search space for each backend, and map a backend's suggestion back to params.

* Optuna: a define-by-run function; only active knobs are suggested, each under its own name and
  always with the same distribution (so Optuna's samplers and storages accept every trial).
* Ray Tune: a flat ``param_space`` (Ray's sampling has no conditionals); values of knobs that are
  not active for the rest of the point are ignored when mapped back.
* NNI: ``search_space.json``; a knob whose condition reads one always-active choice knob is nested
  under that choice's options (``{"_name": value, knob: ...}``); any other conditional knob stays at
  the top level and is ignored where inactive, like Ray's.

Each ``from_*`` function returns the params of the point (active searched knobs only), which
``SearchSpace.resolve`` turns into a configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .conditions import is_member
from .domains import Choice, Fixed, FloatRange, IntRange
from .space import Knob, SearchSpace


def _missing(package: str, extra: str) -> ImportError:
    return ImportError(f"{package} is not installed; install it with `pip install {extra}`")


# ---- Optuna -----------------------------------------------------------------------------------
def optuna_distribution(knob: Knob) -> Any:
    """The Optuna distribution of a searched knob (the same for every trial)."""
    try:
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    except ImportError:
        raise _missing("optuna", "optuna") from None
    d = knob.domain
    if isinstance(d, Choice):
        return CategoricalDistribution(list(d.choices))
    if isinstance(d, IntRange):
        return IntDistribution(d.low, d.high, step=d.step, log=d.log)
    if isinstance(d, FloatRange):
        return FloatDistribution(float(d.low), float(d.high), log=d.log)
    raise TypeError(f"{knob.name} is fixed, not searched")


def optuna_suggest(space: SearchSpace) -> Callable[[Any], dict[str, Any]]:
    """A define-by-run function: ``suggest(trial)`` suggests the active knobs and returns the params."""

    def suggest(trial: Any) -> dict[str, Any]:
        def choose(knob: Knob) -> Any:
            d = knob.domain
            if isinstance(d, Choice):
                return trial.suggest_categorical(knob.name, list(d.choices))
            if isinstance(d, IntRange):
                return trial.suggest_int(knob.name, d.low, d.high, step=d.step, log=d.log)
            if isinstance(d, FloatRange):
                return trial.suggest_float(knob.name, float(d.low), float(d.high), log=d.log)
            raise TypeError(f"{knob.name} is fixed, not searched")  # `effective` never asks for a fixed value

        return space.active_params(space.effective(choose))

    return suggest


def optuna_search_space(space: SearchSpace) -> dict[str, Any]:
    """``{name: distribution}`` of every searched knob (for ``enqueue_trial`` and static samplers)."""
    return {k.name: optuna_distribution(k) for k in space.searched}


# ---- Ray Tune ----------------------------------------------------------------------------------
def to_ray(space: SearchSpace) -> dict[str, Any]:
    """A Ray Tune ``param_space`` over every searched knob (flat: Ray has no conditionals)."""
    try:
        from ray import tune
    except ImportError:
        raise _missing("ray[tune]", "'ray[tune]'") from None
    out: dict[str, Any] = {}
    for knob in space.searched:
        d = knob.domain
        if isinstance(d, Choice):
            out[knob.name] = tune.choice(list(d.choices))
        elif isinstance(d, IntRange):
            if d.log:
                out[knob.name] = tune.lograndint(d.low, d.high + 1)
            elif d.step == 1:
                out[knob.name] = tune.randint(d.low, d.high + 1)  # Ray's upper bound is exclusive
            elif d.low % d.step == 0:
                out[knob.name] = tune.qrandint(d.low, d.high, d.step)  # grid of multiples of step
            else:
                out[knob.name] = tune.choice(d.values())
        elif isinstance(d, FloatRange):
            out[knob.name] = (tune.loguniform if d.log else tune.uniform)(float(d.low), float(d.high))
    return out


def from_ray(space: SearchSpace, config: Mapping[str, Any]) -> dict[str, Any]:
    """Params of a configuration sampled from ``to_ray``'s param_space (inactive knobs dropped)."""
    values = {k.name: _cast(k, config[k.name]) for k in space.searched if k.name in config}
    return space.resolve(values, strict=False).params


# ---- NNI ---------------------------------------------------------------------------------------
def to_nni(space: SearchSpace) -> dict[str, Any]:
    """NNI ``search_space.json`` content; single-parent conditionals become nested choices."""
    parents = {k.name: _nni_parent(space, k) for k in space.searched}
    children: dict[tuple[str, Any], list[Knob]] = {}
    for knob in space.searched:
        if (found := parents[knob.name]) is not None:
            parent, allowed = found
            for value in allowed:
                children.setdefault((parent, repr(value)), []).append(knob)

    def spec(knob: Knob) -> dict[str, Any]:
        d = knob.domain
        if isinstance(d, Choice):
            options: list[Any] = list(d.choices)
            if any((knob.name, repr(v)) in children for v in options):
                options = [
                    {"_name": v, **{c.name: spec(c) for c in children.get((knob.name, repr(v)), [])}} for v in options
                ]
            return {"_type": "choice", "_value": options}
        if isinstance(d, IntRange):
            if d.log:
                return {"_type": "qloguniform", "_value": [d.low, d.high, 1]}
            if d.step == 1:
                return {"_type": "randint", "_value": [d.low, d.high + 1]}  # NNI's upper bound is exclusive
            if d.low % d.step == 0:
                return {"_type": "quniform", "_value": [d.low, d.high, d.step]}
            return {"_type": "choice", "_value": d.values()}
        if isinstance(d, FloatRange):
            return {"_type": "loguniform" if d.log else "uniform", "_value": [float(d.low), float(d.high)]}
        raise TypeError(f"{knob.name} is fixed, not searched")  # only searched knobs are converted

    return {k.name: spec(k) for k in space.searched if parents[k.name] is None}


def from_nni(space: SearchSpace, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Params of NNI's suggestion (nested ``_name`` choices flattened, inactive knobs dropped)."""
    flat: dict[str, Any] = {}

    def walk(mapping: Mapping[str, Any]) -> None:
        for key, value in mapping.items():
            if isinstance(value, Mapping) and "_name" in value:
                flat[key] = value["_name"]
                walk({k: v for k, v in value.items() if k != "_name"})
            else:
                flat[key] = value

    walk(parameters)
    by_name = {k.name: k for k in space.searched}
    values = {k: _cast(by_name[k], v) for k, v in flat.items() if k in by_name}
    return space.resolve(values, strict=False).params


def _nni_parent(space: SearchSpace, knob: Knob) -> tuple[str, tuple] | None:
    """``(parent, values)`` when ``knob`` is active exactly where one always-active searched choice knob
    takes ``values``; otherwise None (the knob stays at the top level of NNI's space).

    The parent must have no condition of its own: where a conditional parent is inactive it takes its
    neutral value, and a `when:` that holds for that value would make the knob active where NNI, which
    only samples it under the parent's option, has no value for it. Nesting one level deep only also
    suits NNI 3.0's tuners, which cannot sample choices nested two deep.
    """
    condition = knob.condition
    if condition is None:
        return None
    constant = {k.name for k in space.knobs if isinstance(k.domain, Fixed) and k.condition is None}
    base = space.effective(lambda k: k.domain.at(0))
    clauses = []
    for clause in condition.clauses:
        variable: dict[str, tuple] = {}
        for name, allowed in clause:
            if name in space.names and name not in constant:  # the same knob twice: both must hold
                variable[name] = tuple(v for v in variable.get(name, allowed) if is_member(v, allowed))
        fixed_ok = all(
            is_member(base[name], allowed)
            for name, allowed in clause
            if not (name in space.names and name not in constant)
        )
        if fixed_ok:
            clauses.append(variable)
    if len(clauses) != 1 or len(clauses[0]) != 1:
        return None
    ((name, allowed),) = clauses[0].items()
    parent = space.knob(name)
    if not isinstance(parent.domain, Choice) or not parent.searched or parent.condition is not None:
        return None
    return name, allowed


def _cast(knob: Knob, value: Any) -> Any:
    """Backends return floats for quantised integer ranges (NNI's q-distributions); cast back."""
    if isinstance(knob.domain, IntRange) and isinstance(value, float) and value.is_integer():
        return int(value)
    return value
