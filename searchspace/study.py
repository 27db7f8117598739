"""Study files: task, objectives, constraints, budget, tuner settings and search space in one YAML.

``load_study`` reads a file safely, checks every part and reports every problem at once, each
with its file, line and the rule broken (``StudyError``). docs/studies.md documents the language.
Checks that need a task or the cost model (the objective's metric, constraints no point can meet)
live with those, in ``tuners.planning.check``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .config import FAMILIES
from .domains import Fixed
from .errors import ConfigError, did_you_mean, shown
from .grid import grid_problems
from .latency_settings import LATENCY_METRICS, LatencySettings, latency_settings
from .space import SearchSpace, SpaceError
from .space_check import checked_space
from .training import STUDY_TRAINING_KEYS, training_value_problem
from .yamlsource import YamlProblem, line_of, load_located, loads_located

COST_METRICS = ("params", "madds", "memory", *LATENCY_METRICS)  # latency*: measured ms (latency_settings)
Direction = Literal["maximize", "minimize"]
MAXIMIZE: Direction = "maximize"
MINIMIZE: Direction = "minimize"
DIRECTIONS: tuple[Direction, ...] = (MAXIMIZE, MINIMIZE)
SAMPLERS = ("nsga2", "tpe", "gp", "random", "grid", "nni-tpe", "nni-evolution")
SCHEDULERS = ("none", "mo-asha")
# `search: {strategy: ...}`: what a sweep trains of what the sampler proposes (tuners/driver/strategies.py)
STRATEGIES = (
    "full",
    "mo-asha",
    "fresh",
    "sh-1",
    "pasha",
    "cost-screen",
    "proxy-screen",
    "surrogate",
    "surrogate-sh-1",
)
DEFAULT_STRATEGY = "full"
WINDOWED_SAMPLERS = ("tpe", "gp")  # samplers whose ask reads every finished trial: they get a window
# finished trials a tpe/gp sampler learns from by default (the most recent), why in docs/performance.md:
# TPE's ask then costs what it costs at 2,000-2,500 trials at any study size; GP's took 10-33 s per ask
# over 100 trials and 162 s over 1,000, so it gets a window of 100
DEFAULT_SAMPLER_WINDOW = {"tpe": 2000, "gp": 100}
MIN_SAMPLER_WINDOW = 10  # make_sampler's TPE and GP start with up to 10 random trials: the window holds them
TOP_KEYS = (
    "name",
    "description",
    "task",
    "task_options",
    "family",
    "objectives",
    "constraints",
    "budget",
    "tuner",
    "seed_configs",
    "training",
    "space",
    "latency",
    "search",
)
# a study's name becomes part of file and folder names (Ray's results, exports) and of printed
# shell commands: one path component that cannot climb out of its folder or be read as an option
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\Z")  # \Z: `$` would let a trailing newline through
NAME_RULE = "1 to 100 letters, digits, `-`, `_` or `.`, starting with a letter or digit"
FamilyOf = Callable[[str], "str | None"]
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


@dataclass(frozen=True)
class Objective:
    """One objective of a study, the one shape objectives travel in from this parser to the dashboard.

    A study stores its objectives as ``[[metric, direction], ...]`` (``tuners.fronts.objectives``
    encodes and decodes that, and holds every sign flip, dominance test and hypervolume).
    """

    metric: str
    direction: Direction

    @property
    def is_cost(self) -> bool:
        return self.metric in COST_METRICS


@dataclass(frozen=True)
class Constraint:
    """Bounds on a cost (``params``, ``madds``, ``memory`` in bytes, ``latency*`` in ms), checked before training."""

    metric: str
    min: float | None = None
    max: float | None = None

    def violation(self, value: float) -> float:
        """How far ``value`` is outside the bounds (<= 0 when it is inside): Optuna's constraint form."""
        over = value - self.max if self.max is not None else float("-inf")
        under = self.min - value if self.min is not None else float("-inf")
        return max(over, under)

    def describe(self) -> str:
        parts = ([f">= {self.min:g}"] if self.min is not None else []) + (
            [f"<= {self.max:g}"] if self.max is not None else []
        )
        return f"{self.metric} {' and '.join(parts)}"


