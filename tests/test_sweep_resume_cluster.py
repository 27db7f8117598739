"""Sweeps that stop and go on, and a sweep on a two-node Ray cluster: real processes, Ray and SQL.

* ``kill -9`` of a running ``lwnas sweep`` (its whole process group, Ray's local processes with it),
  then ``lwnas resume``: finished trials are untouched, each trial left RUNNING is marked
  ``interrupted`` and re-queued exactly once with its params, and the budget is spent exactly.
* Ctrl-C (SIGINT to the driver): the sweep stops, prints the resume command, and that command
  finishes the budget.
* A head and a second node started with ``ray start`` on this machine, PostgreSQL storage, and
  ``lwnas sweep --address``: every trial completes, and the Ray node recorded on the trials shows
  that both nodes trained trials at the same time.

Every process these tests start gets its own session (``start_new_session``), and clean-up kills
exactly the processes of those sessions (Ray's workers put themselves in process groups of their
own but stay in the session). ``ray stop --force`` is never used: it kills every Ray process on the
machine, including sweeps that have nothing to do with these tests.

Isolation from other Ray instances on the machine: a ``ray start`` cluster that uses Ray's default
temp dir records its address in ``/tmp/ray/ray_current_cluster``, and from then on every
``ray.init()`` without an address on this machine joins that cluster. So the local sweeps here run
with ``RAY_ADDRESS=local`` (always a fresh Ray of their own), and the two-node cluster uses one
temp dir of its own, shared by both of its nodes, so it never captures anyone else's ``ray.init()``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from helpers.procs import (
    COUNTED,
    PG_URL,
    SWEEP_TIMEOUT,
    TINY_STUDY,
    free_port,
    kill_session,
    outcome,
    postgres_or_skip,
    proc_env,
    read_trials,
    run_proc,
    start_proc,
    states_sqlite,
    tail,
    wait_for,
)

pytestmark = pytest.mark.slow

RUNNING, COMPLETE, WAITING = (
    optuna.trial.TrialState.RUNNING,
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.WAITING,
)

STUDY = TINY_STUDY


def _write_study(directory: Path, name: str, trials: int, epochs: int) -> Path:
    path = directory / "study.yaml"
    path.write_text(STUDY.format(name=name, trials=trials, epochs=epochs))
    return path


@dataclass
class Started:
    """A local `lwnas sweep` on SQLite, started in a session of its own."""

    proc: subprocess.Popen
    db: Path
    url: str
    env: dict
    log: Path


def _start_sweep(directory: Path, name: str, trials: int, epochs: int) -> Started:
    study = _write_study(directory, name, trials=trials, epochs=epochs)
    db = directory / "lwnas.db"
    url, env, log = f"sqlite:///{db}", proc_env(directory), directory / "sweep.log"
    proc = start_proc(["lwnas", "sweep", str(study), "--storage", url], directory, env, log)
    return Started(proc, db, url, env, log)


# ---- checks shared by the kill and the Ctrl-C scenarios ------------------------------------------
def _check_resumed(
    before: dict[int, optuna.trial.FrozenTrial], after: dict[int, optuna.trial.FrozenTrial], budget: int
) -> list[int]:
    """What must hold after a stopped sweep was resumed to its end; returns the interrupted numbers."""
    finished = [n for n, t in before.items() if t.state == COMPLETE]
    interrupted = [n for n, t in before.items() if t.state == RUNNING]
    for n in finished:  # finished trials are kept as they were, not re-run
        b, a = before[n], after[n]
        assert (a.state, a.values, a.params, a.datetime_start, a.datetime_complete) == (
            b.state,
            b.values,
            b.params,
            b.datetime_start,
            b.datetime_complete,
        ), f"trial {n} changed"
        assert a.user_attrs == b.user_attrs, f"trial {n}'s record changed"
    for n in interrupted:  # each trial that was running is marked and re-queued exactly once
        assert after[n].state == optuna.trial.TrialState.FAIL, after[n]
        assert outcome(after[n]) == "interrupted", after[n].user_attrs
        reruns = [t for t in after.values() if t.user_attrs.get("requeued_from") == n]
        assert len(reruns) == 1, f"trial {n} was re-queued {len(reruns)} times: {[t.number for t in reruns]}"
        # the re-run keeps every value the interrupted trial had drawn; a driver killed between Optuna's ask
        # and its last suggestion leaves a trial with part of its params, and the re-run draws the rest
        assert reruns[0].number > n and after[n].params.items() <= reruns[0].params.items(), (
            after[n].params,
            reruns[0].params,
        )
        assert outcome(reruns[0]) in COUNTED
    requeued_from = [t.user_attrs["requeued_from"] for t in after.values() if "requeued_from" in t.user_attrs]
    assert sorted(requeued_from) == sorted(interrupted), "a trial that had not been interrupted was re-queued"
    assert not [n for n, t in after.items() if t.state in (RUNNING, WAITING)], {
        n: t.state.name for n, t in after.items()
    }
    counted = [n for n, t in after.items() if outcome(t) in COUNTED]
    assert len(counted) == budget, {n: (t.state.name, outcome(t)) for n, t in after.items()}
    assert len(after) == budget + len(interrupted)  # nothing but the budget and the re-runs
    # no scheduler in these studies: a trial that was stopped by the driver is never "pruned"/"failed"
    assert {outcome(after[n]) for n in counted} == {"complete"}, {n: outcome(after[n]) for n in counted}
    return interrupted


def _replayed_points(after: dict[int, optuna.trial.FrozenTrial]) -> dict[int, int]:
    """Counted trials whose params equal an earlier counted trial's: {later: earlier}."""
    counted = sorted((n for n, t in after.items() if outcome(t) in COUNTED))
    seen: dict[str, int] = {}
    replayed = {}
    for n in counted:
        key = json.dumps(after[n].params, sort_keys=True)
        if key in seen:
            replayed[n] = seen[key]
        else:
            seen[key] = n
    return replayed


