"""Tabular benchmarks of the knob space (format ``lwnas-table/1``): every architecture of a study's space,
trained with several seeds, with its exact costs, training-free scores and per-epoch curves.

A table is one gzip JSON file. It holds the study it was built from (name, task, family, the ``space``
mapping, objectives, epochs, seeds) and one entry per distinct architecture: the params a sampler suggests
for it (the active searched knobs, as an Optuna trial stores them), its static costs (``params``, ``madds``,
``memory``), its training-free scores (``trainers.proxies``) and per seed the validation metric of every
task objective after each epoch and each epoch's wall seconds. ``tuners/simulate/table_export.py`` writes
one from a finished grid sweep (``tuner: {sampler: grid}``); a simulator replays trials from it.

The true front is the non-dominated set of the entries' seed means of the final-epoch metrics against
their costs; its hypervolume is measured from ``Table.reference_point()`` (task metrics at 0, costs at
1.1 x the largest entry's), fixed by the table alone so every strategy replayed on it is measured from the
same point. All objective math comes from ``tuners.fronts.objectives``.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from searchspace.space import SearchSpace
from searchspace.study import DIRECTIONS, Objective
from tuners.fronts.objectives import hypervolume, minimised, nondominated, reference_point

FORMAT = "lwnas-table/1"
COSTS = ("params", "madds", "memory")


class TableError(ValueError):
    """A table file that is not ``lwnas-table/1`` or breaks one of its rules (the message names the field)."""


@dataclass(frozen=True)
class Run:
    """One seed of one architecture: per epoch, each task metric on the validation split and the wall seconds."""

    seed: int
    metrics: dict[str, list[float]]  # task metric name -> value after epoch 1, 2, ...
    wall_s: list[float]  # seconds each epoch took (training + validation)

    @property
    def epochs(self) -> int:
        return len(self.wall_s)

    def final(self, metric: str) -> float:
        return self.metrics[metric][-1]


@dataclass(frozen=True)
class Entry:
    """One distinct architecture: its params, costs, training-free scores and runs (one per seed that completed)."""

    params: dict[str, Any]  # the active searched knobs, as a sampler suggests them
    costs: dict[str, float]  # params, madds, memory (exact, from trainers.cost)
    scores: dict[str, float | None] = field(default_factory=dict)  # training-free, at init (trainers.proxies)
    runs: tuple[Run, ...] = ()
    failures: tuple[str, ...] = ()  # why seeds that did not complete failed

    @property
    def key(self) -> str:
        return params_key(self.params)

    def mean_final(self, metric: str) -> float:
        """The seed mean of ``metric`` after the last epoch (NaN without a completed run)."""
        finals = [r.final(metric) for r in self.runs]
        return float(np.mean(finals)) if finals else math.nan


@dataclass(frozen=True)
class Table:
    """A tabular benchmark: a study's space, trained exhaustively (see the module docstring).

    Args:
        task: the task name (``trainers.tasks``) and ``task_options`` its options.
        study: the study's name; ``family`` and ``space`` its model family and ``space`` mapping.
        objectives: the study's objectives, in order; each task metric among them has a curve in every run.
        epochs: epochs every run was trained for; ``seeds``: runs per architecture.
        entries: one per distinct architecture.
    """

    task: str
    study: str
    family: str
    space: dict[str, Any]
    objectives: tuple[Objective, ...]
    epochs: int
    seeds: int
    entries: tuple[Entry, ...]
    task_options: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)  # the study's fixed training settings
    built: dict[str, Any] = field(default_factory=dict)  # how it was built: command, wall, throughput, machine

    @property
    def knobs(self) -> tuple[str, ...]:
        """The space's knob names, in the space's order."""
        return tuple(self.space)

    def search_space(self) -> SearchSpace:
        """The study's space as lwnas parses it (what a replayed sampler suggests from)."""
        return SearchSpace.from_dict(self.space, self.family)

    @property
    def task_metrics(self) -> tuple[str, ...]:
        return tuple(o.metric for o in self.objectives if not o.is_cost)

    def entry(self, params: Mapping[str, Any]) -> Entry:
        """The entry of the architecture ``params`` names (KeyError if the table has none)."""
        index = self._index()
        key = params_key(params)
        if key not in index:
            raise KeyError(f"no architecture with params {dict(params)} in table {self.study}")
        return self.entries[index[key]]

    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_by_key")
        if cached is None:
            cached = {e.key: i for i, e in enumerate(self.entries)}
            object.__setattr__(self, "_by_key", cached)  # frozen: a cache, not state
        return cached

    def complete(self) -> list[Entry]:
        """Entries with at least one run of every epoch (those the true front is computed over)."""
        return [e for e in self.entries if e.runs and all(r.epochs == self.epochs for r in e.runs)]

    def values(self, entries: Sequence[Entry] | None = None) -> np.ndarray:
        """``(n, m)`` objective values (seed means of the final metrics, costs) in the objectives' own units."""
        rows = self.complete() if entries is None else list(entries)
        return np.array(
            [[e.costs[o.metric] if o.is_cost else e.mean_final(o.metric) for o in self.objectives] for e in rows],
            dtype=float,
        ).reshape(len(rows), len(self.objectives))

    def reference_point(self) -> list[float]:
        """The point every hypervolume on this table is measured from (task metrics 0, costs 1.1 x the maximum
        over the complete entries): ``tuners.fronts.objectives.reference_point`` of all of them."""
        return reference_point(self.values().tolist(), self.objectives)

    def true_front(self) -> list[Entry]:
        """The complete entries no other one dominates on the seed means, sorted by the first objective's value."""
        entries = self.complete()
        if not entries:
            return []
        values = self.values(entries)
        mask = nondominated(minimised(values, self.objectives))
        front = [(e, v) for e, v, keep in zip(entries, values, mask) if keep]
        return [e for e, _ in sorted(front, key=lambda ev: tuple(ev[1]))]  # as objectives.pareto_front sorts

    def hypervolume_of(self, entries: Sequence[Entry]) -> float:
        """Hypervolume of ``entries``' seed means from ``reference_point()``."""
        if not entries:
            return 0.0
        ref = minimised(self.reference_point(), self.objectives)
        return hypervolume(minimised(self.values(entries), self.objectives), ref)

    def true_hypervolume(self) -> float:
        """Hypervolume of the true front from ``reference_point()``."""
        return self.hypervolume_of(self.true_front())

    def kendall_taus(self, metric: str | None = None) -> dict[str, dict[str, float]]:
        """Kendall's tau-b (and its p-value, and the entries it counts) of every training-free score and every
        cost against the seed mean of the final ``metric`` (the first task objective by default), over the
        complete entries that have the score: how well each ranks the architectures before any training."""
        from scipy.stats import kendalltau

        metric = metric or self.task_metrics[0]
        entries = self.complete()
        names = sorted({n for e in entries for n in e.scores}) + [
            c for c in COSTS if all(c in e.costs for e in entries)
        ]
        out = {}
        for name in names:
            pairs = [
                (e.scores.get(name) if name in e.scores else e.costs.get(name), e.mean_final(metric)) for e in entries
            ]
            xs, ys = zip(*[(x, y) for x, y in pairs if x is not None]) if pairs else ((), ())
            if len(xs) < 3:
                continue
            result = kendalltau(xs, ys)
            out[name] = {"tau": float(result.statistic), "p": float(result.pvalue), "n": len(xs)}
        return out


