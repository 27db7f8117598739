"""The ``lwnas`` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from .cost_report import CostFormat, cost_rows, render_cost

app = typer.Typer(
    name="lwnas",
    help="Search the design space of lightweight Transformers (LW-Transformer, ACORT, T-EMDE, Couplformer) "
         "for the accuracy-vs-cost Pareto front.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)


@app.callback()
def main() -> None:
    """lwnas: neural-architecture search and sweeps for lightweight Transformers."""


@app.command()
def cost(
    paths: Annotated[list[Path], typer.Argument(
        help="Configuration files (flat YAML mappings of knobs) or directories of them, e.g. studies/papers.")],
    fmt: Annotated[CostFormat, typer.Option(
        "--format", "-f", help="table: human-readable; json: one object per file; markdown: paper-vs-ours table.")
    ] = CostFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Shorthand for --format json.")] = False,
    memory: Annotated[bool, typer.Option(
        "--memory/--no-memory",
        help="Also measure peak memory of one forward + backward at batch 1 (slower: runs the model).")] = True,
    device: Annotated[str, typer.Option(help="Device for the memory measurement: cpu or cuda.")] = "cpu",
    check: Annotated[bool, typer.Option(
        "--check", help="Exit with status 1 if a published figure in a file's `reference` is not reproduced.")
    ] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the report here instead of stdout.")
    ] = None,
) -> None:
    """Static cost of configurations, before any training.

    Parameters (total and by section; shared weights count once), MAdds of every matrix multiply at the
    configured input sizes, and peak memory of one forward + backward at batch 1. Files with a `reference`
    section (the paper-table rows under studies/papers) are compared with the published figures.
    """
    from searchspace import ConfigError

    fmt = CostFormat.json if as_json else fmt
    try:
        rows = cost_rows(paths, memory=memory, device=device, progress=err)
    except ConfigError as exc:
        for knob, message in exc.problems:
            err.print(f"[red]error[/red] {knob}: {message}", highlight=False)
        raise typer.Exit(2) from None
    text = render_cost(rows, fmt)
    if output:
        output.write_text(text)
        err.print(f"wrote {output}")
    elif fmt is CostFormat.table:
        Console().print(text, highlight=False, soft_wrap=True)
    else:
        sys.stdout.write(text)
    failures = [(row.path, c) for row in rows for c in row.comparisons if c.asserted and not c.matches]
    for path, c in failures:
        err.print(f"[red]mismatch[/red] {path}: {c.metric} {c.scope} paper {c.paper.text}, ours {c.ours:,}")
    if check and failures:
        raise typer.Exit(1)


if __name__ == "__main__":  # pragma: no cover
    app()
