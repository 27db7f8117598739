"""A real grid sweep becomes a table: `lwnas sweep` of a 3-point grid with 2 seeds, stopped after part of it,
is refused by `lwnas table export` until `lwnas resume` trains the rest; the table then holds every point with
both seeds, exact costs, training-free scores and curves as storage recorded them, and its true front is the
brute-force front of the seed means."""

from __future__ import annotations

import textwrap

import optuna
import pytest
from helpers.procs import lwnas

from trainers.cost import cost
from tuners.simulate.table import load_table
from tuners.store.record import record_of

STUDY = """
name: tiny-grid
task: digits
objectives: [accuracy, params]
budget: {epochs: 2}
tuner: {sampler: grid, grid_seeds: 2, max_concurrent: 2, seed: 7}
training: {batch_size: 128, threads: 1}
space:
  d_model: 16
  heads: 4
  layers: 1
  pooling: {choice: [mean, sketch]}
  sketch_k: {choice: [4, 8]}
"""


@pytest.mark.slow
def test_a_grid_sweep_exports_as_a_table_once_every_point_has_its_seeds(tmp_path):
    (tmp_path / "tiny.yaml").write_text(textwrap.dedent(STUDY))
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    first = lwnas(tmp_path, "sweep", "tiny.yaml", "--trials", "3", "--storage", url)
    assert first.returncode == 0, first.stderr
    refused = lwnas(tmp_path, "table", "export", "tiny-grid", "--storage", url, "-o", "t.lwtable.json.gz")
    assert refused.returncode == 1 and "lwnas resume tiny-grid" in refused.stderr, refused.stderr
    rest = lwnas(tmp_path, "resume", "tiny-grid", "--trials", "100", "--storage", url)  # capped at the grid: 6
    assert rest.returncode == 0, rest.stderr
    exported = lwnas(tmp_path, "table", "export", "tiny-grid", "--storage", url, "-o", "t.lwtable.json.gz")
    assert exported.returncode == 0, exported.stderr

    trials = optuna.load_study(study_name="tiny-grid", storage=url).get_trials()
    assert len(trials) == 6  # 3 points x 2 seeds, none trained twice
    table = load_table(tmp_path / "t.lwtable.json.gz")
    assert (table.task, table.seeds, table.epochs, len(table.entries)) == ("digits", 2, 2, 3)
    by_number = {t.number: record_of(t) for t in trials}
    for entry in table.entries:
        mine = [r for r in by_number.values() if r.params == entry.params]
        assert sorted(run.seed for run in entry.runs) == sorted(r.seed for r in mine) and len(mine) == 2
        assert len({run.seed for run in entry.runs}) == 2
        for run in entry.runs:
            record = next(r for r in mine if r.seed == run.seed)
            assert run.metrics["accuracy"] == [e["val_accuracy"] for e in record.epochs]
        report = cost(mine[0].config, memory=True)
        assert entry.costs == {"params": report.params, "madds": report.madds, "memory": report.memory_bytes}
        assert set(entry.scores) == {"synflow", "grad_norm", "snip", "naswot"}

    means = {e.key: (sum(r.final("accuracy") for r in e.runs) / 2, e.costs["params"]) for e in table.entries}
    brute = {
        k
        for k, (acc, params) in means.items()
        if not any(a >= acc and p <= params and (a > acc or p < params) for o, (a, p) in means.items() if o != k)
    }
    assert {e.key for e in table.true_front()} == brute
    assert table.true_hypervolume() > 0
