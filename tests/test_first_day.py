"""A new user's first day (issue 30, section 3, points 1-5), each through the installed `lwnas` script:

1. `training: {device: cuda}` without a GPU is refused at load (validate, sweep); a sweep whose every trial
   failed exits non-zero and does not offer to export its empty front.
2. `lwnas sweep --trials N --epochs N`: checked by the file's rules, recorded on the study, kept by resume.
3. Live progress on a terminal (a pty here): running trials, epoch, elapsed, an estimate; none in a pipe.
4. mo-asha: a warning when the budget is too small for its rungs, and why a trial was stopped.
5. `lwnas status` tells trials left running by a stopped driver (stale) from running ones, and writes nothing.

Two real sweeps (2 trials of 1-2 epochs of a tiny model each); the rest are validation-time refusals.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import torch
import yaml
from helpers.procs import ROOT, SWEEP_TIMEOUT, kill_session, lwnas, one_error, proc_env, read_trials, run_proc

NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where torch sees no GPU")

# every trial's metric is the same (constant_task), so the rung's decision is set by params alone:
# the small seed config trains first and dominates the big one, which mo-asha stops at its rung
MO_ASHA_STUDY = """\
name: {name}
task: constant_task:ConstantDigits
objectives:
  - {{metric: accuracy, direction: maximize}}
  - {{metric: params, direction: minimize}}
budget: {{trials: 6, epochs: 5}}
tuner: {{sampler: random, scheduler: mo-asha, reduction_factor: 2, grace_epochs: 1, max_concurrent: 1, seed: 0}}
training: {{batch_size: 64, threads: 1}}
space:
  d_model: {{choice: [16, 32]}}
  heads: 2
  layers: 1
seed_configs:
  small: {{d_model: 16}}
  big: {{d_model: 32}}
"""

DIGITS_MO_ASHA = MO_ASHA_STUDY.format(name="m").replace("constant_task:ConstantDigits", "digits")

# every trial gets a NaN loss on its first step (cursed_task: nan_d_model), a deterministic failure
FAILING_STUDY = """\
name: allfail
task: cursed_task:CursedDigits
task_options: {nan_d_model: 16}
objectives: [accuracy, params]
budget: {trials: 2, epochs: 1}
tuner: {sampler: random, max_concurrent: 1, seed: 0}
training: {batch_size: 64, threads: 1}
space: {d_model: 16, heads: 2, layers: 1}
"""

CUDA_STUDY = """\
name: gpu
task: digits
objectives: [accuracy, params]
budget: {trials: 2, epochs: 1}
training: {batch_size: 64, device: cuda}
space: {d_model: 16, heads: 2, layers: 1}
"""


def _content(path: Path) -> list[str]:
    """A SQLite file's content as SQL (its bytes may change without a write: a reader folds in the WAL)."""
    with contextlib.closing(sqlite3.connect(path)) as con:
        return list(con.iterdump())


def _plain(raw: bytes) -> str:
    """A terminal's bytes as text: escape sequences dropped, carriage returns as line breaks."""
    text = raw.decode(errors="replace").replace("\r", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def _run_in_pty(cmd: list[str], cwd: Path, timeout: float = SWEEP_TIMEOUT) -> tuple[int, str]:
    """Run ``cmd`` with stdout and stderr on a pseudo-terminal (as in a user's shell); (exit code, what it showed)."""
    leader, follower = pty.openpty()
    env = proc_env(cwd, COLUMNS="200", LINES="50", TERM="xterm")
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, start_new_session=True
    )
    os.close(follower)
    shown = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                pytest.fail(f"`{' '.join(cmd)}` did not finish in {timeout} s:\n{_plain(bytes(shown))[-3000:]}")
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: every writer is gone
                break
            if not chunk:
                break
            shown += chunk
        rc = proc.wait(timeout=60)
    finally:
        os.close(leader)
        kill_session(proc)
    return rc, _plain(bytes(shown))