# ---- 1. kill -9, then lwnas resume -------------------------------------------------------------------
@dataclass
class Stopped:
    name: str
    url: str
    budget: int
    before: dict  # trials right after the stop
    after: dict  # trials after `lwnas resume`
    sweep_output: str
    resume_output: str
    workdir: Path
    env: dict


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory) -> Stopped:
    """A sweep (6 trials, 2 at a time) killed with SIGKILL once 2 trials finished and one runs, resumed."""
    tmp = tmp_path_factory.mktemp("kill9")
    name, budget = "kill9", 5  # 2 finished + <= 2 interrupted leaves >= 1 fresh trial for the resume to propose
    started = _start_sweep(tmp, name, trials=budget, epochs=6)  # ~1-2 s per trial once Ray is up (idle)
    proc, db, url, env, log = started.proc, started.db, started.url, started.env, started.log
    try:

        def ready():
            states = states_sqlite(db, name)
            done = sum(s == "COMPLETE" for s in states.values())
            return done >= 2 and any(s == "RUNNING" for s in states.values())

        wait_for(ready, SWEEP_TIMEOUT, "2 complete trials and one running", proc, log)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and Ray's local processes (gcs, raylet, ...)
        proc.wait(timeout=30)
    finally:
        kill_session(proc)  # Ray's workers sit in process groups of their own
    before = read_trials(url, name)
    states = {n: t.state.name for n, t in before.items()}
    assert sum(t.state == COMPLETE for t in before.values()) >= 2 and any(
        t.state == RUNNING for t in before.values()
    ), states
    rc, resume_output = run_proc(["lwnas", "resume", name, "--storage", url], tmp, env, tmp / "resume.log")
    assert rc == 0, resume_output[-4000:]
    after = read_trials(url, name)
    return Stopped(name, url, budget, before, after, log.read_text(errors="replace"), resume_output, tmp, env)


