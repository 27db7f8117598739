"""``lwnas simulate STUDY --table FILE``: replay a study's sweep against a table for many seeds in seconds, and
print its hypervolume against training compute (median and interquartile range over the seeds)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from tuners.cli.sweep import _fail


def simulate(
    study_file: Annotated[Path, typer.Argument(help="Study file whose sampler, strategy and budget are replayed.")],
    table: Annotated[Path, typer.Option("--table", help="Table file (lwnas-table/1) of the study's space and task.")],
    seeds: Annotated[int, typer.Option(help="Replays, with seeds 0 .. N-1.")] = 20,
    strategy: Annotated[
        str | None, typer.Option(help="Strategy (or comma-separated strategies) instead of the study's `search`.")
    ] = None,
    trials: Annotated[int | None, typer.Option(help="Trial budget instead of the study's budget.trials.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per strategy.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Draw hypervolume against compute to this PNG file.")] = None,
) -> None:
    """Replay STUDY's sampler x strategy x budget against --table: trials take their recorded seconds and
    report their recorded curves; the sampler, the screens and the scheduler run for real."""
    from searchspace.study import STRATEGIES, StudyError
    from tuners.planning.check import open_study
    from tuners.simulate.simulator import SimulationError, replays, summary
    from tuners.simulate.table import TableError, load_table

    if seeds < 1:
        _fail(f"--seeds must be an integer >= 1, got {seeds}", code=2)
    if trials is not None and trials < 1:
        _fail(f"--trials must be an integer >= 1, got {trials}", code=2)
    names = strategy.split(",") if strategy else None
    for name in names or ():
        if name not in STRATEGIES:
            _fail(f"--strategy must be one of {', '.join(STRATEGIES)}, got {name!r}", code=2)
    try:
        study = open_study(study_file)
        loaded = load_table(table)
    except StudyError as exc:
        _fail("; ".join(f"{w}: {m}" for w, m in exc.problems), code=2)
    except TableError as exc:
        _fail(f"--table: {exc}", code=2)
    results = {}
    for name in names or [study.search.strategy]:
        arm = replace(study, search=replace(study.search, strategy=name))
        started = time.perf_counter()
        try:
            runs = replays(arm, loaded, seeds, trials=trials)
        except SimulationError as exc:
            _fail(str(exc), code=2)
        results[name] = {
            "study": study.name,
            "table": str(table),
            "strategy": name,
            **summary(runs, loaded),
            "seconds": round(time.perf_counter() - started, 2),
        }
    if plot is not None:
        from tuners.simulate.plot import plot as draw

        draw(results, plot, title=f"{study.name} on {loaded.study}: hypervolume / true front's")
    if as_json:
        for result in results.values():
            sys.stdout.write(json.dumps(result) + "\n")
        return
    _print(results)


def _print(results: dict) -> None:
    out = Console(soft_wrap=True)
    grid = RichTable(title=escape("hypervolume / true front's, over seeds (median [q1, q3])"))
    for column in ("strategy", "final", "compute to 99 % (s)", "reached 99 %", "trials", "screened", "replays took"):
        grid.add_column(column)
    for name, r in results.items():
        to99 = r["compute_to_99"]
        grid.add_row(
            escape(name),
            _fmt(r["final_fraction"], 3),
            _fmt(to99, 1) if to99 else "not in every seed",
            f"{r['reached_99']} of {r['seeds']}",
            _fmt(r["trials"], 0),
            _fmt(r["screened"], 0),
            f"{r['seconds']:.1f} s",
        )
    out.print(grid)


def _fmt(spread: dict, digits: int) -> str:
    return f"{spread['median']:.{digits}f} [{spread['q1']:.{digits}f}, {spread['q3']:.{digits}f}]"
