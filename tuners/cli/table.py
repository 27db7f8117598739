"""``lwnas table export | show``: turn a finished grid sweep into a tabular benchmark file, and print a table's
true front and hypervolume."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from tuners.cli.sweep import Storage
from tuners.store.keys import DEFAULT_STORAGE

table_app = typer.Typer(
    help="Tabular benchmarks of the knob space: export a grid sweep as a table, show a table's true front.",
    no_args_is_help=True,
)
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[red]error[/red] {escape(message)}", highlight=False)
    raise typer.Exit(code)


@table_app.command("export")
def export_table(
    name: Annotated[str, typer.Argument(help="Name of a finished grid sweep (`tuner: {sampler: grid}`) in storage.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The table file to write (.lwtable.json.gz).")],
    storage: Storage = DEFAULT_STORAGE,
    partial: Annotated[
        bool, typer.Option("--partial", help="Export a sweep that has not trained every point with every seed.")
    ] = False,
    proxies: Annotated[
        bool, typer.Option("--proxies/--no-proxies", help="Compute the training-free scores of every point.")
    ] = True,
) -> None:
    """Write the table of grid sweep NAME: every point's params, exact costs, training-free scores and per-seed
    curves (format lwnas-table/1, docs/performance.md#tabular-benchmarks-benchbuild_tablepy)."""
    import optuna
    import torch

    from tuners.export.configs import ExportError, recorded_study
    from tuners.simulate.table import save_table
    from tuners.simulate.table_export import TableExportError, table_from_records
    from tuners.store.connection import StorageError, open_storage
    from tuners.store.trial_store import TrialStore

    torch.set_num_threads(1)  # tiny models: one thread is fastest, and the scores do not depend on it
    try:
        backend = open_storage(storage, read_only=True)
        ot_study = optuna.load_study(study_name=name, storage=backend)
        study = recorded_study(ot_study)
        records = TrialStore.of(backend, name).records()
        table = table_from_records(study, records, proxies=proxies, partial=partial)
    except KeyError:
        _fail(f"no study {name!r} in {storage}")
    except (ExportError, TableExportError, StorageError) as exc:
        _fail(str(exc))
    path = save_table(table, output)
    sys.stdout.write(f"{path}\n")
    err.print(
        f"wrote {path}: {len(table.entries)} architectures, {sum(len(e.runs) for e in table.entries)} runs, "
        f"{path.stat().st_size:,} bytes",
        highlight=False,
        markup=False,
    )


@table_app.command("show")
def show_table(
    path: Annotated[Path, typer.Argument(help="A table file (lwnas-table/1).")],
) -> None:
    """Print a table's size, true front (seed means) and its hypervolume with the reference point, as JSON."""
    from tuners.simulate.table import TableError, load_table

    try:
        table = load_table(path)
    except TableError as exc:
        _fail(str(exc))
    front = table.true_front()
    names = [o.metric for o in table.objectives]
    out = {
        "task": table.task,
        "study": table.study,
        "architectures": len(table.entries),
        "complete": len(table.complete()),
        "seeds": table.seeds,
        "epochs": table.epochs,
        "objectives": [[o.metric, o.direction] for o in table.objectives],
        "reference_point": dict(zip(names, table.reference_point())),
        "true_hypervolume": table.true_hypervolume(),
        "true_front": [
            {"knobs": e.params, **dict(zip(names, row))} for e, row in zip(front, table.values(front).tolist())
        ],
    }
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