def test_kill9_then_resume_keeps_finished_trials_and_requeues_running_ones(killed_and_resumed):
    s = killed_and_resumed
    interrupted = _check_resumed(s.before, s.after, s.budget)
    assert interrupted
    assert f"re-queued trials interrupted by the last driver: {sorted(interrupted)}" in s.resume_output, (
        s.resume_output[-3000:]
    )

    # lwnas status reads the same record
    rc, out = run_proc(
        ["lwnas", "status", s.name, "--storage", s.url, "--json"],
        s.workdir,
        s.env,
        s.workdir / "status.log",
        timeout=120,
    )
    assert rc == 0, out
    status = json.loads(out[out.index("{") :])
    assert status["outcomes"] == {"complete": s.budget, "interrupted": len(interrupted)}, status
    assert status["trials"] == s.budget + len(interrupted)

    # a second resume has nothing left to do and adds no trial
    rc, out = run_proc(["lwnas", "resume", s.name, "--storage", s.url], s.workdir, s.env, s.workdir / "resume2.log")
    assert rc == 0, out[-3000:]
    assert f"already has its {s.budget} trials" in out, out[-3000:]
    assert sorted(read_trials(s.url, s.name)) == sorted(s.after)


def test_resume_proposes_new_points(killed_and_resumed):
    s = killed_and_resumed
    fresh = [n for n, t in s.after.items() if n not in s.before and "requeued_from" not in t.user_attrs]
    if not fresh:
        pytest.skip("the kill came so late that the resume only re-ran interrupted trials")
    replayed = _replayed_points(s.after)
    assert not replayed, f"trials re-train the params of earlier trials {replayed}: " + "; ".join(
        f"{n}: {s.after[n].params}" for n in replayed
    )


# ---- 2. Ctrl-C ---------------------------------------------------------------------------------------
def test_ctrl_c_stops_the_sweep_and_resume_finishes_it(tmp_path):
    name, budget = "ctrlc", 3
    started = _start_sweep(tmp_path, name, trials=budget, epochs=6)
    proc, db, url, env, log = started.proc, started.db, started.url, started.env, started.log
    try:

        def ready():
            states = states_sqlite(db, name).values()
            return "COMPLETE" in states and "RUNNING" in states

        wait_for(ready, SWEEP_TIMEOUT, "a complete trial and a running one", proc, log)
        os.kill(proc.pid, signal.SIGINT)  # the driver alone, as a terminal's Ctrl-C would reach it first
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the sweep did not stop within 120 s of SIGINT:\n{tail(log)}")
    finally:
        kill_session(proc)
    output = log.read_text(errors="replace")
    resume_cmd = f"lwnas resume {name} --storage {url}"
    assert resume_cmd in output, f"exit code {rc}; the output does not say how to resume:\n{output[-3000:]}"
    # lwnas's hint is the only one: Ray's own restore advice and its tracebacks do not reach the user
    assert output.count("resume") == 1 and "Tuner.restore" not in output, output[-3000:]
    assert "Traceback" not in output and "FileNotFoundError" not in output, output[-3000:]
    assert rc == 4, f"an interrupted sweep must exit non-zero (4), got {rc}:\n{output[-3000:]}"

    before = read_trials(url, name)
    assert any(t.state == COMPLETE for t in before.values()), {n: t.state.name for n, t in before.items()}
    assert sum(outcome(t) in COUNTED for t in before.values()) < budget
    rc, resume_output = run_proc(resume_cmd.split(), tmp_path, env, tmp_path / "resume.log")  # the printed command
    assert rc == 0, resume_output[-4000:]
    after = read_trials(url, name)
    _check_resumed(before, after, budget)


# ---- 3. two Ray nodes, PostgreSQL ---------------------------------------------------------------------
_NODES_SCRIPT = """
import json, sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
deadline = time.time() + float(sys.argv[2])
while True:
    alive = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    if len(alive) >= 2 or time.time() > deadline:
        break
    time.sleep(0.5)
print("NODES " + json.dumps(alive))
"""


