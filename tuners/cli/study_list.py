"""``lwnas status`` without a name: the studies of a storage, one row each (read-only)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from searchspace.study import MAXIMIZE


def print_studies(storage: str, as_json: bool) -> None:
    """``lwnas status`` without a name: the studies of ``storage`` (read-only), one line each."""
    from tuners.driver.lease import stale_outcomes
    from tuners.fronts.study_list import list_studies
    from tuners.store.connection import open_storage
    from tuners.store.urls import masked

    backend = open_storage(storage, read_only=True)
    try:
        studies = list_studies(backend)
    finally:
        backend.engine.dispose()
    # trials left running by a driver that has stopped are `stale`, as `lwnas status NAME` counts them
    studies = [replace(s, outcomes=stale_outcomes(s.outcomes, storage, s.name)[0]) for s in studies]
    if as_json:
        sys.stdout.write(json.dumps([s.as_json() for s in studies], indent=2) + "\n")
        return
    out = Console(soft_wrap=True)
    if not studies:
        out.print(f"no studies in {escape(masked(storage))}", highlight=False)
        return
    table = Table(title=escape(f"{len(studies)} {'study' if len(studies) == 1 else 'studies'} in {masked(storage)}"))
    for column in ("study", "trials", "by outcome", "objectives"):
        table.add_column(column, justify="right" if column == "trials" else "left")
    for s in studies:
        table.add_row(
            escape(s.name),
            str(s.trials),
            ", ".join(f"{k} {v}" for k, v in s.outcomes.items()) or "-",
            ", ".join(f"{escape(o.metric)} ({'max' if o.direction == MAXIMIZE else 'min'})" for o in s.objectives),
        )
    out.print(table)
