"""The simulator (tuners/simulate/simulator.py) and the search strategies (tuners/driver/strategies.py) on a
small REAL table (tests/helpers/real_table.py: a tiny digits space trained with two seeds), and, marked slow,
a real sweep of that space against its simulated replays."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from helpers.procs import lwnas
from helpers.real_table import SHIPPED, grid, tiny_study

from searchspace.study import StudyError, study_from_dict
from tuners.driver.mo_asha import PASHA
from tuners.driver.strategies import STRATEGIES, Candidate, Screen
from tuners.planning.check import task_family
from tuners.simulate.simulator import SimulationError, replay, replays, summary
from tuners.simulate.table import load_table


@pytest.fixture(scope="module")
def table():
    return load_table(SHIPPED)


def test_the_shipped_table_is_the_tiny_space_trained_in_full(table):
    assert sorted(e.key for e in table.entries) == sorted(table.entry(p).key for p in grid())
    assert all(len(e.runs) == 2 and all(r.epochs == table.epochs for r in e.runs) for e in table.entries)


def test_full_trains_every_trial_its_whole_budget_at_the_recorded_seconds(table):
    run = replay(tiny_study("full", trials=6), table, seed=3)
    assert (run.complete, run.pruned, run.screened) == (6, 0, 0)
    last = run.steps[-1]
    assert last.epochs == 6 * table.epochs
    # every second spent is a recorded epoch's: at most the slowest six runs, at least the fastest six
    totals = sorted(sum(r.wall_s) for e in table.entries for r in e.runs)
    assert sum(totals[:6]) <= last.compute_s <= sum(totals[-6:])
    assert last.wall_s < last.compute_s  # two workers overlap


def test_a_replay_is_reproducible_and_the_seed_changes_it(table):
    study = tiny_study("full", trials=6, sampler="random")
    assert replay(study, table, 1).steps == replay(study, table, 1).steps
    assert len({tuple(replay(study, table, s).found) for s in range(6)}) > 1


def test_hypervolume_grows_to_at_most_the_true_front(table):
    true_hv = table.true_hypervolume()
    for strategy in STRATEGIES:
        if strategy == "proxy-screen":
            continue  # the tiny table has no training-free scores (it is ranked without them, as full)
        run = replay(tiny_study(strategy, trials=12), table, 0)
        volumes = [s.hypervolume for s in run.steps]
        assert volumes == sorted(volumes) and volumes[-1] <= true_hv * (1 + 1e-9), strategy


def test_fresh_trains_each_architecture_once_and_finds_the_true_front(table):
    run = replay(tiny_study("fresh", trials=50), table, 0)
    assert run.complete == len(run.found) == len(table.entries)
    assert run.ended == "every architecture of the table is training or trained"
    assert math.isclose(run.steps[-1].hypervolume, table.true_hypervolume())


def test_sh1_stops_trials_at_epoch_one_as_the_drivers_scheduler_decides(table):
    run = replay(tiny_study("sh-1", trials=16), table, 0)
    assert run.pruned > 0
    assert run.steps[-1].epochs == run.complete * table.epochs + run.pruned * 1  # pruned after one epoch each


def test_mo_asha_under_the_tuner_setting_is_the_strategy(table):
    study = tiny_study("full", trials=16)
    via_tuner = replace(study, tuner=replace(study.tuner, scheduler="mo-asha"))
    a, b = replay(via_tuner, table, 2), replay(tiny_study("mo-asha", trials=16), table, 2)
    assert a.steps == b.steps and a.pruned > 0


def test_summary_reports_median_and_interquartile_range(table):
    runs = replays(tiny_study("fresh", trials=50), table, 5)
    s = summary(runs, table)
    assert s["seeds"] == 5 and s["reached_99"] == 5
    spread = s["compute_to_99"]
    assert spread["q1"] <= spread["median"] <= spread["q3"]
    assert s["hypervolume_fraction"][-1]["median"] == pytest.approx(1.0)


def test_a_point_the_table_lacks_is_an_error_naming_it(table):
    study = tiny_study()
    spec = {**study.source, "space": {**study.source["space"], "d_model": {"choice": [8, 32]}}}
    wider = study_from_dict(spec, task_family=task_family)
    with pytest.raises(SimulationError, match="does not hold"):
        for seed in range(10):
            replay(wider, table, seed)


def test_a_table_of_part_of_the_space_treats_the_rest_as_out_of_bounds(table):
    study = tiny_study(trials=6, sampler="random")
    spec = {**study.source, "space": {**study.source["space"], "d_model": {"choice": [8, 16, 32]}}}
    runs = [replay(study_from_dict(spec, task_family=task_family), table, s, lacking="outside") for s in range(4)]
    # the points with d_model 32 cost nothing and count for nothing
    assert sum(r.infeasible for r in runs) > 0 and all(r.complete == 6 for r in runs)


def test_a_study_the_table_cannot_stand_for_names_the_field(table):
    study = tiny_study()
    with pytest.raises(SimulationError, match=r"budget.epochs: must equal the table's epochs \(3\), got 5"):
        replay(replace(study, budget=replace(study.budget, epochs=5)), table)


# ---- the study line ---------------------------------------------------------------------------------------------
def _spec(**search):
    return {"task": "digits", "objectives": ["accuracy", "params"], "space": {"d_model": 16}, "search": search}


def test_search_strategy_is_one_line_of_a_study():
    assert study_from_dict(_spec(strategy="surrogate"), task_family=task_family).search.strategy == "surrogate"
    plain = {k: v for k, v in _spec().items() if k != "search"}
    assert study_from_dict(plain, task_family=task_family).search.strategy == "full"


@pytest.mark.parametrize(
    ("search", "tuner", "message"),
    [
        ({"strategy": "surogate"}, {}, "search.strategy: must be one of full, mo-asha"),
        ({"strategy": "surrogate", "keep": 3}, {}, "search.keep: unknown key"),
        ({"strategy": "full", "proxy": "synflow"}, {}, "search.proxy: applies to strategy proxy-screen only"),
        ({"strategy": "sh-1"}, {"scheduler": "mo-asha"}, "search.strategy: sh-1 chooses its own scheduler"),
    ],
)
def test_a_bad_search_line_names_the_field_and_the_rule(search, tuner, message):
    with pytest.raises(StudyError) as caught:
        study_from_dict({**_spec(**search), "tuner": tuner}, task_family=task_family)
    assert any(message in f"{where}: {text}" for where, text in caught.value.problems), caught.value.problems


# ---- the screens and PASHA, on the table's points ----------------------------------------------------------------
def _points(table):
    return [Candidate(e.key, e.params, e.costs, e.scores) for e in table.entries]


def test_fresh_lets_a_pruned_architecture_return_but_never_a_trained_one(table):
    screen = Screen(("fresh",), table.objectives)
    a, b = _points(table)[:2]
    screen.start(a)
    screen.start(b)
    assert screen.skip(a) is not None
    screen.finish(a, None)  # pruned
    screen.finish(b, [0.3, b.costs["params"]])
    assert screen.skip(a) is None and screen.skip(b) is not None
    assert screen.known_values(b) == [0.3, b.costs["params"]]


def test_the_surrogate_skips_what_it_expects_a_cheaper_trained_point_to_beat(table):
    """Fitted on every architecture but the largest, it is asked about the largest: a cheaper point measured
    better than the guess (plus its spread) makes it skip; with nothing cheaper trained it never skips."""
    points = sorted(_points(table), key=lambda p: p.costs["params"])
    finals = {e.key: e.mean_final("accuracy") for e in table.entries}
    screen = Screen(("surrogate",), table.objectives, warmup=3)
    for p in points[:-1]:
        screen.finish(p, [finals[p.key], p.costs["params"]])
    largest = points[-1]
    assert screen._model is None
    skip = screen.skip(largest)
    model = screen._model
    assert model is not None
    mean, spread = model.predict(largest)
    best_cheaper = max(finals[p.key] for p in points[:-1])
    assert (skip is not None) == (mean + spread <= best_cheaper)
    empty = Screen(("surrogate",), table.objectives, warmup=3)
    for p in points[-4:-1]:  # fitted on three large points: none of them costs no more than the smallest
        empty.finish(p, [finals[p.key], p.costs["params"]])
    assert empty.skip(points[0]) is None


class _Trial:
    def __init__(self, n):
        self.trial_id, self.config = str(n), {}


def test_pasha_moves_its_rung_up_when_the_rung_ranks_unlike_the_end(table):
    """Trials whose epoch-1 order is the reverse of their final order make the rung move from epoch 1 to 2;
    the replayed curves of the real table keep it where the two orders agree."""
    objectives = table.objectives
    scheduler = PASHA(objectives, max_epochs=4, reduction_factor=2)
    assert scheduler.rungs == [1]
    for n in range(6):
        for epoch in range(1, 5):
            early = 0.1 + 0.01 * (5 - n)  # the best early is the worst at the end
            accuracy = early if epoch == 1 else 0.2 + 0.05 * n
            scheduler.on_trial_result(None, _Trial(n), {"epoch": epoch, "val_accuracy": accuracy, "params": 1000.0})
    assert scheduler.rungs == [2] and scheduler.moves[0]["from"] == 1
    run = replay(tiny_study("pasha", trials=16), table, 0)
    assert run.complete > 0


# ---- the command ------------------------------------------------------------------------------------------------
def test_lwnas_simulate_prints_json_per_strategy_and_draws_the_plot(tmp_path, table):
    study = tmp_path / "tiny.yaml"
    study.write_text(json.dumps(tiny_study().source))  # JSON is YAML
    result = lwnas(
        tmp_path,
        "simulate",
        study,
        "--table",
        SHIPPED,
        "--seeds",
        "4",
        "--strategy",
        "full,fresh",
        "--json",
        "--plot",
        tmp_path / "hv.png",
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["strategy"] for r in lines] == ["full", "fresh"]
    assert all(r["seeds"] == 4 and r["true_hypervolume"] == pytest.approx(table.true_hypervolume()) for r in lines)
    assert (tmp_path / "hv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = lwnas(tmp_path, "simulate", study, "--table", SHIPPED, "--strategy", "cheapest")
    assert bad.returncode == 2 and "--strategy must be one of" in bad.stderr


# ---- simulator against real sweeps --------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_real_sweep_lands_within_the_spread_of_its_replays(tmp_path, table):
    """The tiny space swept for real by lwnas's driver (strategy sh-1: the rung at epoch 1 decides on real,
    noisy curves) and replayed 20 times: the real sweep's epochs trained and the hypervolume of what it trained
    in full (at the table's values) lie within the replays' range."""
    from tuners.driver.sweep import SweepOptions, run_sweep
    from tuners.store.record import record_of

    study = tiny_study("sh-1", trials=8)
    ot = run_sweep(study, SweepOptions(storage=f"sqlite:///{tmp_path / 'real.db'}", quiet=True))
    records = [record_of(t) for t in ot.trials]
    # the strategy ran in the driver: 8 trials trained (complete or pruned at epoch 1), skipped points recorded
    trained = [r for r in records if r.outcome in ("complete", "pruned")]
    assert len(trained) == 8 and {len(r.epochs) for r in trained} <= {1, 3}
    assert all(r.outcome in ("complete", "pruned", "screened") for r in records)
    assert all("screened_by" in t.user_attrs for t in ot.trials if t.user_attrs.get("outcome") == "screened")
    real_epochs = sum(len(r.epochs) for r in records)
    complete = {table.entry(r.params).key: table.entry(r.params) for r in records if r.outcome == "complete"}
    real_hv = table.hypervolume_of(list(complete.values()))
    runs = replays(study, table, 20)
    epochs = [r.steps[-1].epochs for r in runs]
    volumes = [r.steps[-1].hypervolume for r in runs]
    assert min(epochs) <= real_epochs <= max(epochs), (real_epochs, epochs)
    assert min(volumes) <= real_hv + 1e-9 and real_hv <= max(volumes) + 1e-9, (real_hv, np.round(volumes, 1))
