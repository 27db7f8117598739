"""`lwnas confirm`: a small real sweep's front (and a dominated trial) retrained at a longer budget through
the `lwnas` command; Kendall's tau and its bootstrap interval (tuners.export.confirm.kendall)."""

from __future__ import annotations

import json
import math
import re

import pytest
from helpers.procs import lwnas, one_error
from helpers.studies import SHARED
from scipy.stats import kendalltau

from tuners.export.confirm import kendall
from tuners.store.record import record_of


@pytest.fixture(scope="module")
def swept(swept_study):
    """The session's shared sweep (2 epochs per trial; tests/helpers/studies.py): confirm adds no trials to it."""
    return swept_study.workdir, swept_study.url


def test_confirm_trains_the_front_and_dominated_trials_and_records_them(swept, swept_study):
    workdir, url = swept
    front = {
        t["trial"] for t in json.loads(lwnas(workdir, "status", SHARED, "--storage", url, "--json").stdout)["front"]
    }
    result = lwnas(
        workdir, "confirm", SHARED, "--epochs", "3", "--dominated", "1", "--storage", url, "--json", timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    entry = json.loads(result.stdout)
    trials = entry["trials"]
    assert {int(n) for n, t in trials.items() if t["role"] == "front"} == front
    assert sum(t["role"] == "dominated" for t in trials.values()) == 1
    assert (entry["epochs"], entry["sweep_epochs"]) == (3, 2)
    for number, t in trials.items():
        metrics = json.loads((workdir / "confirmed" / f"{SHARED}-trial-{int(number):04d}" / "metrics.json").read_text())
        assert metrics["epochs_run"] == 3 and t["confirmed"]["accuracy"] == metrics["val"]["accuracy"]
        # the same code, seed and data as the sweep's trial: its first epoch gives the value the sweep recorded
        # for its first (the learning-rate schedule spans each run's own epochs, so later epochs differ)
        first = record_of(swept_study.trials[int(number)]).epochs[0]["val_accuracy"]
        assert math.isclose(metrics["history"][0]["val_accuracy"], first, abs_tol=1e-9)
    sweep = [t["sweep"]["accuracy"] for t in trials.values()]
    confirmed = [t["confirmed"]["accuracy"] for t in trials.values()]
    k = entry["kendall"]["accuracy"]
    assert k["n"] == len(trials) >= 2
    expected = kendalltau(sweep, confirmed).statistic
    assert (k["tau"] is None and math.isnan(expected)) or math.isclose(k["tau"], expected)

    # what the command printed is what the study keeps
    stored = json.loads(lwnas(workdir, "status", SHARED, "--storage", url, "--json").stdout)
    assert stored["confirmations"][-1] == entry


def test_the_table_prints_tau_with_its_interval(swept):
    workdir, url = swept
    result = lwnas(
        workdir, "confirm", SHARED, "--epochs", "3", "--dominated", "2", "--storage", url, "-o", "again", timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sweep (2 epochs) against confirmed (3 epochs)" in result.stdout
    assert "Kendall tau of accuracy, sweep against confirmed:" in result.stdout
    # off a terminal, plain lines: each epoch's names the trial, its place in the run and the epochs to go
    epoch_lines = [line for line in result.stderr.splitlines() if " epoch " in line]
    assert epoch_lines and all(re.match(r"\[\d+/\d+\] trial \d+: digits epoch [123]/3: ", x) for x in epoch_lines), (
        result.stderr
    )


def test_bad_arguments_are_one_line(swept):
    workdir, url = swept
    assert "--epochs must be an integer >= 1, got 0" in one_error(
        lwnas(workdir, "confirm", SHARED, "--epochs", "0", "--storage", url)
    )
    assert "no study 'nope'" in one_error(lwnas(workdir, "confirm", "nope", "--epochs", "2", "--storage", url))


def test_kendall_agrees_with_scipy_and_its_interval_holds_tau():
    sweep = [0.1, 0.4, 0.35, 0.8, 0.6, 0.7, 0.2, 0.5]
    confirmed = [0.2, 0.5, 0.3, 0.9, 0.55, 0.8, 0.25, 0.45]
    k = kendall(sweep, confirmed)
    assert math.isclose(k["tau"], kendalltau(sweep, confirmed).statistic) and k["n"] == 8
    low, high = k["ci95"]
    assert -1 <= low <= k["tau"] <= high <= 1 and low < high
    assert math.isclose(kendall(sweep, [2 * v for v in sweep])["tau"], 1.0)
    assert math.isclose(kendall(sweep, [-v for v in sweep])["tau"], -1.0)
    assert kendall([0.1, 0.2], [0.3, 0.1])["ci95"] is None  # two trials: no interval
    assert kendall([0.5], [0.5])["tau"] is None