def params_key(params: Mapping[str, Any]) -> str:
    """One string per architecture: its params sorted by knob, JSON-encoded (true and 1 stay apart)."""
    return json.dumps(sorted(params.items()), separators=(",", ":"))


# ---- file form ---------------------------------------------------------------------------------------------
def to_dict(table: Table) -> dict[str, Any]:
    """The table as the JSON object its file holds."""
    return {
        "format": FORMAT,
        "task": table.task,
        "task_options": table.task_options,
        "study": table.study,
        "family": table.family,
        "knobs": list(table.knobs),
        "space": table.space,
        "training": table.training,
        "objectives": [[o.metric, o.direction] for o in table.objectives],
        "epochs": table.epochs,
        "seeds": table.seeds,
        "built": table.built,
        "entries": [
            {
                "params": e.params,
                "costs": e.costs,
                "scores": e.scores,
                "runs": [{"seed": r.seed, "metrics": r.metrics, "wall_s": r.wall_s} for r in e.runs],
                **({"failures": list(e.failures)} if e.failures else {}),
            }
            for e in table.entries
        ],
    }


def from_dict(data: Any) -> Table:
    """A table from its JSON object; raises TableError naming the field and the rule it breaks."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise TableError(f"format: must be {FORMAT!r}, got {got!r}")
    for key, kind in (("task", str), ("study", str), ("family", str), ("space", dict), ("entries", list)):
        if not isinstance(data.get(key), kind):
            raise TableError(f"{key}: must be a {kind.__name__}, got {type(data.get(key)).__name__}")
    for key in ("epochs", "seeds"):
        if not isinstance(data.get(key), int) or data[key] < 1:
            raise TableError(f"{key}: must be an integer >= 1, got {data.get(key)!r}")
    objectives = []
    for i, pair in enumerate(data.get("objectives") or []):
        if not (isinstance(pair, list) and len(pair) == 2 and pair[1] in DIRECTIONS):
            raise TableError(f"objectives[{i}]: must be [metric, maximize|minimize], got {pair!r}")
        objectives.append(Objective(str(pair[0]), pair[1]))
    if not objectives:
        raise TableError("objectives: needs at least one [metric, direction]")
    table = Table(
        task=data["task"],
        study=data["study"],
        family=data["family"],
        space=dict(data["space"]),
        objectives=tuple(objectives),
        epochs=data["epochs"],
        seeds=data["seeds"],
        entries=tuple(_entry(i, e, objectives, data["epochs"]) for i, e in enumerate(data["entries"])),
        task_options=dict(data.get("task_options") or {}),
        training=dict(data.get("training") or {}),
        built=dict(data.get("built") or {}),
    )
    if len(table._index()) != len(table.entries):
        raise TableError("entries: two entries have the same params (one entry per architecture)")
    return table


def _entry(i: int, raw: Any, objectives: Sequence[Objective], epochs: int) -> Entry:
    where = f"entries[{i}]"
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("params"), dict)
        or not isinstance(raw.get("costs"), dict)
    ):
        raise TableError(f"{where}: must be a mapping with `params` and `costs`")
    missing = [o.metric for o in objectives if o.is_cost and o.metric not in raw["costs"]]
    if missing:
        raise TableError(f"{where}.costs: lacks {', '.join(missing)}, an objective of the table")
    runs = []
    for j, run in enumerate(raw.get("runs") or []):
        at = f"{where}.runs[{j}]"
        walls = run.get("wall_s") if isinstance(run, Mapping) else None
        if not isinstance(walls, list) or not 1 <= len(walls) <= epochs:
            raise TableError(f"{at}.wall_s: must list 1 to {epochs} epoch times")
        metrics = run.get("metrics") or {}
        for o in objectives:
            if not o.is_cost and len(metrics.get(o.metric) or []) != len(walls):
                raise TableError(f"{at}.metrics.{o.metric}: must have one value per epoch ({len(walls)})")
        runs.append(Run(int(run.get("seed", j)), {k: list(v) for k, v in metrics.items()}, list(walls)))
    return Entry(
        params=dict(raw["params"]),
        costs=dict(raw["costs"]),
        scores=dict(raw.get("scores") or {}),
        runs=tuple(runs),
        failures=tuple(raw.get("failures") or ()),
    )


def save_table(table: Table, path: str | Path) -> Path:
    """Write ``table`` as gzip JSON (compact separators; mtime 0 so one table always gives the same bytes)."""
    path = Path(path)
    text = json.dumps(to_dict(table), separators=(",", ":"), allow_nan=False)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(text.encode())
    return path


def load_table(path: str | Path) -> Table:
    """Read a table file written by ``save_table``; raises TableError naming what is wrong."""
    path = Path(path)
    try:
        with gzip.open(path, "rb") as f:
            data = json.loads(f.read())
    except (OSError, EOFError, json.JSONDecodeError) as exc:
        raise TableError(f"{path}: not a gzip JSON table ({exc})") from None
    return from_dict(data)
