"""Helpers for the tests that run real sweeps and the dashboard: `lwnas` processes in sessions of
their own, and the trials they leave in Optuna's storage.

Every process gets its own session (``start_new_session``), and clean-up kills exactly the processes
of that session (Ray's workers put themselves in process groups of their own but stay in the
session). ``ray stop --force`` is never used: it would kill every Ray process on the machine.
Local sweeps run with ``RAY_ADDRESS=local``, so they never join a ``ray start`` cluster that
another test (or the user) left running on this machine.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import optuna
import pytest

ROOT = Path(__file__).resolve().parents[2]
SWEEP_TIMEOUT = 300  # seconds for one sweep or resume (2 busy cores: Ray's start alone can take 30 s)
COUNTED = ("complete", "pruned", "failed")  # the outcomes that use a place in the budget (tuners.driver.sweep)
PG_URL = os.environ.get("LWNAS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


# A tiny two-objective digits study for the sweeps that are stopped, killed and resumed
TINY_STUDY = """\
name: {name}
task: digits
objectives:
  - {{metric: accuracy, direction: maximize}}
  - {{metric: params, direction: minimize}}
budget: {{trials: {trials}, epochs: {epochs}}}
# random: a float drawn twice can only come from a replayed sampler
# (test_sweep_resume_cluster.py::test_resume_proposes_new_points)
tuner: {{sampler: random, scheduler: none, max_concurrent: 2, seed: 0}}
training: {{batch_size: 64, threads: 1}}
space:
  d_model: {{choice: [16, 32]}}
  heads: 2
  layers: 1
  lr: {{float: [1.0e-3, 5.0e-3], log: true}}
"""


# ---- processes ------------------------------------------------------------------------------------
def proc_env(tmp: Path, **extra: str) -> dict[str, str]:
    # `lwnas` and `ray` from this interpreter's environment, activated or not
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {
        **os.environ,
        "PATH": path,
        "LWNAS_CACHE": str(tmp / "cache"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONUNBUFFERED": "1",
        "RAY_ADDRESS": "local",
    }
    env.pop("LWNAS_STORAGE", None)
    env.update(extra)
    return env


def session_pids(sid: int) -> list[int]:
    """Live processes of session ``sid`` (one a test started with start_new_session)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def kill_session(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGKILL every process of the session ``proc`` leads (it was started with start_new_session)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in session_pids(proc.pid) if p != os.getpid()]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        if not pids or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def lwnas(cwd: Path, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """Run the installed `lwnas` script in ``cwd`` as a user types it (``env`` added); output captured as text."""
    return subprocess.run(
        ["lwnas", *map(str, args)],
        cwd=cwd,
        env=proc_env(cwd, **{"COLUMNS": "200", **env}),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_error(result: subprocess.CompletedProcess) -> str:
    """The one line of a failed command (nothing else printed, no traceback)."""
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1 and lines[0].startswith("error "), (
        result.returncode,
        result.stdout + result.stderr,
    )
    return lines[0]


def start_proc(cmd: list[str], cwd: Path, env: dict, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def run_proc(cmd: list[str], cwd: Path, env: dict, log: Path, timeout: float = SWEEP_TIMEOUT) -> tuple[int, str]:
    """Run a command to completion in a session of its own; (exit code, output). Fails on timeout."""
    proc = start_proc(cmd, cwd, env, log)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(cmd)}` did not finish in {timeout} s:\n{tail(log)}")
    finally:
        kill_session(proc)
    return rc, log.read_text(errors="replace")


def tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def wait_for(condition, timeout: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process exited (code {proc.returncode}) before {what}:\n{tail(log)}")
        time.sleep(0.2)
    pytest.fail(f"no {what} after {timeout} s:\n{tail(log) if log else ''}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DASHBOARD_START_S = 90  # the first start imports streamlit, plotly and torch on a small, busy machine


def healthy(address: str) -> bool:
    """Whether Streamlit answers on its health endpoint."""
    try:
        with urllib.request.urlopen(f"{address}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_dashboard(url: str, cwd: Path, env: dict, log: Path) -> tuple[subprocess.Popen, str]:
    """`lwnas dashboard --storage URL --port P` as a user types it; returns once it answers on its
    health endpoint (stop it with ``kill_session``)."""
    port = free_port()
    proc = start_proc(["lwnas", "dashboard", "--storage", url, "--port", str(port)], cwd, env, log)
    address = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthy(address), DASHBOARD_START_S, f"answer on {address}/_stcore/health", proc, log)
    except BaseException:
        kill_session(proc)
        raise
    return proc, address


# ---- storage ----------------------------------------------------------------------------------------
def states_sqlite(db: Path, name: str) -> dict[int, str]:
    """Trial number -> state, read with plain sqlite3 (read-only: an Optuna storage object would
    create tables and write its version row, racing the driver that is creating them)."""
    if not db.exists():
        return {}
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            rows = con.execute(
                "SELECT t.number, t.state FROM trials t JOIN studies s ON s.study_id = t.study_id "
                "WHERE s.study_name = ?",
                (name,),
            ).fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return {}
    return {number: state for number, state in rows}


def rdb(url: str) -> optuna.storages.RDBStorage:
    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)


def read_trials(url: str, name: str) -> dict[int, optuna.trial.FrozenTrial]:
    """Trial number -> trial of study ``name``, read through a storage opened for this read only."""
    storage = rdb(url)
    try:
        study_id = storage.get_study_id_from_name(name)
        return {t.number: t for t in storage.get_all_trials(study_id, deepcopy=True)}
    finally:
        storage.engine.dispose()


def outcome(t: optuna.trial.FrozenTrial) -> str | None:
    return t.user_attrs.get("outcome")


def postgres_or_skip() -> None:
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg (the PostgreSQL driver) is not installed: pip install 'psycopg[binary]'")
    try:
        psycopg.connect(PG_URL, connect_timeout=5).close()
    except Exception as exc:  # noqa: BLE001 - any reason the server cannot be used
        pytest.skip(f"PostgreSQL is unreachable at {PG_URL}: {str(exc).splitlines()[0] if str(exc) else exc!r}")
