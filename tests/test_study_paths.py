"""`lwnas space validate` and sweeps on study files: paths in a study resolve against the study file's
folder (the docs' `features` recipe, as written, validates and sweeps from another working directory;
Ray's workers get the absolute path; a missing data file is one located error at validation), and a
folder of studies shows each file as its check starts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.procs import ROOT, outcome, proc_env, read_trials, run_proc


def docs_features_study() -> str:
    """The `features` recipe of docs/studies.md, exactly as a user copies it."""
    text = (ROOT / "docs/studies.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    return next(b for b in blocks if "task: features" in b)


def write_data(path: Path, n: int = 240) -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, n)
    regions = rng.normal(size=(n, 4, 6)).astype(np.float32) + labels[:, None, None]
    np.savez(path, regions=regions, labels=labels)


@pytest.mark.slow
def test_a_relative_features_study_validates_and_sweeps_from_elsewhere(tmp_path):
    folder, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    folder.mkdir(), elsewhere.mkdir()
    text = docs_features_study()
    study = folder / "my-features.yaml"
    study.write_text(text.replace("budget: {trials: 8, epochs: 3}", "budget: {trials: 1, epochs: 1}"))
    path = yaml.safe_load(text)["task_options"]["path"]
    write_data(folder / path)
    env = proc_env(tmp_path)

    rc, out = run_proc(["lwnas", "space", "validate", str(study)], elsewhere, env, tmp_path / "validate.log", 120)
    assert rc == 0 and "ok" in out, out
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    rc, out = run_proc(["lwnas", "sweep", str(study), "--storage", url], elsewhere, env, tmp_path / "sweep.log")
    assert rc == 0, out[-4000:]
    trials = read_trials(url, "my-features")
    assert [outcome(t) for t in trials.values()] == ["complete"], out[-4000:]


def test_a_missing_data_file_is_a_located_error(tmp_path):
    study = tmp_path / "my-features.yaml"
    study.write_text(docs_features_study())
    env = proc_env(tmp_path)
    rc, out = run_proc(["lwnas", "space", "validate", str(study)], ROOT, env, tmp_path / "validate.log", 120)
    line = next(i for i, text in enumerate(docs_features_study().splitlines(), 1) if text.startswith("task_options"))
    assert rc == 2, out
    assert f"error {study}:{line}: task_options.path: no such file or directory: {tmp_path / 'my-data.npz'}" in out
    assert "Traceback" not in out, out


def test_validating_a_folder_shows_each_file_on_stderr(tmp_path):
    for name in ("one", "two"):
        (tmp_path / f"{name}.yaml").write_text(
            (ROOT / "studies/quickstart.yaml").read_text().replace("name: quickstart", f"name: {name}")
        )
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lwnas"), "space", "validate", str(tmp_path), "--samples", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert [line.split(":")[0] for line in lines if not line.startswith("Token")] == [
        f"checking [1/2] {tmp_path / 'one.yaml'}",
        f"ok {tmp_path / 'one.yaml'}",
        f"checking [2/2] {tmp_path / 'two.yaml'}",
        f"ok {tmp_path / 'two.yaml'}",
    ], done.stderr


def test_a_configuration_names_its_task_and_data_relative_to_itself(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    write_data(folder / "my-data.npz")
    config = folder / "small.yaml"
    config.write_text(
        "family: encoder\nd_model: 16\nheads: 2\ntask: features\ntask_options: {path: my-data.npz}\n"
        "training: {epochs: 1, threads: 1}\n"
    )
    env = proc_env(tmp_path)
    rc, out = run_proc(
        ["lwnas", "train", str(config), "-o", str(tmp_path / "run")], tmp_path, env, tmp_path / "train.log", 300
    )
    assert rc == 0, out[-3000:]
    (folder / "my-data.npz").unlink()
    rc, out = run_proc(
        ["lwnas", "train", str(config), "-o", str(tmp_path / "run")], tmp_path, env, tmp_path / "train.log", 300
    )
    assert (
        rc == 2 and f"error {config}: task_options.path: no such file or directory: {folder / 'my-data.npz'}" in out
    ), out