# ---- 1. a device this machine lacks; a sweep whose every trial failed -------------------------------------
@NO_GPU
def test_cuda_training_device_without_a_gpu_is_refused_at_load(tmp_path):
    (tmp_path / "gpu.yaml").write_text(CUDA_STUDY)
    expected = re.compile(
        r"^error gpu\.yaml:5: training\.device: `cuda` was asked for, but torch sees no CUDA GPU on this machine "
        r"\(.+\), so every trial would fail: use `auto` or `cpu`, or sweep on a cluster with GPUs"
    )
    validate = lwnas(tmp_path, "space", "validate", "gpu.yaml")
    assert validate.returncode == 2 and expected.match(validate.stderr), validate.stderr
    sweep = lwnas(tmp_path, "sweep", "gpu.yaml", "--storage", f"sqlite:///{tmp_path / 'lwnas.db'}")
    assert sweep.returncode == 2 and expected.match(one_error(sweep)), sweep.stderr
    assert not (tmp_path / "lwnas.db").exists()  # refused before anything was stored or Ray started
    # a study stored where a GPU was (its spec as a sweep records it), resumed here: refused before Ray starts
    url = f"sqlite:///{tmp_path / 'gpu.db'}"
    stored = optuna.create_study(study_name="gpu", storage=url, directions=["maximize", "minimize"])
    stored.set_user_attr("lwnas:study", yaml.safe_load(CUDA_STUDY))
    resumed = lwnas(tmp_path, "resume", "gpu", "--storage", url)
    assert resumed.returncode == 2 and one_error(resumed).startswith(
        "error study 'gpu': training.device: `cuda` was asked for, but torch sees no CUDA GPU on this machine"
    )


@pytest.mark.slow
def test_a_sweep_whose_every_trial_failed_exits_non_zero_without_offering_an_export(tmp_path):
    shutil.copy(ROOT / "tests" / "plugins" / "cursed_task.py", tmp_path / "cursed_task.py")
    (tmp_path / "allfail.yaml").write_text(FAILING_STUDY)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    cmd = ["lwnas", "sweep", "allfail.yaml", "--storage", url]
    rc, out = run_proc(cmd, tmp_path, proc_env(tmp_path), tmp_path / "s.log")
    assert rc == 1, out[-4000:]
    assert re.search(r"error all 2 trials failed, so the study has no front: the reasons are above and in \S+", out)
    assert "export the front" not in out and "lwnas status allfail" in out
    assert not re.search(r"running \d+(:| ·)", out)  # the live line is for terminals only: a log holds none of it
    assert [t.state for t in read_trials(url, "allfail").values()] == [optuna.trial.TrialState.FAIL] * 2


# ---- 4. mo-asha's budget warnings at load --------------------------------------------------------------------
def test_mo_asha_warns_when_the_budget_is_too_small_for_its_rungs(tmp_path):
    study = tmp_path / "m.yaml"  # digits: validation imports no plugin from the working directory
    study.write_text(DIGITS_MO_ASHA)
    enough = lwnas(tmp_path, "space", "validate", "m.yaml", "--samples", "1")
    assert enough.returncode == 0 and "warning" not in enough.stderr, enough.stderr  # 6 trials >= 2**2
    study.write_text(DIGITS_MO_ASHA.replace("trials: 6, epochs: 5", "trials: 3, epochs: 5"))
    small = lwnas(tmp_path, "space", "validate", "m.yaml", "--samples", "1")
    warning = (
        "warning m.yaml:7: tuner.scheduler: mo-asha with 3 trials and reduction_factor 2: a rung (at epochs 1, 2, "
        "4) keeps the best 1/2 of the few trials that reached it first (rungs weigh every objective, params "
        "included), so most trials may be stopped on little evidence; give at least 4 trials or use scheduler none"
    )
    assert small.returncode == 0 and warning in small.stderr, small.stderr
    study.write_text(DIGITS_MO_ASHA.replace("trials: 6, epochs: 5", "trials: 6, epochs: 1"))
    no_rung = lwnas(tmp_path, "space", "validate", "m.yaml", "--samples", "1")
    warning = "mo-asha has no rung: budget.epochs 1 is not above tuner.grace_epochs 1, so it stops no trial"
    assert no_rung.returncode == 0 and warning in no_rung.stderr, no_rung.stderr


