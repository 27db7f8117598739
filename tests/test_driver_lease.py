"""One live driver per study: a sweep killed with kill -9, then two `lwnas resume` started at once.

Real processes, Ray, PyTorch, SQLite and PostgreSQL. The killed driver's lease is taken over (same
host, its process is gone), exactly one of the two resumes drives, the other exits non-zero with
one line naming the holder, and the budget is spent exactly.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import uuid
from pathlib import Path

import optuna
import pytest
import sqlalchemy as sa
from helpers.procs import (
    COUNTED,
    PG_URL,
    SWEEP_TIMEOUT,
    TINY_STUDY,
    kill_session,
    outcome,
    postgres_or_skip,
    proc_env,
    read_trials,
    start_proc,
    tail,
    wait_for,
)

STUDY = TINY_STUDY


def _rows(url: str, query: str, **params) -> list:
    """Rows of a read-only query; [] while the tables are not there yet (the driver creates them)."""
    if url.startswith("sqlite:///"):
        url = f"sqlite:///file:{url[len('sqlite:///') :]}?mode=ro&uri=true"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            return list(con.execute(sa.text(query), params))
    except sa.exc.SQLAlchemyError:
        return []
    finally:
        engine.dispose()


def _states(url: str, name: str) -> list[str]:
    return [
        r[0]
        for r in _rows(
            url,
            "SELECT t.state FROM trials t JOIN studies s ON s.study_id = t.study_id WHERE s.study_name = :name",
            name=name,
        )
    ]


def _holder_pid(url: str, name: str) -> int | None:
    rows = _rows(url, "SELECT pid FROM lwnas_leases WHERE study_name = :name", name=name)
    return rows[0][0] if rows else None


def _wait(procs: list[subprocess.Popen], logs: list[Path]) -> list[int]:
    codes = []
    try:
        for proc, log in zip(procs, logs):
            try:
                codes.append(proc.wait(timeout=SWEEP_TIMEOUT))
            except subprocess.TimeoutExpired:
                pytest.fail(f"`lwnas resume` did not finish in {SWEEP_TIMEOUT} s:\n{tail(log)}")
    finally:
        for proc in procs:
            kill_session(proc)
    return codes


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_killed_driver_is_taken_over_and_two_resumes_share_one_lease(tmp_path, backend):
    if backend == "postgresql":
        postgres_or_skip()
        url = PG_URL
    else:
        url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    name, budget = f"lease-{uuid.uuid4().hex[:8]}", 3
    study = tmp_path / "study.yaml"
    study.write_text(STUDY.format(name=name, trials=budget, epochs=3))
    env = proc_env(tmp_path)
    try:
        # 1. a sweep holds the lease; kill -9 it (driver and Ray) while a trial runs
        log = tmp_path / "sweep.log"
        sweep = start_proc(["lwnas", "sweep", str(study), "--storage", url], tmp_path, env, log)
        try:
            wait_for(lambda: "RUNNING" in _states(url, name), SWEEP_TIMEOUT, "a running trial", sweep, log)
            assert _holder_pid(url, name) == sweep.pid
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait(timeout=30)
        finally:
            kill_session(sweep)
        assert _holder_pid(url, name) == sweep.pid  # a killed driver cannot give its lease back

        # 2. two resumes at once: one takes the lease over, the other is refused with one line
        logs = [tmp_path / f"resume-{i}.log" for i in range(2)]
        procs = [start_proc(["lwnas", "resume", name, "--storage", url], tmp_path, env, lg) for lg in logs]
        codes = _wait(procs, logs)
        outputs = [lg.read_text(errors="replace") for lg in logs]
        assert sorted(codes) == [0, 3], "\n----\n".join(o[-3000:] for o in outputs)
        winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
        assert (
            f"took the study over from a driver that is gone (pid {sweep.pid} on {socket.gethostname()}"
            in outputs[winner]
        ), outputs[winner][-3000:]
        refused = [line for line in outputs[loser].splitlines() if line.strip()]
        assert len(refused) == 1, outputs[loser]
        assert re.fullmatch(
            rf"error study '{name}' is being run by another driver \(pid {procs[winner].pid} on "
            rf"{re.escape(socket.gethostname())} since \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC, "
            rf"last heartbeat \d+ s ago\); wait for it to finish, or stop it and run "
            rf"`lwnas resume` again",
            refused[0],
        ), refused[0]

        # 3. the budget is spent exactly, nothing is left running, and the lease was given back
        trials = read_trials(url, name)
        assert sum(outcome(t) in COUNTED for t in trials.values()) == budget, {
            n: (t.state.name, outcome(t)) for n, t in trials.items()
        }
        assert not [
            t for t in trials.values() if t.state in (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)
        ]
        assert _holder_pid(url, name) is None
    finally:
        if backend == "postgresql":
            try:
                optuna.delete_study(study_name=name, storage=url)
            except KeyError:
                pass


def test_a_holder_in_another_pid_namespace_is_not_taken_for_gone(tmp_path):
    """A driver in a container on host networking shares this host's name, not its pids: its fresh lease holds."""
    from dashboards.sample import seed_study
    from tuners.driver.lease import LEASES

    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    seed_study(url, name="held", trials=2)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no process of this namespace has now
    engine = sa.create_engine(url)
    try:
        LEASES.metadata.create_all(engine)
        with engine.begin() as con:
            now = con.execute(sa.select(sa.func.current_timestamp())).scalar()  # the clock the lease judges by
            con.execute(
                LEASES.insert().values(
                    study_name="held",
                    token=f"{uuid.uuid4().hex}@pid:[1]",
                    host=socket.gethostname(),
                    pid=gone.pid,
                    since=now,
                    heartbeat=now,
                )
            )
    finally:
        engine.dispose()
    result = subprocess.run(
        ["lwnas", "resume", "held", "--storage", url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT,
        env=proc_env(tmp_path),
    )
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 3 and len(lines) == 1, result.stdout + result.stderr
    assert lines[0].startswith(
        f"error study 'held' is being run by another driver (pid {gone.pid} on {socket.gethostname()} since "
    ), lines[0]
    assert _holder_pid(url, "held") == gone.pid
