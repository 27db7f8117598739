"""Growing a sweep (`lwnas resume NAME --trials N`) and ending one whose front stopped moving
(`budget: {stop_when: ...}`), end to end through the `lwnas` command: real Ray, real training, SQLite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.procs import COUNTED, lwnas, one_error, outcome, proc_env, read_trials, run_proc

pytestmark = pytest.mark.slow

# every trial of this study is the same point, and its task's metric is constant: nothing can move the front
STALLED_STUDY = """\
name: stalled
task: constant-digits
objectives:
  - {metric: accuracy, direction: maximize}
  - {metric: params, direction: minimize}
budget: {trials: 8, epochs: 1, stop_when: {window: 2, tolerance: 0.0}}
tuner: {sampler: random, scheduler: none, max_concurrent: 1, seed: 0}
training: {batch_size: 64, threads: 1}
space: {d_model: 16, heads: 2, layers: 1, lr: 0.003}
"""


def counted(trials: dict) -> int:
    return sum(outcome(t) in COUNTED for t in trials.values())


def status_json(workdir: Path, name: str, url: str) -> dict:
    result = lwnas(workdir, "status", name, "--storage", url, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def run(workdir: Path, log: str, *args: str) -> str:
    rc, out = run_proc(["lwnas", *args], workdir, proc_env(workdir), workdir / log)
    assert rc == 0, out[-4000:]
    return out


def test_resume_with_trials_grows_a_finished_sweep(tmp_path, swept_study):
    # a copy of the session's finished sweep (4 counted trials; tests/helpers/studies.py): no sweep of its own
    name = swept_study.name
    shutil.copy(swept_study.workdir / "lwnas.db", tmp_path / "lwnas.db")
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    before = read_trials(url, name)
    assert counted(before) == 4 and status_json(tmp_path, name, url)["ended"]["reason"] == "budget"

    shrink = lwnas(tmp_path, "resume", name, "--storage", url, "--trials", "3")
    assert shrink.returncode == 2 and "--trials must be at least the study's budget (4 trials)" in one_error(shrink)

    out = run(tmp_path, "grow.log", "resume", name, "--storage", url, "--trials", "6")
    assert "budget raised from 4 to 6 trials" in out
    after = read_trials(url, name)
    assert counted(after) == 6
    for n, t in before.items():  # the finished trials are kept as they were
        assert (after[n].state, after[n].values, after[n].params) == (t.state, t.values, t.params)
    s = status_json(tmp_path, name, url)
    assert s["budget"] == 6 and s["ended"]["reason"] == "budget"
    [change] = s["budget_changes"]
    assert (change["from"], change["to"], change["counted"]) == (4, 6, 4) and change["at"]
    table = lwnas(tmp_path, "status", name, "--storage", url)
    assert f"budget 6 trials; raised from 4 to 6 at {change['at']}" in table.stdout

    # the raised budget stays in force: a plain resume has nothing left to run
    again = lwnas(tmp_path, "resume", name, "--storage", url)
    assert again.returncode == 0 and "already has its 6 trials" in again.stderr
    assert counted(read_trials(url, name)) == 6


def test_a_sweep_whose_front_cannot_move_stops_early_and_resume_honours_it(tmp_path):
    (tmp_path / "stalled.yaml").write_text(STALLED_STUDY)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    out = run(tmp_path, "sweep.log", "sweep", "stalled.yaml", "--storage", url)
    # trial 0 makes the front; trials 1 and 2 fill the window without moving it; one runs at a time
    assert counted(read_trials(url, "stalled")) == 3
    assert "the sweep ended before its budget: the front's hypervolume grew by 0" in out
    assert "stopped before the budget was spent" not in out
    s = status_json(tmp_path, "stalled", url)
    assert s["ended"]["reason"] == "front-stalled" and s["ended"]["counted"] == 3
    assert "ended (front-stalled" in lwnas(tmp_path, "status", "stalled", "--storage", url).stdout

    again = lwnas(tmp_path, "resume", "stalled", "--storage", url)
    assert again.returncode == 0 and "study 'stalled' ended: the front's hypervolume" in again.stderr
    assert counted(read_trials(url, "stalled")) == 3

    # growing it restarts the window: two more trials, then the rule ends it again
    out = run(tmp_path, "grow.log", "resume", "stalled", "--storage", url, "--trials", "10")
    assert counted(read_trials(url, "stalled")) == 5
    s = status_json(tmp_path, "stalled", url)
    assert s["ended"]["reason"] == "front-stalled" and s["ended"]["counted"] == 5 and s["budget"] == 10
