"""Hostile or unlucky command lines against a sweep's storage (issue 28, part B).

Each case runs the installed ``lwnas`` script in a folder of its own, bounded by a timeout, and checks for
one line, its exit status and no traceback. The read commands run as the hostile-input suite runs
``lwnas space validate`` (tests/test_hostile.py): HOME and TMPDIR inside the test's folder and Python's
audit hook (tests/hostile/audit/sitecustomize.py) reporting any write outside it and any process started,
so a refused ``lwnas dashboard`` is seen to start no server. Nothing a read command is given may change:
not the database file (bytes and modification time), not its tables, not the folder.

Real SQLite files and real PostgreSQL databases (each test makes its own and drops it); real sweeps with
Ray and PyTorch for the drivers.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers.procs import (
    PG_URL,
    SWEEP_TIMEOUT,
    TINY_STUDY,
    free_port,
    kill_session,
    lwnas,
    postgres_or_skip,
    proc_env,
    session_pids,
    start_proc,
    tail,
    wait_for,
)

AUDIT = Path(__file__).resolve().parent / "hostile" / "audit"
READ_TIMEOUT_S = 120  # one refused read command: imports (torch for some) on a busy 2-core machine
OPTUNA_TABLES = "studies, trials, version_info, alembic_version"
# the two agents Ray leaves of a driver killed with kill -9 (they end by themselves, about 60 s later)
AGENT = r"dashboard/agent\.py|runtime_env/agent/main\.py|ray::\w*Agent"


# ---- storages a test makes -------------------------------------------------------------------------------
@pytest.fixture
def pg_database() -> Iterator[str]:
    """The URL of a PostgreSQL database made for this test (empty), dropped after it."""
    postgres_or_skip()
    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    name = f"lwnas_hostile_{uuid.uuid4().hex[:8]}"
    with admin.connect() as con:
        con.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield PG_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as con:
            con.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def tables(url: str) -> list[str]:
    """The tables of a storage, read without writing (a SQLite file is opened immutable: no -wal, no -shm)."""
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        if not path.exists():
            return []
        con = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            return sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        finally:
            con.close()
    engine = sa.create_engine(url)
    try:
        return sorted(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def folder_state(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: (size, modification time in ns, sha256)."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ---- read commands, run as the hostile-input suite runs lwnas ------------------------------------------------
def run_audited(work: Path, *args: str, timeout: float = READ_TIMEOUT_S) -> subprocess.CompletedProcess:
    """The installed ``lwnas ARGS`` in ``work``, HOME and TMPDIR beside it, the audit hook watching (see above)."""
    root = work.parent
    for folder in (root / "home", root / "tmp"):
        folder.mkdir(exist_ok=True)
    env = proc_env(root / "tmp", COLUMNS="400")
    for inherited in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):  # a folder outside the test's, if set
        env.pop(inherited, None)
    env.update(
        HOME=str(root / "home"),
        TMPDIR=str(root / "tmp"),
        PYTHONDONTWRITEBYTECODE="1",
        LWNAS_AUDIT_ROOT=str(root),
        PYTHONPATH=os.pathsep.join(filter(None, [str(AUDIT), os.environ.get("PYTHONPATH")])),
    )
    return subprocess.run(
        ["lwnas", *args], cwd=work, env=env, capture_output=True, text=True, errors="replace", timeout=timeout
    )


def read_commands(storage: list[str]) -> dict[str, list[str]]:
    """Every command that reads a storage, as a user types it (``storage``: [] for the default)."""
    return {
        "status": ["status", "x", *storage],
        "export": ["export", "x", *storage],
        "dashboard": ["dashboard", "--port", str(free_port()), *storage],
        "confirm": ["confirm", "x", "--epochs", "1", *storage],
        "resume": ["resume", "x", *storage],
    }


def the_one_line(result: subprocess.CompletedProcess) -> str:
    """The one line of a refused command: exit 1, nothing else printed, no traceback, no audit report."""
    output = result.stdout + result.stderr
    lines = [line for line in output.splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1 and lines[0].startswith("error "), (result.returncode, output)
    assert "Traceback" not in output and "AUDIT" not in output, output
    return lines[0]


def _empty_file(work: Path) -> None:
    (work / "lwnas.db").write_bytes(b"")


def _foreign_database(work: Path) -> None:
    con = sqlite3.connect(work / "lwnas.db")
    con.execute("CREATE TABLE notes (body TEXT)")
    con.execute("INSERT INTO notes VALUES ('not a sweep')")
    con.commit()
    con.close()


SQLITE_CASES = {
    # the file, what the refusal says
    "missing": (None, "error no database at sqlite:///lwnas.db: {db} does not exist (is the path mistyped? "),
    "empty-file": (
        _empty_file,
        "error sqlite:///lwnas.db holds no lwnas storage: {db} is an empty file (0 bytes); "
        "`lwnas sweep STUDY.yaml --storage sqlite:///lwnas.db` creates one there; commands that only read never do",
    ),
    "foreign": (
        _foreign_database,
        "error sqlite:///lwnas.db holds no lwnas storage: the database has 1 table and none of Optuna's "
        f"({OPTUNA_TABLES}); is it another program's database? Check the URL",
    ),
}


@pytest.mark.parametrize("case", list(SQLITE_CASES))
def test_read_commands_on_a_sqlite_file_without_a_storage_say_so_and_write_nothing(tmp_path, case):
    """status, export, dashboard, confirm and resume on a missing file, a 0-byte file or another program's
    database: one line each; the file is not created, not written (a 0-byte file stays 0 bytes: Optuna
    would write its tables into it) and no dashboard server starts."""
    make, expected = SQLITE_CASES[case]
    work = tmp_path / "work"
    work.mkdir()
    if make:
        make(work)
    db = work / "lwnas.db"
    before, schema = folder_state(work), tables(f"sqlite:///{db}")
    commands = read_commands([])
    if case == "missing":  # status, export, resume: tests/test_cli_safety.py (a mistyped path creates nothing)
        commands = {k: commands[k] for k in ("dashboard", "confirm")}
    for command, args in commands.items():
        line = the_one_line(run_audited(work, *args))
        assert line.startswith(expected.format(db=db)), (command, line)
        assert folder_state(work) == before, f"`lwnas {' '.join(args)}` changed {work}"
        assert tables(f"sqlite:///{db}") == schema, command


def test_read_commands_on_an_empty_postgresql_database_say_so_and_create_no_table(tmp_path, pg_database):
    work = tmp_path / "work"
    work.mkdir()
    for command, args in read_commands(["--storage", pg_database]).items():
        line = the_one_line(run_audited(work, *args))
        assert line == (
            f"error {pg_database} holds no lwnas storage: the database has no tables; `lwnas sweep STUDY.yaml "
            f"--storage {pg_database}` creates one there; commands that only read never do"
        ), (command, line)
        assert tables(pg_database) == [], f"`lwnas {' '.join(args)}` created tables"
    assert folder_state(work) == {}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_status_and_export_leave_a_sweeps_storage_as_it_was(tmp_path, backend, request):
    """On a real storage the read commands succeed and change nothing in it: the SQLite file keeps its bytes
    and modification time, and no -wal or -shm file is left beside it; PostgreSQL keeps every row."""
    from dashboards.sample import seed_study
    from tuners.store.connection import open_storage

    url = request.getfixturevalue("pg_database") if backend == "postgresql" else f"sqlite:///{tmp_path / 'lwnas.db'}"
    storage = open_storage(url, create=True)  # as a sweep opens it (WAL mode on SQLite)
    seed_study(storage, name="kept", trials=12, seed=1)
    storage.engine.dispose()  # as a sweep that ended leaves it: SQLite's -wal and -shm files removed
    before, rows = folder_state(tmp_path), _rows(url)
    work = tmp_path / "work"
    work.mkdir()
    for args in (["status", "kept"], ["status", "kept", "--json"], ["export", "kept", "-o", str(work / "out")]):
        result = run_audited(work, *args, "--storage", url)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout + result.stderr
        assert "AUDIT" not in result.stderr, result.stderr
    assert {k: v for k, v in folder_state(tmp_path).items() if not k.startswith(("work", "home", "tmp"))} == before
    assert _rows(url) == rows
    assert list((work / "out").glob("kept-trial-*.yaml")), "export wrote nothing"


def _rows(url: str) -> dict[str, list]:
    """Every row of every table of a storage no process writes now, in a stable order (a SQLite file is
    opened immutable: nothing is written beside it)."""
    if url.startswith("sqlite:///"):
        url = f"sqlite:///file:{url[len('sqlite:///') :]}?immutable=1&uri=true"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            return {
                table: sorted(map(repr, con.execute(sa.text(f'SELECT * FROM "{table}"'))))
                for table in sa.inspect(con).get_table_names()
            }
    finally:
        engine.dispose()


# ---- drivers: a second sweep, two at once -----------------------------------------------------------------
SET_UP = """
import sys, time
import optuna, sqlalchemy  # imported before the start: the processes then differ by microseconds, not imports
from tuners.store.connection import open_storage
url, start = sys.argv[1], float(sys.argv[2])
while time.time() < start:  # every process leaves this loop at the same moment
    pass
