"""What a sweep prints: one line per finished trial, then the Pareto front and what to do next."""

from __future__ import annotations

import time
from typing import Any

import optuna
from ray.tune import Callback
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from searchspace.study import Study

from .objectives import direction_names
from .pareto import pareto_front
from .storage import masked, record_of
from .trainable import NUMBER


class SweepProgress(Callback):
    """Ray Tune callback: a line per finished trial with its metric, cost and time."""

    def __init__(self, ot_study: optuna.Study, study: Study, total: int, out: Console, quiet: bool = False):
        self.ot_study, self.study, self.total, self.out, self.quiet = ot_study, study, total, out, quiet
        self.done = 0
        self.start = time.time()
        self.metric = next((o.metric for o in study.objectives if not o.is_cost), None)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("ot_study", "out", "study")}

    def _line(self, trial: Any, what: str) -> None:
        self.done += 1
        if self.quiet:
            return
        r = trial.last_result or {}
        number = trial.config.get(NUMBER, "?")
        parts = [f"[{self.done}/{self.total}] trial {number} {what}"]
        if self.metric and f"val_{self.metric}" in r:
            parts.append(f"{self.metric} {r[f'val_{self.metric}']:.4f} after {r.get('epoch')} epochs")
        if "params" in r:
            parts.append(f"params {r['params']:,}")
        parts.append(f"{time.time() - self.start:.0f}s elapsed")
        self.out.print(escape(", ".join(parts)), highlight=False)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        r = trial.last_result or {}
        if "lwnas_failed" in r:
            self._line(trial, f"failed ({r['lwnas_failed']})")
        elif r.get("epoch", 0) < self.study.budget.epochs:
            self._line(trial, "stopped early (pruned)")
        else:
            self._line(trial, "complete")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(trial, f"failed ({(trial.last_result or {}).get('lwnas_error', 'worker error')})")

    def finish(self, interrupted: bool, storage: str) -> None:
        print_front(self.ot_study, self.study, self.out)
        name = self.ot_study.study_name
        url = masked(storage)
        if url != storage:  # never print the password; point at the environment variable instead
            self.out.print("(set LWNAS_STORAGE to the storage URL; the commands below then need no --storage)")
            url = '"$LWNAS_STORAGE"'
        if interrupted:
            self.out.print(f"[yellow]stopped before the budget was spent[/yellow]; continue with: "
                           f"lwnas resume {name} --storage {url}")
        self.out.print(f"status: lwnas status {name} --storage {url}\n"
                       f"browse the fronts: lwnas dashboard --storage {url}\n"
                       f"export the front: lwnas export {name} --trials pareto --storage {url} -o exported/\n"
                       f"open in Optuna: optuna.load_study(study_name={name!r}, storage=<the storage URL>)")


def print_front(ot_study: optuna.Study, study: Study | None, out: Console) -> None:
    records = [record_of(t) for t in ot_study.get_trials(deepcopy=False)]
    names = ot_study.metric_names or [f"objective {i}" for i in range(len(ot_study.directions))]
    directions = direction_names(ot_study.directions)
    front = pareto_front(records, directions)
    trials = "1 trial" if len(front) == 1 else f"{len(front)} trials"
    table = Table(title=f"Pareto front of {ot_study.study_name} ({trials})")
    table.add_column("trial", justify="right")
    for n, d in zip(names, directions):
        table.add_column(f"{n} ({'max' if d == 'maximize' else 'min'})", justify="right")
    table.add_column("knobs")
    for r in front:
        shown = ", ".join(f"{k}={v}" for k, v in r.params.items() if not isinstance(v, float))
        table.add_row(str(r.number), *(_fmt(v) for v in r.values), escape(shown))
    out.print(table)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4f}"
