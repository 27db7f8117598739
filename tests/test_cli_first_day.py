"""A new user's first day (issue 30, section 3, points 6-10), each through the installed `lwnas` script.

A two-slash SQLite URL is answered with the three-slash form by every command that takes --storage; a
checkpoint's export never overwrites a model file silently; an image folder of one class is refused; the
studies of a storage are listed by `lwnas status` without a name; `--version` exists; help pages show flags
without a type; a sweep prints its front on stdout with no Ray token banner, and an ONNX export prints no
torchvision notes.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import uuid
from importlib.metadata import version
from pathlib import Path

import pytest
import typer
from helpers.procs import PG_URL, SWEEP_TIMEOUT, TINY_STUDY, kill_session, lwnas, one_error, postgres_or_skip, proc_env
from PIL import Image

from dashboards.sample import seed_study
from tuners.cli.main import app

TINY_CONFIG = (
    "family: encoder\nd_model: 16\nheads: 2\nlayers: 1\nd_ff: 32\ntask: digits\n"
    "training: {epochs: 1, batch_size: 64, threads: 1}\n"
)


# ---- 6. sqlite://x.db -----------------------------------------------------------------------------
@pytest.mark.slow
def test_a_two_slash_sqlite_url_is_answered_with_the_three_slash_form_by_every_command(tmp_path):
    study = tmp_path / "tiny.yaml"
    study.write_text(TINY_STUDY.format(name="tiny", trials=1, epochs=1))
    commands = (
        ["status"],
        ["status", "x"],
        ["resume", "x"],
        ["export", "x"],
        ["confirm", "x", "--epochs", "1"],
        ["dashboard"],
        ["sweep", study],
    )
    for args in commands:
        line = one_error(lwnas(tmp_path, *args, "--storage", "sqlite://x.db"))
        assert "sqlite:///x.db" in line and "two slashes" in line, (args, line)
    line = one_error(lwnas(tmp_path, "status", LWNAS_STORAGE="sqlite://runs/x.db"))
    assert "sqlite:///runs/x.db" in line, line
    assert not [p for p in tmp_path.rglob("*") if "db" in p.name], "a database was made"


# ---- 7. export --checkpoint never overwrites silently; 8. no torchvision notes ---------------------------------
@pytest.mark.slow
def test_a_checkpoint_export_keeps_an_existing_model_file_unless_forced(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TINY_CONFIG)
    trained = lwnas(tmp_path, "train", "tiny.yaml", "-o", "run")
    assert trained.returncode == 0, trained.stderr
    first = lwnas(tmp_path, "export", "--checkpoint", "run/checkpoint.pt", "--format", "onnx", "-o", "deploy")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "deploy/model.onnx"
    assert "torchvision" not in first.stdout + first.stderr, first.stderr  # the exporter's notes are dropped
    model = tmp_path / "deploy" / "model.onnx"
    model.write_bytes(b"another checkpoint's model")  # what an earlier export of another checkpoint left there
    again = lwnas(tmp_path, "export", "--checkpoint", "run/checkpoint.pt", "--format", "onnx", "-o", "deploy")
    line = one_error(again)
    assert "deploy/model.onnx already exists" in line and "-o" in line and "--force" in line, line
    assert model.read_bytes() == b"another checkpoint's model"
    forced = lwnas(
        tmp_path, "export", "--checkpoint", "run/checkpoint.pt", "--format", "onnx", "-o", "deploy", "--force"
    )
    assert forced.returncode == 0, forced.stderr
    assert model.stat().st_size > 1000 and b"lwnas.json" in model.read_bytes()  # the model, with its metadata


# ---- 9. an image folder of one class ------------------------------------------------------------------------
def test_an_image_folder_with_one_class_is_refused(tmp_path):
    folder = tmp_path / "pets" / "cat"
    folder.mkdir(parents=True)
    for i in range(10):
        Image.new("RGB", (8, 8), (20 * i, 0, 0)).save(folder / f"{i}.png")
    (tmp_path / "img.yaml").write_text(
        TINY_CONFIG.replace("task: digits", "task: image-folder\ntask_options: {path: pets, image_size: 8, patch: 4}")
    )
    line = one_error(lwnas(tmp_path, "train", "img.yaml", "-o", "run"))
    assert "image-folder" in line and "pets has one class folder (cat)" in line and "at least 2 classes" in line, line
    assert not (tmp_path / "run").exists()


# ---- 10. the studies of a storage, --version, help -------------------------------------------------------
def _dump(db: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as con:
        return list(con.iterdump())


def test_status_without_a_name_lists_the_studies_read_only(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    seed_study(url, "alpha", trials=30, seed=0)
    seed_study(url, "beta", trials=0, objectives=("accuracy", "params", "madds"))
    db = tmp_path / "s.db"
    before = _dump(db)
    listed = lwnas(tmp_path, "status", "--storage", url, "--json")
    assert listed.returncode == 0, listed.stderr
    studies = json.loads(listed.stdout)
    assert [s["study"] for s in studies] == ["alpha", "beta"]
    alpha, beta = studies
    assert alpha["trials"] == 30 == sum(alpha["outcomes"].values())
    shown = lwnas(tmp_path, "status", "alpha", "--storage", url, "--json")
    assert alpha["outcomes"] == json.loads(shown.stdout)["outcomes"]  # the counts `lwnas status NAME` gives
    assert (alpha["objectives"], alpha["directions"]) == (["accuracy", "params"], ["maximize", "minimize"])
    assert beta == {
        "study": "beta",
        "trials": 0,
        "outcomes": {},
        "objectives": ["accuracy", "params", "madds"],
        "directions": ["maximize", "minimize", "minimize"],
    }
    table = lwnas(tmp_path, "status", "--storage", url)
    assert table.returncode == 0 and not table.stderr, table.stderr
    assert "2 studies in" in table.stdout and "accuracy (max), params (min)" in table.stdout, table.stdout
    assert f"complete {alpha['outcomes']['complete']}" in table.stdout, table.stdout
    assert _dump(db) == before  # read only (SQLite may fold its WAL into the file: compare the rows)
    empty = tmp_path / "empty.db"
    seed_study(f"sqlite:///{empty}", "gone", trials=0)
    import optuna

    optuna.delete_study(study_name="gone", storage=f"sqlite:///{empty}")
    none = lwnas(tmp_path, "status", "--storage", f"sqlite:///{empty}")
    assert none.returncode == 0 and none.stdout.startswith("no studies in"), none.stdout + none.stderr


def test_status_lists_the_studies_of_a_postgresql_storage(tmp_path):
    """The grouped count reads PostgreSQL's enum states as SQLite's text ones (the database is shared: only this
    test's study is looked at)."""
    postgres_or_skip()
    import optuna

    name = f"lwnas-test-list-{uuid.uuid4().hex[:10]}"
    seed_study(PG_URL, name, trials=12, seed=1)
    try:
        listed = lwnas(tmp_path, "status", "--storage", PG_URL, "--json")
        assert listed.returncode == 0, listed.stderr
        mine = next(s for s in json.loads(listed.stdout) if s["study"] == name)
        shown = json.loads(lwnas(tmp_path, "status", name, "--storage", PG_URL, "--json").stdout)
        assert mine["outcomes"] == shown["outcomes"] and mine["trials"] == 12, (mine, shown["outcomes"])
    finally:
        optuna.delete_study(study_name=name, storage=PG_URL)


def test_version(tmp_path):
    shown = lwnas(tmp_path, "--version")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"lwnas {version('lwnas')}\n"


def _command_paths(command, prefix=()):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*prefix, name))