# ---- 2, 3, 4, 5 on one tiny sweep ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_overrides_live_progress_prune_reasons_and_stale_status(tmp_path):
    shutil.copy(ROOT / "tests" / "plugins" / "constant_task.py", tmp_path / "constant_task.py")
    (tmp_path / "m.yaml").write_text(MO_ASHA_STUDY.format(name="m"))
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"

    # 2. overrides are checked by the file's rules before anything runs
    bad = lwnas(tmp_path, "sweep", "m.yaml", "--storage", url, "--epochs", "0")
    assert one_error(bad) == "error --epochs: must be an integer >= 1, got 0"
    assert not (tmp_path / "lwnas.db").exists()

    rc, shown = _run_in_pty(["lwnas", "sweep", "m.yaml", "--storage", url, "--trials", "2", "--epochs", "2"], tmp_path)
    assert rc == 0, shown[-4000:]
    # 4. the budget the overrides leave is too small for mo-asha: said before the sweep starts
    assert "warning m.yaml:7: tuner.scheduler: mo-asha with 2 trials and reduction_factor 2" in shown
    # 3. the live line: running trials with their epoch, what is done, elapsed and an estimate
    assert re.search(r"running 1: trial 0 epoch 1/2 \(\d+s\) · 0 of 2 done · \d+s elapsed · ", shown), shown[-4000:]
    assert re.search(r"· about \d+(s|m\d\ds) left", shown), shown[-4000:]
    # 4. why the big point was stopped: its rung and the trial that dominated it
    assert (
        "[2/2] trial 1 stopped early (pruned: rung at epoch 1 kept the best 1 of 2; dominated by trial 0 (better "
        "params))" in shown
    )

    trials = read_trials(url, "m")
    assert trials[1].user_attrs["pruned_by"] == {
        "rung": 1,
        "rung_trials": 2,
        "kept": 1,
        "dominated_by": [0],
        "better_in": ["params"],  # the same accuracy: the cost decided
        "values": {"accuracy": 0.5, "params": trials[1].user_attrs["plan"]["costs"]["params"]},
    }
    assert trials[0].user_attrs["budget_used"] == 2  # --epochs 2, not the file's 5
    study = optuna.load_study(study_name="m", storage=url)
    assert study.user_attrs["lwnas:study"]["budget"] == {"trials": 2, "epochs": 2}  # the effective values
    status = json.loads(lwnas(tmp_path, "status", "m", "--storage", url, "--json").stdout)
    assert status["budget"] == 2 and status["driver"] is None and status["outcomes"] == {"complete": 1, "pruned": 1}

    # 5. a trial left RUNNING by a driver that is gone (as Ctrl-C or kill -9 leaves it) is stale, not running
    # (asked by another process that then ends, as a driver's would: SQLite's log is folded into the file)
    asked = f"import optuna; optuna.load_study(study_name='m', storage={url!r}).ask()"
    subprocess.run([sys.executable, "-c", asked], check=True, timeout=120)
    before = _content(tmp_path / "lwnas.db")
    shown_status = lwnas(tmp_path, "status", "m", "--storage", url)
    assert shown_status.returncode == 0, shown_status.stderr
    assert "m: complete 1, pruned 1, stale 1\n" in shown_status.stdout and "running 1" not in shown_status.stdout
    assert (
        f"stale 1: trials left running by a driver that has stopped (no live driver holds the study); continue "
        f"with: lwnas resume m --storage {url}"
    ) in shown_status.stdout
    listed = lwnas(tmp_path, "status", "--storage", url, "--json")  # the study list counts them so too
    assert json.loads(listed.stdout)[0]["outcomes"] == {"complete": 1, "pruned": 1, "stale": 1}, listed.stdout
    assert _content(tmp_path / "lwnas.db") == before  # read commands write nothing
    # with a live driver holding the study, the same trial runs
    from tuners.driver.lease import StudyLease

    lease = StudyLease(url, "m")
    lease.acquire()
    try:
        live = json.loads(lwnas(tmp_path, "status", "m", "--storage", url, "--json").stdout)
    finally:
        lease.release()
    assert live["outcomes"]["running"] == 1 and live["driver"]["pid"] == os.getpid()

    # 2. resume keeps the sweep's effective budget (the file says 6 trials of 5 epochs)
    resumed = lwnas(tmp_path, "resume", "m", "--storage", url)
    assert resumed.returncode == 0, resumed.stderr
    assert "already has its 2 trials" in resumed.stderr
    assert optuna.load_study(study_name="m", storage=url).user_attrs["lwnas:study"]["budget"]["epochs"] == 2
