"""`lwnas confirm`: a small real sweep's front (and a dominated trial) retrained at a longer budget through
the `lwnas` command; Kendall's tau and its bootstrap interval (tuners.export.confirm.kendall)."""

from __future__ import annotations

import json
import math
import re

import pytest
from scipy.stats import kendalltau
from sweep_procs import TINY_STUDY, lwnas, one_error, proc_env, run_proc

from tuners.export.confirm import kendall

STUDY = TINY_STUDY.replace("d_model: {choice: [16, 32]}", "d_model: {choice: [8, 16, 32]}")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("confirm")
    url = f"sqlite:///{workdir / 'lwnas.db'}"
    (workdir / "small.yaml").write_text(STUDY.format(name="small", trials=5, epochs=1))
    rc, out = run_proc(
        ["lwnas", "sweep", "small.yaml", "--storage", url], workdir, proc_env(workdir), workdir / "sweep.log"
    )
    assert rc == 0, out[-4000:]
    return workdir, url


def test_confirm_trains_the_front_and_dominated_trials_and_records_them(swept):
    workdir, url = swept
    front = {
        t["trial"] for t in json.loads(lwnas(workdir, "status", "small", "--storage", url, "--json").stdout)["front"]
    }
    result = lwnas(
        workdir, "confirm", "small", "--epochs", "2", "--dominated", "1", "--storage", url, "--json", timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    entry = json.loads(result.stdout)
    trials = entry["trials"]
    assert {int(n) for n, t in trials.items() if t["role"] == "front"} == front
    assert sum(t["role"] == "dominated" for t in trials.values()) == 1
    assert (entry["epochs"], entry["sweep_epochs"]) == (2, 1)
    for number, t in trials.items():
        metrics = json.loads((workdir / "confirmed" / f"small-trial-{int(number):04d}" / "metrics.json").read_text())
        assert metrics["epochs_run"] == 2 and t["confirmed"]["accuracy"] == metrics["val"]["accuracy"]
        # the same code, seed and data as the sweep's trial: its first epoch gives the value the sweep recorded
        assert math.isclose(metrics["history"][0]["val_accuracy"], t["sweep"]["accuracy"], abs_tol=1e-9)
    sweep = [t["sweep"]["accuracy"] for t in trials.values()]
    confirmed = [t["confirmed"]["accuracy"] for t in trials.values()]
    k = entry["kendall"]["accuracy"]
    assert k["n"] == len(trials) >= 2
    expected = kendalltau(sweep, confirmed).statistic
    assert (k["tau"] is None and math.isnan(expected)) or math.isclose(k["tau"], expected)

    # what the command printed is what the study keeps
    stored = json.loads(lwnas(workdir, "status", "small", "--storage", url, "--json").stdout)
    assert stored["confirmations"][-1] == entry


def test_the_table_prints_tau_with_its_interval(swept):
    workdir, url = swept
    result = lwnas(
        workdir, "confirm", "small", "--epochs", "2", "--dominated", "2", "--storage", url, "-o", "again", timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sweep (1 epochs) against confirmed (2 epochs)" in result.stdout
    assert "Kendall tau of accuracy, sweep against confirmed:" in result.stdout
    # off a terminal, plain lines: each epoch's names the trial, its place in the run and the epochs to go
    epoch_lines = [line for line in result.stderr.splitlines() if " epoch " in line]
    assert epoch_lines and all(re.match(r"\[\d+/\d+\] trial \d+: digits epoch [12]/2: ", x) for x in epoch_lines), (
        result.stderr
    )


def test_bad_arguments_are_one_line(swept):
    workdir, url = swept
    assert "--epochs must be an integer >= 1, got 0" in one_error(
        lwnas(workdir, "confirm", "small", "--epochs", "0", "--storage", url)
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
