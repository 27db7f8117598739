"""The table format (tuners/simulate/table.py): a file round-trips, and the true front and hypervolume it
computes agree with a brute-force dominance check over the seed means."""

from __future__ import annotations

import gzip
import itertools
import json

import numpy as np
import pytest

from searchspace.study import Objective
from tuners.simulate.table import FORMAT, Entry, Run, Table, TableError, load_table, save_table

OBJECTIVES = (Objective("accuracy", "maximize"), Objective("params", "minimize"))


def small_table(seed: int = 0, n: int = 40) -> Table:
    """``n`` architectures over a two-knob space, two seeds each, accuracy growing noisily with params."""
    rng = np.random.default_rng(seed)
    entries = []
    for d_model, layers in itertools.islice(itertools.product((8, 16, 24, 32, 40), (1, 2, 3, 4, 5, 6, 7, 8)), n):
        params = d_model * d_model * layers
        runs = []
        for s in range(2):
            final = min(0.99, 0.3 + 0.1 * np.log1p(params / 100) + 0.05 * rng.standard_normal())
            curve = [float(final * (e + 1) / 3) for e in range(3)]
            runs.append(Run(seed=s, metrics={"accuracy": curve}, wall_s=[0.1 * layers] * 3))
        entries.append(
            Entry(
                params={"d_model": d_model, "layers": layers},
                costs={"params": params, "madds": 10 * params, "memory": 4 * params},
                scores={"synflow": float(rng.random())},
                runs=tuple(runs),
            )
        )
    return Table(
        task="digits",
        study="toy",
        family="encoder",
        space={"d_model": {"choice": [8, 16, 24, 32, 40]}, "layers": {"int": [1, 8]}},
        objectives=OBJECTIVES,
        epochs=3,
        seeds=2,
        entries=tuple(entries),
    )


def brute_front(table: Table) -> set[str]:
    """Keys of entries whose (mean final accuracy, params) no other entry dominates, by pairwise comparison."""
    points = {e.key: (np.mean([r.metrics["accuracy"][-1] for r in e.runs]), e.costs["params"]) for e in table.entries}
    front = set()
    for key, (acc, params) in points.items():
        beaten = any(
            a >= acc and p <= params and (a > acc or p < params) for other, (a, p) in points.items() if other != key
        )
        if not beaten:
            front.add(key)
    return front


def test_a_saved_table_loads_back_equal(tmp_path):
    table = small_table()
    path = save_table(table, tmp_path / "t.lwtable.json.gz")
    assert load_table(path) == table
    assert json.loads(gzip.decompress(path.read_bytes()))["format"] == FORMAT
    assert save_table(table, tmp_path / "again.gz").read_bytes() == path.read_bytes()  # same table, same bytes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_true_front_is_the_brute_force_front_of_seed_means(tmp_path, seed):
    table = load_table(save_table(small_table(seed), tmp_path / "t.gz"))
    front = table.true_front()
    assert {e.key for e in front} == brute_front(table)
    assert [e.costs["params"] for e in front] == sorted(e.costs["params"] for e in front)


def test_true_hypervolume_is_the_area_of_the_staircase():
    """Two objectives: the volume is a sum of rectangles from the reference point (accuracy 0, 1.1 x max params)."""
    table = small_table()
    ref_acc, ref_params = table.reference_point()
    assert ref_acc == 0.0 and ref_params == pytest.approx(1.1 * max(e.costs["params"] for e in table.entries))
    front = sorted(table.true_front(), key=lambda e: e.costs["params"])
    area, best = 0.0, 0.0
    for e, nxt in zip(front, [*front[1:], None]):
        best = max(best, e.mean_final("accuracy"))
        right = nxt.costs["params"] if nxt else ref_params
        area += best * (right - e.costs["params"])
    assert table.true_hypervolume() == pytest.approx(area)


def test_entries_are_found_by_their_params_in_any_order():
    table = small_table()
    space = table.search_space()
    assert all(table.entry(p.params) for p in space.sample_points(20, seed=0))  # every point a sampler finds
    assert table.entry({"layers": 3, "d_model": 8}).params == {"d_model": 8, "layers": 3}
    with pytest.raises(KeyError):
        table.entry({"d_model": 8, "layers": True})  # true is not 1


def test_a_file_that_breaks_a_rule_names_the_field(tmp_path):
    data = json.loads(gzip.decompress(save_table(small_table(), tmp_path / "t.gz").read_bytes()))
    data["entries"][3]["runs"][1]["metrics"]["accuracy"].pop()
    (tmp_path / "bad.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(TableError, match=r"entries\[3\]\.runs\[1\]\.metrics\.accuracy"):
        load_table(tmp_path / "bad.gz")
    data["format"] = "lwnas-table/0"
    (tmp_path / "old.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(TableError, match="format"):
        load_table(tmp_path / "old.gz")


def test_kendall_tau_ranks_a_score_that_orders_the_accuracy_as_one():
    table = small_table()
    taus = table.kendall_taus()
    assert set(taus) == {"synflow", "params", "madds", "memory"}
    assert taus["params"]["tau"] == pytest.approx(taus["madds"]["tau"])  # madds = 10 x params: the same order
    assert taus["params"]["tau"] > 0.5 > abs(taus["synflow"]["tau"])  # accuracy grows with params; synflow is noise
    assert taus["params"]["n"] == len(table.entries)
