"""The tabular benchmarks shipped beside their studies (studies/tables/*.lwtable.json.gz): each loads, holds every
point of its study's grid with every seed, its true front is the brute-force front of the seed means, and the
figures docs/performance.md states for it (architectures, front size, hypervolume) are the ones it gives."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from searchspace.grid import grid_points
from searchspace.study import load_study
from tuners.fronts.objectives import minimised
from tuners.planning.check import task_family
from tuners.simulate.table import load_table, params_key

ROOT = Path(__file__).resolve().parents[1]
STUDIES = sorted((ROOT / "studies" / "tables").glob("*.yaml"))


def test_there_are_two_tables_of_two_tasks():
    tasks = {load_study(p, task_family=task_family).task for p in STUDIES}
    assert len(STUDIES) == 2 and "digits" in tasks and len(tasks) == 2


@pytest.fixture(scope="module", params=STUDIES, ids=[p.stem for p in STUDIES])
def shipped(request):
    study = load_study(request.param, task_family=task_family)
    return study, load_table(request.param.with_suffix(".lwtable.json.gz"))


def test_a_table_holds_every_point_of_its_study_with_every_seed(shipped):
    study, table = shipped
    assert (table.study, table.task, table.epochs, table.seeds) == (
        study.name,
        study.task,
        study.budget.epochs,
        study.tuner.grid_seeds,
    )
    assert table.objectives == study.objectives and table.space == study.space.to_dict()
    grid = [params_key(p) for p in grid_points(study.space)]
    assert table.built["grid_points"] == len(grid) and table.seeds >= 2
    keys = [e.key for e in table.entries]
    assert keys == [k for k in grid if k in set(keys)]  # grid order, each point once
    complete = table.complete()
    if table.built["complete_points"] == len(grid):  # a finished build: the whole grid
        assert keys == grid and len(grid) >= 500
        assert len(complete) >= 0.99 * len(table.entries)  # a failed seed is recorded, not hidden
    else:  # a build stopped early is shipped as partial, and the docs say so
        row = next(line for line in (ROOT / "docs" / "performance.md").read_text().splitlines() if table.study in line)
        assert "partial" in row
    for entry in complete:
        assert len({r.seed for r in entry.runs}) == len(entry.runs) <= table.seeds
        assert all(len(r.metrics[m]) == table.epochs for r in entry.runs for m in table.task_metrics)
        assert {"synflow", "grad_norm", "snip", "naswot"} == set(entry.scores)


def test_the_true_front_is_the_brute_force_front_of_the_seed_means(shipped):
    _, table = shipped
    points = minimised(table.values(), table.objectives)  # (n, m), lower is better
    beaten = np.array([np.any(np.all(points <= p, axis=1) & np.any(points < p, axis=1)) for p in points], dtype=bool)
    complete = table.complete()
    assert {e.key for e in table.true_front()} == {e.key for e, b in zip(complete, beaten) if not b}


def test_docs_state_the_tables_figures(shipped):
    """docs/performance.md's row for the table: architectures, front size and hypervolume as the table gives them."""
    study, table = shipped
    text = (ROOT / "docs" / "performance.md").read_text()
    row = next((line for line in text.splitlines() if line.startswith(f"| `{study.name}` |")), None)
    assert row is not None, f"docs/performance.md has no row for {study.name}"
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[1].replace(",", "")) == len(table.entries)
    assert int(cells[3]) == len(table.true_front())
    stated = float(re.sub(r"[^0-9.e+-]", "", cells[4]))
    assert stated == pytest.approx(table.true_hypervolume(), rel=1e-3)
