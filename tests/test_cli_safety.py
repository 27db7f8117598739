"""What the sweep commands print and touch when a user's input is wrong or hostile.

Passwords in storage URLs (parseable or not) never reach the output; commands that only read a
storage never create a database; study names cannot climb out of folders or into the shell; export
folders that cannot be written, a sweep whose constraints admit no point, and a SQLite file deleted
mid-sweep each end with one line saying what to do. Everything runs the installed `lwnas` script.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from helpers.procs import (
    PG_URL,
    SWEEP_TIMEOUT,
    kill_session,
    lwnas,
    one_error,
    postgres_or_skip,
    proc_env,
    start_proc,
    states_sqlite,
    tail,
    wait_for,
)

from dashboards.sample import seed_study

SECRET = "S3cr3t-pw"
HOSTILE = "../../x;$(touch pwned)"


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error ")]


def study_file(directory: Path, name: str = "tiny", constraints: str = "", trials: int = 2, epochs: int = 1) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(
        f"name: {name}\ntask: digits\nobjectives: [accuracy, params]\n{constraints}"
        f"budget: {{trials: {trials}, epochs: {epochs}}}\n"
        "tuner: {sampler: random, max_concurrent: 1, seed: 0}\ntraining: {batch_size: 64, threads: 1}\n"
        "space:\n  d_model: {choice: [16, 32]}\n  heads: 2\n  layers: 1\n"
    )
    return path


# ---- passwords ------------------------------------------------------------------------------------
URLS = [
    f"postgresql://u:{SECRET}@127.0.0.1:notaport/db",  # does not parse
    f"postgresql://u:{SECRET}@127.0.0.1:1/db",  # parses, refuses connections
    f"postgresql://u:pre@{SECRET}@127.0.0.1:1/db",  # an @ inside the password
    f"postgresql://127.0.0.1:1/db?user=u&password={SECRET}",
    f"postgresql://u:pre?{SECRET}@127.0.0.1:1/db",  # a ? inside the password
    f" postgresql://u:{SECRET}@127.0.0.1:1/db",  # pasted with a leading blank
    f"postgresql://u:{SECRET.replace('-', '%2D')}@127.0.0.1:1/db",
]  # %-escaped: drivers echo it decoded


def assert_masked(result: subprocess.CompletedProcess) -> None:
    line = one_error(result)
    assert SECRET not in result.stdout + result.stderr, line
    assert "***" in line and "cannot open storage" in line, line


def test_no_command_prints_a_storage_password(tmp_path):
    study = study_file(tmp_path)
    url = URLS[0]
    for args in (["status", "x"], ["resume", "x"], ["export", "x"], ["sweep", str(study)], ["dashboard"]):
        assert_masked(lwnas(tmp_path, *args, "--storage", url))
    assert_masked(lwnas(tmp_path, "status", "x", LWNAS_STORAGE=url))


@pytest.mark.parametrize("url", URLS[1:])
def test_passwords_are_masked_whatever_the_url_looks_like(tmp_path, url):
    assert_masked(lwnas(tmp_path, "status", "x", "--storage", url))


def test_storage_help_warns_that_a_password_shows_in_ps(tmp_path):
    for command in ("sweep", "status"):  # one Storage option serves all four commands
        text = " ".join(lwnas(tmp_path, command, "--help", COLUMNS="400").stdout.split())
        assert "shows in `ps`" in text and "LWNAS_STORAGE environment variable" in text, text


# ---- read commands never create a database ----------------------------------------------------------
def test_read_commands_on_a_mistyped_sqlite_path_create_nothing(tmp_path):
    for args in (
        ["status", "x"],
        ["resume", "x"],
        ["export", "x"],
        ["status", "x", "--storage", "sqlite:///lwnsa.db"],
        ["resume", "x", "--storage", "sqlite:///lwnsa.db"],
        ["export", "x", "--storage", "sqlite:///lwnsa.db"],
    ):
        line = one_error(lwnas(tmp_path, *args))
        assert "no database at sqlite:///" in line and "does not exist" in line, line
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == []


# ---- names -------------------------------------------------------------------------------------------
def test_hostile_study_names_are_refused(tmp_path):
    study = study_file(tmp_path)
    line = one_error(lwnas(tmp_path, "sweep", str(study), "--name", HOSTILE))
    assert line.startswith("error --name must be 1 to 100 letters, digits")
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(study.read_text().replace("name: tiny", f"name: '{HOSTILE}'"))
    result = lwnas(tmp_path, "sweep", str(hostile))
    assert result.returncode == 2 and "must be 1 to 100 letters" in result.stderr, result.stderr
    result = lwnas(tmp_path, "sweep", str(study), "--name", "n" * 101)
    assert result.returncode == 2 and "got 'nnnnn" in result.stderr
    result = lwnas(tmp_path, "sweep", str(study), "--name", "tiny\n")  # a newline would reach paths and Ray
    assert result.returncode == 2 and "must be 1 to 100 letters" in result.stderr, result.stderr
    assert not list(tmp_path.rglob("pwned")) and not (tmp_path / "lwnas.db").exists()


def test_a_hostile_name_in_storage_stays_inside_the_export_folder(tmp_path):
    # a study written by other tools (or an older lwnas) may carry any name
    seed_study(f"sqlite:///{tmp_path / 'lwnas.db'}", name=HOSTILE, trials=6)
    result = lwnas(tmp_path, "export", HOSTILE, "-o", "out/sub")
    assert result.returncode == 0, result.stderr
    written = [Path(p) for p in result.stdout.split()]
    assert written and all(p.parent == Path("out/sub") for p in written), written
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.yaml")) == sorted(written)
    hint = result.stderr.split(" with: lwnas train ", 1)[1].strip()
    hint = f"lwnas train {hint}"
    words = shlex.split(hint)  # the printed command is one command, shell-quoted
    assert words[:2] == ["lwnas", "train"] and Path(words[2]) in written
    assert not list(tmp_path.rglob("pwned"))


# ---- export folders ------------------------------------------------------------------------------------
def test_export_to_a_file_or_an_unwritable_folder_is_one_line(tmp_path):
    seed_study(f"sqlite:///{tmp_path / 'lwnas.db'}", name="s", trials=6)
    (tmp_path / "taken").write_text("not a folder")
    assert "is a file, not a folder" in one_error(lwnas(tmp_path, "export", "s", "-o", "taken"))
    assert (tmp_path / "taken").read_text() == "not a folder"
    assert "Not a directory" in one_error(lwnas(tmp_path, "export", "s", "-o", "taken/sub"))
    # sysfs refuses new entries even to root (a chmod'ed folder would not stop root)
    line = one_error(lwnas(tmp_path, "export", "s", "-o", "/sys/lwnas-export"))
    assert line.startswith("error cannot write /sys/lwnas-export") and "choose a folder you can write to" in line


# ---- constraints that admit no point -------------------------------------------------------------------
def test_a_sweep_whose_constraints_admit_no_point_is_refused_before_ray(tmp_path):
    study = study_file(tmp_path, constraints="constraints: {params: {max: 10}}\n")
    result = lwnas(tmp_path, "sweep", str(study))
    assert result.returncode == 2, result.stderr
    assert "constraints.params: no point meets params <= 10" in result.stderr, result.stderr
    assert "Ray" not in result.stderr and not (tmp_path / "lwnas.db").exists()


# ---- the storage goes away mid-sweep ---------------------------------------------------------------------
def _make_read_only(db: Path) -> None:
    """chmod a-w; as root (whom permissions do not stop) the immutable flag instead."""
    if os.geteuid() != 0:
        db.chmod(0o444)
        return
    result = subprocess.run(["chattr", "+i", str(db)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"running as root and `chattr +i` is refused here: {result.stderr.strip()}")


def _make_writable(db: Path) -> None:
    if db.exists():
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(db)], capture_output=True)
        db.chmod(0o644)


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["deleted", "read-only"])
def test_a_sqlite_file_deleted_or_made_read_only_mid_sweep_stops_with_one_line(tmp_path, fault):
    study = study_file(tmp_path, trials=4, epochs=30)
    db = tmp_path / "lwnas.db"
    log = tmp_path / "sweep.log"
    proc = start_proc(["lwnas", "sweep", str(study), "--storage", f"sqlite:///{db}"], tmp_path, proc_env(tmp_path), log)
    try:
        wait_for(lambda: "RUNNING" in states_sqlite(db, "tiny").values(), SWEEP_TIMEOUT, "a running trial", proc, log)
        db.unlink() if fault == "deleted" else _make_read_only(db)
        try:
            rc = proc.wait(timeout=SWEEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the sweep went on after its SQLite file was {fault}:\n{tail(log)}")
    finally:
        kill_session(proc)
        _make_writable(db)
    output = log.read_text(errors="replace")
    assert rc != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error ")]
    assert len(errors) == 1, output[-3000:]
    assert "writable again (or put it back)" in errors[0] and "lwnas resume tiny --storage sqlite:///" in errors[0], (
        errors[0]
    )


# ---- a sweep that stops before its budget is spent -------------------------------------------------------
@pytest.mark.slow
def test_a_sweep_stopped_by_its_time_budget_exits_non_zero_with_the_resume_command(tmp_path):
    study = study_file(tmp_path, trials=50, epochs=30)
    study.write_text(
        study.read_text().replace("budget: {trials: 50, epochs: 30}", "budget: {trials: 50, epochs: 30, time: 5s}")
    )
    log = tmp_path / "sweep.log"
    proc = start_proc(["lwnas", "sweep", str(study)], tmp_path, proc_env(tmp_path), log)
    try:
        rc = proc.wait(timeout=SWEEP_TIMEOUT)
    finally:
        kill_session(proc)
    output = log.read_text(errors="replace")
    assert rc == 4, output[-3000:]
    assert "continue with: lwnas resume tiny --storage sqlite:///lwnas.db" in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error ")]
    assert len(errors) == 1 and "of 50 trials done: the sweep stopped before its budget was spent" in errors[0], errors


@pytest.mark.slow
@pytest.mark.postgres
def test_a_database_that_refuses_writes_mid_sweep_stops_the_sweep_with_one_line(tmp_path):
    # PostgreSQL made read-only under a running sweep (a database of its own, dropped afterwards):
    # new sessions may only read, and the sweep's sessions are ended so that it must open new ones
    postgres_or_skip()
    import sqlalchemy as sa

    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    db = f"lwnas_ro_{uuid.uuid4().hex[:8]}"
    url = PG_URL.rsplit("/", 1)[0] + f"/{db}"
    with admin.connect() as con:
        con.execute(sa.text(f"CREATE DATABASE {db}"))
    study = study_file(tmp_path, trials=4, epochs=30)
    log = tmp_path / "sweep.log"
    proc = start_proc(["lwnas", "sweep", str(study), "--storage", url], tmp_path, proc_env(tmp_path), log)
    try:
        wait_for(lambda: "RUNNING" in _pg_states(url), SWEEP_TIMEOUT, "a running trial", proc, log)
        with admin.connect() as con:
            con.execute(sa.text(f"ALTER DATABASE {db} SET default_transaction_read_only = on"))
            con.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :db"), {"db": db}
            )
        try:
            rc = proc.wait(timeout=SWEEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the sweep went on with a read-only database:\n{tail(log)}")
    finally:
        kill_session(proc)
        with admin.connect() as con:
            con.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :db"), {"db": db}
            )
            con.execute(sa.text(f"DROP DATABASE IF EXISTS {db}"))
        admin.dispose()
    output = log.read_text(errors="replace")
    assert rc != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error ")]
    # the sweep's next write meets either its ended session (a write under way when the server ended it) or, on a
    # new session, the read-only database: whichever came first is the one line's reason
    reasons = ("read-only transaction", "terminating connection due to administrator command")
    assert len(errors) == 1 and any(reason in errors[0] for reason in reasons), output[-3000:]
    assert "lwnas resume tiny --storage" in errors[0], errors[0]


def _pg_states(url: str) -> list[str]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            return [r[0] for r in con.execute(sa.text("SELECT state FROM trials"))]
    except sa.exc.SQLAlchemyError:
        return []
    finally:
        engine.dispose()