open_storage(url, create=True).engine.dispose()
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.slow
def test_drivers_setting_up_one_fresh_storage_at_once_all_open_it(tmp_path, backend, request):
    """What two new sweeps race on, made likely: four processes open one fresh storage for a sweep at the same
    instant. Optuna's set-up is not atomic (SQLite: `table studies already exists`, PostgreSQL: a duplicate
    type, either: a second version row); lwnas repeats its set-up until the storage is whole."""
    import sys
    import time

    url = request.getfixturevalue("pg_database") if backend == "postgresql" else f"sqlite:///{tmp_path / 'lwnas.db'}"
    start = time.time() + 15  # every process has imported by then, on a busy machine
    procs = [
        subprocess.Popen([sys.executable, "-c", SET_UP, url, str(start)], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    errors = [proc.communicate(timeout=READ_TIMEOUT_S)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, "\n".join(errors)
    assert set(OPTUNA_TABLES.split(", ")) <= set(tables(url))


def _refusal(name: str, url: str, pid: int) -> re.Pattern:
    """The one line of a `lwnas sweep` refused because driver ``pid`` runs study ``name``."""
    return re.compile(
        rf"error study '{name}' is being run by another driver \(pid {pid} on {re.escape(socket.gethostname())} "
        rf"since \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC, last heartbeat \d+ s ago\); watch it with "
        rf"`lwnas status {name} --storage {re.escape(url)}`, or give this sweep another --name"
    )


def _states(url: str, name: str) -> list[str]:
    """Trial states of study ``name`` while its driver writes it (none while the driver creates the tables)."""
    if url.startswith("sqlite:///"):
        url = f"sqlite:///file:{url[len('sqlite:///') :]}?mode=ro&uri=true"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            query = "SELECT t.state FROM trials t JOIN studies s ON s.study_id = t.study_id WHERE s.study_name = :n"
            return [r[0] for r in con.execute(sa.text(query), {"n": name})]
    except sa.exc.SQLAlchemyError:
        return []
    finally:
        engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sweeps_of_one_study_started_at_once_or_while_it_runs_name_the_live_driver(tmp_path, backend, request):
    """Two new `lwnas sweep` of one study started at once on a fresh storage: one drives, the other exits 3
    naming it (no "table studies already exists" from a race on the fresh schema); a third started while the
    first runs is refused the same way (not told to resume a study whose driver is alive)."""
    url = request.getfixturevalue("pg_database") if backend == "postgresql" else f"sqlite:///{tmp_path / 'lwnas.db'}"
    name = "race"
    study = tmp_path / "study.yaml"
    study.write_text(TINY_STUDY.format(name=name, trials=3, epochs=30))
    env = proc_env(tmp_path)
    logs = [tmp_path / f"sweep-{i}.log" for i in range(2)]
    procs = [start_proc(["lwnas", "sweep", str(study), "--storage", url], tmp_path, env, log) for log in logs]
    try:
        first_out = wait_for(
            lambda: [i for i, p in enumerate(procs) if p.poll() is not None], SWEEP_TIMEOUT, "one sweep to exit"
        )
        loser, winner = first_out[0], 1 - first_out[0]
        refused = [line for line in logs[loser].read_text(errors="replace").splitlines() if line.strip()]
        assert procs[loser].returncode == 3 and len(refused) == 1, (procs[loser].returncode, refused)
        assert _refusal(name, url, procs[winner].pid).fullmatch(refused[0]), refused[0]
        assert procs[winner].poll() is None, f"the other sweep stopped too:\n{tail(logs[winner])}"

        wait_for(lambda: "RUNNING" in _states(url, name), SWEEP_TIMEOUT, "a running trial", procs[winner], logs[winner])
        third = lwnas(tmp_path, "sweep", str(study), "--storage", url, timeout=SWEEP_TIMEOUT)
        lines = [line for line in (third.stdout + third.stderr).splitlines() if line.strip()]
        assert third.returncode == 3 and len(lines) == 1, third.stdout + third.stderr
        assert _refusal(name, url, procs[winner].pid).fullmatch(lines[0]), lines[0]
        assert procs[winner].poll() is None, tail(logs[winner])
        assert "Traceback" not in logs[winner].read_text(errors="replace")
    finally:
        for proc in procs:
            kill_session(proc)


# ---- a driver killed with kill -9: what Ray leaves behind ------------------------------------------------------
def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_driver_killed_with_kill_9_is_resumed_at_once_and_ray_ends_its_own_agents(tmp_path):
    """`kill -9` of the driver alone (not its process group): Ray's fate-sharing ends its head processes and
    workers, while its two agents (ray::DashboardAgent, ray::RuntimeEnvAgent) live on re-parented to init
    until they give up reporting the raylet's death to a GCS that is gone (about 60 s; docs/cluster.md).
    A plain `ray.init()` script killed so leaves the same two. They hinder nothing: `lwnas resume` started at
    once takes the study over and finishes it, and by then only those two agents are left of the killed
    driver (their own end, a minute later, is Ray's; the test does not wait for it)."""
    name = "killed"
    study = tmp_path / "study.yaml"
    study.write_text(TINY_STUDY.format(name=name, trials=2, epochs=4))
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    env = proc_env(tmp_path)
    log = tmp_path / "sweep.log"
    sweep = start_proc(["lwnas", "sweep", str(study), "--storage", url], tmp_path, env, log)
    try:
        wait_for(lambda: "RUNNING" in _states(url, name), SWEEP_TIMEOUT, "a running trial", sweep, log)
        os.kill(sweep.pid, signal.SIGKILL)  # the driver alone, as `kill -9 PID` does
        sweep.wait(timeout=30)
        resume = lwnas(tmp_path, "resume", name, "--storage", url, timeout=SWEEP_TIMEOUT)
        output = resume.stdout + resume.stderr
        assert resume.returncode == 0 and "Traceback" not in output, output[-3000:]
        assert f"took the study over from a driver that is gone (pid {sweep.pid} on" in output, output[-3000:]

        # fate-sharing ended Ray's head and workers; what is left of the killed driver are Ray's two agents
        # (they end by themselves; lwnas kills nothing of the gone driver's). A worker of the killed driver
        # may still be on its way out when the resume ends: give it a few seconds, not the agents' minute
        def others() -> dict[int, str]:
            left = {pid: _command(pid) for pid in session_pids(sweep.pid)}
            return {p: c for p, c in left.items() if not re.search(AGENT, c)}

        deadline = time.monotonic() + 30
        while others() and time.monotonic() < deadline:
            time.sleep(1)
        assert not others(), others()
    finally:
        kill_session(sweep)