def test_every_help_page_shows_its_flags_without_a_type(tmp_path):
    pages = list(_command_paths(typer.main.get_command(app)))
    assert ("space", "validate") in pages and ("status",) in pages
    for path in pages:
        shown = lwnas(tmp_path, *path, "--help")
        assert shown.returncode == 0, (path, shown.stderr)
        assert "--help" in shown.stdout and "<bool>" not in shown.stdout, (path, shown.stdout)
    assert "--json " in lwnas(tmp_path, "status", "--help").stdout


# ---- 8 and 10 in one sweep: no Ray token banner; the front on stdout ----------------------------------------
@pytest.mark.slow
def test_a_sweep_prints_its_front_on_stdout_and_no_ray_token_banner(tmp_path):
    study = tmp_path / "one.yaml"
    study.write_text(TINY_STUDY.format(name="one", trials=1, epochs=1))
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    env = proc_env(tmp_path)
    env.pop("RAY_AUTH_MODE", None)  # Ray's default, which prints the banner
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(
            ["lwnas", "sweep", str(study), "--storage", f"sqlite:///{tmp_path / 'lwnas.db'}"],
            cwd=tmp_path,
            env=env,
            stdout=o,
            stderr=e,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=SWEEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the sweep did not finish in {SWEEP_TIMEOUT} s:\n{err.read_text()[-3000:]}")
        finally:
            kill_session(proc)
    stdout, stderr = out.read_text(), err.read_text()
    assert rc == 0, stderr[-3000:]
    assert "Token authentication" not in stdout + stderr, stderr
    assert "Pareto front of one" in stdout and "Pareto front" not in stderr, (stdout, stderr)
    assert "sweep 'one': 1 trials" in stderr and "lwnas status one" in stderr, stderr