@pytest.mark.cluster
@pytest.mark.postgres
def test_sweep_on_two_ray_nodes_with_postgres_storage(tmp_path):
    postgres_or_skip()
    name, budget = f"lwnas-test-cluster-{uuid.uuid4().hex[:10]}", 4
    study = _write_study(tmp_path, name, trials=budget, epochs=3)
    port = free_port()
    address = f"127.0.0.1:{port}"
    ray_tmp = tempfile.mkdtemp(prefix="lwr", dir="/tmp")  # short: Ray's socket paths live under it
    # Token auth: `ray start --head` turns it on when ~/.ray/auth_token exists, but a node or driver
    # given an explicit --address does not; the cluster here runs without it on every process.
    env = proc_env(tmp_path, RAY_AUTH_MODE="disabled")
    env.pop("RAY_ADDRESS")
    node_args = [
        "--num-cpus=1",
        "--node-ip-address=127.0.0.1",
        f"--temp-dir={ray_tmp}",
        "--disable-usage-stats",
        "--block",
    ]
    started: list[subprocess.Popen] = []
    try:
        head_log, worker_log = tmp_path / "head.log", tmp_path / "worker.log"
        started.append(
            start_proc(
                ["ray", "start", "--head", f"--port={port}", "--include-dashboard=false", *node_args],
                tmp_path,
                env,
                head_log,
            )
        )
        wait_for(
            lambda: "Ray runtime started" in head_log.read_text(errors="replace"), 180, "Ray head", started[0], head_log
        )
        started.append(start_proc(["ray", "start", f"--address={address}", *node_args], tmp_path, env, worker_log))
        wait_for(
            lambda: "Ray runtime started" in worker_log.read_text(errors="replace"),
            180,
            "second Ray node",
            started[1],
            worker_log,
        )
        rc, out = run_proc(
            [sys.executable, "-c", _NODES_SCRIPT, address, "120"], tmp_path, env, tmp_path / "nodes.log", timeout=180
        )
        found = re.search(r"^NODES (.*)$", out, re.M)
        assert rc == 0 and found, out[-3000:]
        nodes = json.loads(found.group(1))
        assert len(nodes) == 2, f"the cluster has {len(nodes)} alive nodes: {nodes}"

        rc, out = run_proc(
            [
                "lwnas",
                "sweep",
                str(study),
                "--address",
                address,
                "--storage",
                PG_URL,
                "--name",
                name,
                "--trials",
                str(budget),
                "--max-concurrent",
                "2",
            ],
            tmp_path,
            env,
            tmp_path / "sweep.log",
        )
        assert rc == 0, out[-4000:]
        trials = read_trials(PG_URL, name)
        assert len(trials) == budget
        assert all(t.state == COMPLETE and outcome(t) == "complete" for t in trials.values()), {
            n: (t.state.name, outcome(t), t.user_attrs.get("failure")) for n, t in trials.items()
        }
        ran_on = {n: t.user_attrs.get("node") for n, t in trials.items()}
        assert all(ran_on.values()), f"trials without the Ray node they ran on: {ran_on}"
        assert set(ran_on.values()) <= set(nodes), (ran_on, nodes)
        assert set(ran_on.values()) == set(nodes), f"every trial ran on one node: {ran_on} (nodes {nodes})"
        # one CPU per node and two trials at a time: the two nodes trained at the same time
        overlapping = [
            (a, b)
            for a in trials.values()
            for b in trials.values()
            if ran_on[a.number] != ran_on[b.number]
            and a.number < b.number
            and a.datetime_start < b.datetime_complete
            and b.datetime_start < a.datetime_complete
        ]
        assert overlapping, {n: (ran_on[n], t.datetime_start, t.datetime_complete) for n, t in trials.items()}
    finally:
        for proc in reversed(started):
            kill_session(proc)
        shutil.rmtree(ray_tmp, ignore_errors=True)
        try:
            optuna.delete_study(study_name=name, storage=PG_URL)
        except KeyError:
            pass