@dataclass(frozen=True)
class StopWhen:
    """End a sweep once the front's hypervolume grew by at most ``tolerance`` (a fraction of it) over
    the last ``window`` trials that used a place in the budget (``budget: {stop_when: ...}``)."""

    window: int = 20
    tolerance: float = 0.001


@dataclass(frozen=True)
class Budget:
    trials: int = 20
    epochs: int = 3  # training epochs per trial (the full budget; schedulers may stop earlier)
    time_s: float | None = None  # wall-clock limit of the whole sweep
    stop_when: StopWhen | None = None  # None: the sweep runs its whole budget
    front_seeds: int = 1  # seeds each trial on (or within the noise of) the front is trained with


@dataclass(frozen=True)
class TunerSettings:
    sampler: str = "nsga2"
    scheduler: str = "none"
    max_concurrent: int = 2
    seed: int = 0
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    max_failures: int = 1  # retries of a trial that failed for a transient reason
    population_size: int | None = None  # nsga2 / nni-evolution; None: the sampler's default
    grace_epochs: int = 1  # mo-asha: epochs before the first promotion decision
    reduction_factor: int = 3  # mo-asha: keep 1 in reduction_factor at each rung
    sampler_window: int | str | None = None  # tpe / gp: an integer, "all", or None for the default
    pack: int | str = 1  # Optuna trials trained together by one Ray trial (tuners/driver/pack.py), or "auto"
    grid_seeds: int = 1  # grid: seeds every point of the grid is trained with

    def window(self) -> int | None:
        """Finished trials the sampler learns from (None: every trial); only tpe and gp have one."""
        if self.sampler not in WINDOWED_SAMPLERS or self.sampler_window == "all":
            return None
        if isinstance(self.sampler_window, int):
            return self.sampler_window
        return DEFAULT_SAMPLER_WINDOW[self.sampler]  # None: the sampler's default (the study checks the rest)


@dataclass(frozen=True)
class SearchSettings:
    """``search: {strategy: NAME, proxy: SCORE}``: the strategy, and the training-free score proxy-screen ranks by."""

    strategy: str = DEFAULT_STRATEGY
    proxy: str | None = None  # None: the first score (by name) a point has


@dataclass(frozen=True)
class Study:
    name: str
    task: str
    family: str
    objectives: tuple[Objective, ...]
    space: SearchSpace
    constraints: tuple[Constraint, ...] = ()
    budget: Budget = Budget()
    tuner: TunerSettings = TunerSettings()
    training: dict[str, Any] = field(default_factory=dict)  # fixed training settings
    seed_configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> params
    task_options: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    path: Path | None = None
    lines: dict = field(default_factory=dict, repr=False, compare=False)
    source: dict = field(default_factory=dict, repr=False, compare=False)  # the file's data, as read
    latency: LatencySettings = LatencySettings()  # how the latency metrics are measured
    search: SearchSettings = SearchSettings()  # the search strategy

    def where(self, path: tuple) -> str:
        """``file:line: dotted.path`` for messages about this study."""
        return _location(self.path, self.lines, path)


class StudyError(ConfigError):
    """Every problem of a study file; each is (``file:line: path``, message)."""


def load_study(path: str | Path, task_family: FamilyOf | None = None, check_space: bool = True) -> Study:
    """Read and check a study file; raises StudyError with every problem found.

    Args:
        path: the YAML file.
        task_family: maps a task name to its model family, so a study may leave `family` out
            (``tuners`` passes one that knows the built-in tasks and plugins).
        check_space: check the space's discrete part rule by rule (see ``space_check``).
    """
    path = Path(path)
    try:
        data, lines = load_located(path)
    except FileNotFoundError:
        raise StudyError([(str(path), "no such file")]) from None
    except YamlProblem as exc:
        raise StudyError([(f"{path}:{exc.line}" if exc.line else str(path), exc.message)]) from None
    return study_from_dict(data, path, lines, task_family, check_space)


