"""``lwnas confirm NAME --epochs E``: retrain a sweep's front at a longer budget and report how well the
sweep's ranking held (Kendall's tau with a bootstrap interval)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tuners.cli.plugins import AllowPlugin, allow
from tuners.cli.sweep import Storage, _fail, _load_ot_study
from tuners.store.keys import DEFAULT_STORAGE


def confirm(
    name: Annotated[str, typer.Argument(help="Name of the study in storage.")],
    epochs: Annotated[int, typer.Option(help="Epochs of the confirming training (the longer budget).")],
    dominated: Annotated[
        int, typer.Option(help="Also train this many dominated trials (drawn with --seed) for contrast.")
    ] = 0,
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the exported files and the runs.")] = Path(
        "confirmed"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the draw of dominated trials.")] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the recorded confirmation as one JSON object.")
    ] = False,
    storage: Storage = DEFAULT_STORAGE,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Train the front (and --dominated K other trials) for --epochs with `lwnas train`'s code, record the
    results on the study, and print Kendall's tau between sweep and confirmed values with its 95 % interval."""
    allow(allow_plugin)
    from tuners.export.confirm import ConfirmError, agreement, confirm_trials, record_confirmation, sweep_epochs

    err = Console(stderr=True, soft_wrap=True)
    if epochs < 1:
        _fail(f"--epochs must be an integer >= 1, got {epochs}", code=2)
    if dominated < 0:
        _fail(f"--dominated must be an integer >= 0, got {dominated}", code=2)
    ot_study = _load_ot_study(name, storage, read_only=False)  # the confirmation is recorded on the study
    try:
        results = confirm_trials(
            ot_study, epochs, dominated, output, seed, progress=lambda line: err.print(escape(line), highlight=False)
        )
    except ConfirmError as exc:
        _fail(str(exc))
    entry = record_confirmation(ot_study, epochs, results, agreement(results))
    if as_json:
        sys.stdout.write(json.dumps(entry, indent=2) + "\n")
        return
    out = Console(soft_wrap=True)
    table = Table(title=f"{name}: sweep ({sweep_epochs(ot_study)} epochs) against confirmed ({epochs} epochs)")
    for column in ("trial", "role", *(f"{m} {when}" for m in results[0].sweep for when in ("sweep", "confirmed"))):
        table.add_column(column, justify="left" if column == "role" else "right")
    for c in results:
        cells = [f"{c.sweep[m]:.4f}" for m in c.sweep]
        confirmed = [f"{c.confirmed[m]:.4f}" if c.confirmed else f"failed: {c.failure}" for m in c.sweep]
        table.add_row(str(c.record.number), c.role, *(v for pair in zip(cells, confirmed) for v in pair))
    out.print(table)
    for metric, k in entry["kendall"].items():
        tau = "undefined" if k["tau"] is None else f"{k['tau']:.3f}"
        ci = (
            f", 95% bootstrap interval [{k['ci95'][0]:.3f}, {k['ci95'][1]:.3f}]"
            if k["ci95"]
            else " (too few trials for an interval)"
        )
        out.print(f"Kendall tau of {metric}, sweep against confirmed: {tau}{ci} over {k['n']} trials", highlight=False)
