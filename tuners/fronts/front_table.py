"""The Pareto front of a sweep as a table on the terminal: what a sweep prints at its end and ``lwnas status``
prints (here, below the driver, so that a read command imports neither Ray nor the driver)."""

from __future__ import annotations

import optuna
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from searchspace.study import MAXIMIZE, Study
from tuners.fronts.objectives import study_objectives
from tuners.fronts.seeds import groups_of, pareto_front_groups, seed_groups
from tuners.store.trial_store import ReadTrial


def print_front(
    ot_study: optuna.Study, study: Study | None, out: Console, trials: list[ReadTrial] | None = None
) -> int:
    """The front (of seed means) as a table, of ``trials`` when the caller has read them already (``lwnas status``,
    through ``tuners.fronts.status.read_trials``); returns how many points it holds."""
    groups = (
        seed_groups(ot_study.get_trials(deepcopy=False))
        if trials is None
        else groups_of([t.record for t in trials], {t.record.number: t.parent for t in trials})
    )
    objectives = study_objectives(ot_study)
    front = pareto_front_groups(groups, objectives)  # on seed means
    count = "1 trial" if len(front) == 1 else f"{len(front)} trials"
    table = Table(title=f"Pareto front of {ot_study.study_name} ({count})")
    table.add_column("trial", justify="right")
    for o in objectives:
        table.add_column(f"{o.metric} ({'max' if o.direction == MAXIMIZE else 'min'})", justify="right")
    table.add_column("seeds", justify="right")
    table.add_column("knobs")
    for g in front:
        r = g.record
        shown = ", ".join(f"{k}={v}" for k, v in r.params.items() if not isinstance(v, float))
        cells = [_fmt(v) + (f" ± {_fmt(s)}" if s else "") for v, s in zip(r.scores, g.std)]
        table.add_row(str(r.number), *cells, str(g.seeds), escape(shown))
    out.print(table)
    return len(front)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4f}"