def loads_study(text: str, name: str = "<study>", task_family: FamilyOf | None = None) -> Study:
    """Parse a study from YAML text (tests, the dashboard)."""
    try:
        data, lines = loads_located(text)
    except YamlProblem as exc:
        raise StudyError([(f"{name}:{exc.line}", exc.message)]) from None
    return study_from_dict(data, Path(name), lines, task_family)


def name_problem(name: Any) -> str | None:
    """What is wrong with a study name (the study's `name` or a `--name`), or None."""
    if isinstance(name, str) and _NAME.match(name):
        return None
    return f"must be {NAME_RULE}, got {shown(name)}"


def path_component(name: str) -> str:
    """``name`` as one safe file or folder name (a study in storage may predate the name rule)."""
    return name if _NAME.match(name) else (re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip("._-")[:100] or "study")


def study_from_dict(
    data: Any,
    path: Path | None = None,
    lines: dict | None = None,
    task_family: FamilyOf | None = None,
    check_space: bool = True,
) -> Study:
    lines = lines or {}
    problems: list[tuple[tuple, str]] = []
    if not isinstance(data, Mapping):
        raise StudyError(
            [(_location(path, lines, ()), f"a study is a mapping with `task` and `space`, got {type(data).__name__}")]
        )
    for key in data:
        if key not in TOP_KEYS:
            problems.append(((key,), f"unknown key{did_you_mean(str(key), TOP_KEYS)}"))
    for key in ("task", "objectives", "space"):
        if key not in data:
            problems.append(((), f"`{key}` is missing"))
    name = data.get("name", path.stem if path else "study")
    if (name_message := name_problem(name)) is not None:
        problems.append((("name",), name_message))
    task = data.get("task", "")
    if not isinstance(task, str) or not task:
        problems.append((("task",), f"must be a built-in task name or `package.module:Class`, got {shown(task)}"))
    family = _family(data, task_family, problems)
    objectives = _objectives(data["objectives"], problems) if "objectives" in data else ()
    constraints = _constraints(data.get("constraints") or {}, problems)
    budget = _budget(data.get("budget") or {}, problems)
    tuner = _tuner(data.get("tuner") or {}, problems)
    search = _search(data.get("search") or {}, tuner, problems)
    training = _training(data.get("training") or {}, data.get("space") or {}, problems)
    latency = latency_settings(data.get("latency") or {}, problems)
    task_options = data.get("task_options") or {}
    if not isinstance(task_options, Mapping):
        problems.append((("task_options",), "must be a mapping of keyword arguments for the task"))
    space = None
    if family is not None and "space" in data:
        try:
            parse = checked_space if check_space else SearchSpace.from_dict
            space = parse(data["space"], family)
        except SpaceError as exc:
            problems.extend(exc.problems)
    seeds = _seed_configs(data.get("seed_configs") or {}, space, problems)
    if tuner.sampler == "grid":
        problems.extend(_grid_problems(data, space, budget))
    if problems:
        raise StudyError([(_location(path, lines, p), m) for p, m in problems])
    assert family is not None and space is not None  # either is None only where a problem was reported
    return Study(
        name=name,
        task=task,
        family=family,
        objectives=objectives,
        space=space,
        constraints=constraints,
        budget=budget,
        tuner=tuner,
        training=dict(training),
        seed_configs=seeds,
        task_options=dict(task_options),
        description=str(data.get("description", "")),
        path=path,
        lines=lines,
        source=dict(data),
        latency=latency,
        search=search,
    )


def with_budget(study: Study, trials: int | None = None, epochs: int | None = None) -> Study:
    """``study`` with the command line's ``--trials`` / ``--epochs`` in its budget, checked by the file's rules.

    The overrides go into the study's ``source`` too, which a sweep stores as the study's spec: the study
    records the values it ran with, and ``lwnas resume`` keeps them. Raises StudyError naming the option.
    """
    given = {k: v for k, v in (("trials", trials), ("epochs", epochs)) if v is not None}
    if not given:
        return study
    problems: list[tuple[tuple, str]] = []
    budget = _budget(given, problems)
    if problems:
        raise StudyError([(f"--{where[-1]}", message) for where, message in problems])
    source_budget = study.source.get("budget") if isinstance(study.source.get("budget"), Mapping) else {}
    return replace(
        study,
        budget=replace(study.budget, **{k: getattr(budget, k) for k in given}),
        source={**study.source, "budget": {**(source_budget or {}), **given}},
    )


def _location(path: Path | None, lines: dict, where: tuple) -> str:
    line = line_of(lines, where)
    head = f"{path}:{line}" if path and line else str(path or "<study>")
    return f"{head}: {'.'.join(map(str, where))}" if where else head


# ---- sections -------------------------------------------------------------------------------------
def _family(data: Mapping, task_family: FamilyOf | None, problems: list) -> str | None:
    family = data.get("family")
    if family is None:
        task = data.get("task")
        if not isinstance(task, str) or not task:
            return None  # the missing or bad task is reported on its own
        try:
            from_task = task_family(task) if task_family else None
        except ValueError as exc:
            problems.append((("task",), str(exc)))
            return None
        if from_task is None:
            problems.append((("family",), f"is needed for task {shown(task)}: give one of {', '.join(FAMILIES)}"))
        return from_task
    if family not in FAMILIES:
        problems.append(
            (
                ("family",),
                f"must be one of {', '.join(FAMILIES)}, got {shown(family)}{did_you_mean(str(family), FAMILIES)}",
            )
        )
        return None
    return family


def _objectives(raw: Any, problems: list) -> tuple[Objective, ...]:
    if isinstance(raw, Mapping):
        items = [{"metric": k, "direction": v} for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [{"metric": r} if isinstance(r, str) else r for r in raw]
    else:
        problems.append(
            (
                ("objectives",),
                f"must be a list like [accuracy, params] or a mapping like {{accuracy: maximize}}, got {shown(raw)}",
            )
        )
        return ()
    if not items:
        problems.append((("objectives",), "needs at least one objective"))
    out: list[Objective] = []
    for i, item in enumerate(items):
        where = ("objectives", item.get("metric", i) if isinstance(raw, Mapping) and isinstance(item, Mapping) else i)
        if not isinstance(item, Mapping) or not isinstance(item.get("metric"), str):
            problems.append(
                (
                    where,
                    f"an objective is a metric name or {{metric: NAME, direction: maximize|minimize}}, "
                    f"got {shown(item)}",
                )
            )
            continue
        extra = [k for k in item if k not in ("metric", "direction")]
        for key in extra:
            problems.append(((*where, key), f"unknown key{did_you_mean(str(key), ('metric', 'direction'))}"))
        metric = item["metric"]
        default: Direction = MINIMIZE if metric in COST_METRICS else MAXIMIZE
        direction = item.get("direction") or default
        if direction not in DIRECTIONS:
            problems.append((where, f"direction must be maximize or minimize, got {shown(direction)}"))
        elif metric in COST_METRICS and direction != "minimize":
            problems.append((where, f"`{metric}` is a cost: it can only be minimised"))
        if any(o.metric == metric for o in out):
            problems.append((where, f"`{metric}` is listed twice"))
        out.append(Objective(metric, direction))
    return tuple(out)


def _constraints(raw: Any, problems: list) -> tuple[Constraint, ...]:
    if not isinstance(raw, Mapping):
        problems.append(
            (("constraints",), f"must map a cost to bounds, e.g. {{params: {{max: 5.0e6}}}}, got {shown(raw)}")
        )
        return ()
    out = []
    for metric, bounds in raw.items():
        where = ("constraints", metric)
        if metric not in COST_METRICS:
            problems.append(
                (
                    where,
                    f"constraints bound static costs: {', '.join(COST_METRICS)}"
                    f"{did_you_mean(str(metric), COST_METRICS)}",
                )
            )
            continue
        if _is_number(bounds):
            bounds = {"max": bounds}
        if not isinstance(bounds, Mapping) or not bounds or any(k not in ("min", "max") for k in bounds):
            problems.append((where, f"bounds are {{max: N}} and/or {{min: N}}, got {shown(bounds)}"))
            continue
        low, high = bounds.get("min"), bounds.get("max")
        if any(v is not None and (not _is_number(v) or v < 0) for v in (low, high)):
            problems.append((where, f"bounds must be numbers >= 0, got {shown(dict(bounds))}"))
            continue
        if low is not None and high is not None and low > high:
            problems.append((where, f"`min <= max` must hold, but got (min={low:g}, max={high:g})"))
            continue
        out.append(Constraint(metric, low, high))
    return tuple(out)


def _budget(raw: Any, problems: list) -> Budget:
    if not isinstance(raw, Mapping):
        problems.append((("budget",), f"must be a mapping like {{trials: 20, epochs: 3, time: 30m}}, got {shown(raw)}"))
        return Budget()
    out: dict[str, Any] = {}
    for key, value in raw.items():
        where = ("budget", key)
        if key in ("trials", "epochs", "front_seeds"):
            if not _is_int(value) or value < 1:
                problems.append((where, f"must be an integer >= 1, got {shown(value)}"))
            else:
                out[key] = value
        elif key == "time":
            seconds = parse_duration(value)
            if seconds is None:
                problems.append((where, f"must be seconds or a duration like 90s, 30m, 2h, got {shown(value)}"))
            else:
                out["time_s"] = seconds
        elif key == "stop_when":
            out["stop_when"] = _stop_when(value, problems)
        else:
            problems.append((where, f"unknown key{did_you_mean(str(key), BUDGET_KEYS)}"))
    return Budget(**out)


BUDGET_KEYS = ("trials", "epochs", "time", "stop_when", "front_seeds")
_STOP_WHEN_RULES: dict[str, tuple[str, Any]] = {
    "window": ("an integer >= 2", lambda v: _is_int(v) and v >= 2),
    "tolerance": ("a number >= 0 (a fraction of the hypervolume, e.g. 0.001)", lambda v: _is_number(v) and v >= 0),
}


def _stop_when(raw: Any, problems: list) -> StopWhen | None:
    if not isinstance(raw, Mapping):
        problems.append(
            (("budget", "stop_when"), f"must be a mapping like {{window: 20, tolerance: 0.001}}, got {shown(raw)}")
        )
        return None
    out: dict[str, Any] = {}
    for key, value in raw.items():
        where = ("budget", "stop_when", key)
        if key not in _STOP_WHEN_RULES:
            problems.append((where, f"unknown key{did_you_mean(str(key), tuple(_STOP_WHEN_RULES))}"))
        elif not _STOP_WHEN_RULES[key][1](value):
            problems.append((where, f"must be {_STOP_WHEN_RULES[key][0]}, got {shown(value)}"))
        else:
            out[key] = value
    return StopWhen(**out)


def parse_duration(value: Any) -> float | None:
    """Seconds of ``90``, ``"90s"``, ``"30m"``, ``"2h"`` or ``"1d"`` (None if unreadable or <= 0)."""
    if _is_number(value):
        return float(value) if value > 0 else None
    match = _DURATION.match(str(value))
    if not match:
        return None
    seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return seconds if seconds > 0 else None


MAX_TUNER_SEED = 2**32 - 1
MAX_CPUS_PER_TRIAL = 1024
MAX_GPUS_PER_TRIAL = 64

MAX_PACK = 256  # candidates one Ray trial trains together
_TUNER_RULES: dict[str, tuple[str, Any]] = {
    "sampler": (f"one of {', '.join(SAMPLERS)}", lambda v: v in SAMPLERS),
    "scheduler": (f"one of {', '.join(SCHEDULERS)}", lambda v: v in SCHEDULERS),
    "max_concurrent": ("an integer >= 1", lambda v: _is_int(v) and v >= 1),
    # Optuna's samplers seed numpy's RandomState, which takes 0 .. 2**32 - 1
    "seed": (
        f"an integer >= 0, at most {MAX_TUNER_SEED:,} (2**32 - 1)",
        lambda v: _is_int(v) and 0 <= v <= MAX_TUNER_SEED,
    ),
    # a trial runs on one machine: beyond these no machine has that many, and Ray would wait for one forever
    "cpus_per_trial": (
        f"a number > 0, at most {MAX_CPUS_PER_TRIAL:,}",
        lambda v: _is_number(v) and 0 < v <= MAX_CPUS_PER_TRIAL,
    ),
    "gpus_per_trial": (
        f"a number >= 0, at most {MAX_GPUS_PER_TRIAL}",
        lambda v: _is_number(v) and 0 <= v <= MAX_GPUS_PER_TRIAL,
    ),
    "max_failures": ("an integer >= 0", lambda v: _is_int(v) and v >= 0),
    "population_size": ("an integer >= 2", lambda v: v is None or (_is_int(v) and v >= 2)),
    "grace_epochs": ("an integer >= 1", lambda v: _is_int(v) and v >= 1),
    "reduction_factor": ("an integer >= 2", lambda v: _is_int(v) and v >= 2),
    "pack": (
        f"an integer from 1 to {MAX_PACK} or `auto`",
        lambda v: v == "auto" or (_is_int(v) and 1 <= v <= MAX_PACK),
    ),
    "grid_seeds": ("an integer >= 1", lambda v: _is_int(v) and v >= 1),
    "sampler_window": (
        f"an integer >= {MIN_SAMPLER_WINDOW} or `all`",
        lambda v: v == "all" or (_is_int(v) and v >= MIN_SAMPLER_WINDOW),
    ),
}


def _tuner(raw: Any, problems: list) -> TunerSettings:
    if not isinstance(raw, Mapping):
        problems.append((("tuner",), f"must be a mapping like {{sampler: nsga2, seed: 0}}, got {shown(raw)}"))
        return TunerSettings()
    out = {}
    for key, value in raw.items():
        where = ("tuner", key)
        if key not in _TUNER_RULES:
            problems.append((where, f"unknown key{did_you_mean(str(key), _TUNER_RULES)}"))
            continue
        rule, ok = _TUNER_RULES[key]
        if not ok(value):
            hint = (
                did_you_mean(str(value), SAMPLERS if key == "sampler" else SCHEDULERS)
                if key in ("sampler", "scheduler")
                else ""
            )
            problems.append((where, f"must be {rule}, got {shown(value)}{hint}"))
        else:
            out[key] = value
    sampler = out.get("sampler", TunerSettings.sampler)
    sampler_failed = "sampler" in raw and "sampler" not in out  # reported above; the default is not in force
    if "sampler_window" in out and not sampler_failed and sampler not in WINDOWED_SAMPLERS:
        problems.append(
            (
                ("tuner", "sampler_window"),
                f"applies to the {' and '.join(WINDOWED_SAMPLERS)} samplers only; this study's sampler is {sampler}",
            )
        )
    if out.get("pack", 1) != 1 and not sampler_failed and sampler.startswith("nni-"):
        problems.append(
            (
                ("tuner", "pack"),
                f"packs are filled by lwnas's Optuna searcher; the {sampler} sampler proposes one trial at a time "
                f"(use pack: 1, or an Optuna sampler: nsga2, tpe, gp, random)",
            )
        )
    if "grid_seeds" in out and not sampler_failed and sampler != "grid":
        problems.append(
            (("tuner", "grid_seeds"), f"applies to the grid sampler only; this study's sampler is {sampler}")
        )
    return TunerSettings(**out)


def _search(raw: Any, tuner: TunerSettings, problems: list) -> SearchSettings:
    if not isinstance(raw, Mapping):
        problems.append((("search",), f"must be a mapping like {{strategy: {DEFAULT_STRATEGY}}}, got {shown(raw)}"))
        return SearchSettings()
    out: dict[str, Any] = {}
    for key, value in raw.items():
        where = ("search", key)
        if key == "strategy":
            if value not in STRATEGIES:
                hint = did_you_mean(str(value), STRATEGIES)
                problems.append((where, f"must be one of {', '.join(STRATEGIES)}, got {shown(value)}{hint}"))
            else:
                out[key] = value
        elif key == "proxy":
            if not isinstance(value, str) or not value:
                problems.append((where, f"must be the name of a training-free score, got {shown(value)}"))
            else:
                out[key] = value
        else:
            problems.append((where, f"unknown key{did_you_mean(str(key), ('strategy', 'proxy'))}"))
    strategy = out.get("strategy", DEFAULT_STRATEGY)
    if strategy != DEFAULT_STRATEGY and strategy != "mo-asha" and tuner.scheduler != "none":
        problems.append(
            (
                ("search", "strategy"),
                f"{strategy} chooses its own scheduler; remove `tuner: {{scheduler: {tuner.scheduler}}}` "
                "or use strategy full",
            )
        )
    if "proxy" in out and strategy != "proxy-screen":
        problems.append((("search", "proxy"), f"applies to strategy proxy-screen only; this study's is {strategy}"))
    if strategy != DEFAULT_STRATEGY and tuner.pack != 1:
        # a pack's members are judged by its own pruner (mo-asha's rungs), which knows no strategy's rungs or screens
        problems.append(
            (
                ("search", "strategy"),
                f"{strategy} does not run in packs; use `tuner: {{pack: 1}}` with it, or strategy "
                f"{DEFAULT_STRATEGY} (with `tuner: {{scheduler: mo-asha}}` for early stopping)",
            )
        )
    return SearchSettings(**out)


def _training(raw: Any, space: Any, problems: list) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        problems.append((("training",), f"must be a mapping of fixed training settings, got {shown(raw)}"))
        return {}
    out = {}
    for key, value in raw.items():
        where = ("training", key)
        if key == "epochs":
            problems.append((where, "epochs per trial are set in `budget: {epochs: N}`"))
        elif key == "seed":
            problems.append((where, "the seed is set in `tuner: {seed: N}` (each trial derives its own)"))
        elif key not in STUDY_TRAINING_KEYS:
            problems.append((where, f"unknown training setting{did_you_mean(str(key), STUDY_TRAINING_KEYS)}"))
        elif isinstance(space, Mapping) and key in space:
            problems.append((where, f"`{key}` is also in `space`; set it in one place"))
        elif (message := training_value_problem(key, value)) is not None:
            problems.append((where, message))
        else:
            out[key] = value
    return out


def _grid_problems(data: Mapping, space: SearchSpace | None, budget: Budget) -> list[tuple[tuple, str]]:
    """What a grid sweep (``tuner: {sampler: grid}``) cannot have: an infinite grid, and what would add
    points or seeds beside it (it trains every point of the space with ``tuner.grid_seeds`` seeds)."""
    problems = list(grid_problems(space)) if space is not None else []
    if data.get("seed_configs"):
        problems.append((("seed_configs",), "a grid sweep trains every point of its space already: remove them"))
    if data.get("constraints"):
        problems.append((("constraints",), "a grid sweep trains every point of its space: narrow the space instead"))
    if budget.front_seeds > 1:
        problems.append(
            (("budget", "front_seeds"), "a grid sweep trains every point with `tuner.grid_seeds` seeds: set that")
        )
    return problems


def _seed_configs(raw: Any, space: SearchSpace | None, problems: list) -> dict[str, dict[str, Any]]:
    if not isinstance(raw, Mapping):
        problems.append((("seed_configs",), f"must map a name to knob values, got {shown(raw)}"))
        return {}
    out = {}
    for name, params in raw.items():
        where = ("seed_configs", name)
        if not isinstance(params, Mapping):
            problems.append((where, f"must map knobs to values, got {shown(params)}"))
            continue
        if space is None:
            continue
        fixed = {k.name: k.domain.value for k in space.knobs if isinstance(k.domain, Fixed)}
        for knob, value in params.items():
            if knob in fixed and value != fixed[knob]:
                problems.append(((*where, knob), f"is {shown(value)} but the space fixes it to {shown(fixed[knob])}"))
        searched = {k: v for k, v in params.items() if k not in fixed}
        found = space.partial_problems(searched)
        problems.extend(((*where, knob), message) for knob, message in found)
        if not found:
            out[str(name)] = dict(searched)
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
