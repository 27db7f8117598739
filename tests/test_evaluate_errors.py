"""`lwnas evaluate` on files and options a user gets wrong: one line saying what to do, never a traceback.

Each case runs the installed `lwnas` script on a checkpoint that a real `lwnas train` wrote (or a
damaged copy of it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.procs import lwnas, one_error

CONFIG = "family: encoder\nd_model: 16\nheads: 2\nlayers: 1\ntraining: {epochs: 1, batch_size: 64}\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A digits checkpoint written by `lwnas train`."""
    tmp = tmp_path_factory.mktemp("evaluate")
    (tmp / "tiny.yaml").write_text(CONFIG)
    result = lwnas(tmp, "train", "tiny.yaml", "--task", "digits", "--out", "run")
    assert result.returncode == 0, result.stderr
    return tmp / "run" / "checkpoint.pt"


@pytest.mark.parametrize("damage", ["empty", "truncated", "random-bytes"])
def test_a_damaged_checkpoint_is_one_line(trained, tmp_path, damage):
    data = trained.read_bytes()
    broken = tmp_path / "checkpoint.pt"
    broken.write_bytes(
        {"empty": b"", "truncated": data[: len(data) // 2], "random-bytes": np.random.default_rng(0).bytes(4096)}[
            damage
        ]
    )
    line = one_error(lwnas(tmp_path, "evaluate", str(broken)))
    assert "is not a readable checkpoint" in line and "checkpoint.pt that `lwnas train` wrote" in line


def test_weights_that_do_not_match_the_config_are_one_line(trained, tmp_path):
    ckpt = torch.load(trained, weights_only=True)
    ckpt["config"]["d_model"] = 32  # the weights are for d_model 16
    edited = tmp_path / "checkpoint.pt"
    torch.save(ckpt, edited)
    line = one_error(lwnas(tmp_path, "evaluate", str(edited)))
    assert "its weights do not match its configuration" in line and "size mismatch" in line


def test_a_missing_checkpoint_and_a_bogus_split_are_one_line(trained, tmp_path):
    assert "no such checkpoint" in one_error(lwnas(tmp_path, "evaluate", str(tmp_path / "nope.pt")))
    line = one_error(lwnas(tmp_path, "evaluate", str(trained), "--split", "bogus"))
    assert line == "error --split must be one of train, val, test, got 'bogus'"


def test_data_or_options_a_task_does_not_take_are_one_line(trained, tmp_path):
    # --data on a task that reads no file, and an option the task has not, are refused before it is built
    hint = "error task_options: task `digits` takes no option 'path' (its options: none); --data serves tasks"
    assert one_error(lwnas(tmp_path, "evaluate", str(trained), "--data", "x.npz")).startswith(hint)
    (tmp_path / "tiny.yaml").write_text(CONFIG)
    # lwnas train also names the configuration file the refused option belongs to
    assert one_error(lwnas(tmp_path, "train", "tiny.yaml", "--task", "digits", "--data", "x.npz")).startswith(
        hint.replace("error ", "error tiny.yaml: ", 1)
    )
    (tmp_path / "opts.yaml").write_text(f"task: digits\ntask_options: {{bogus: 1}}\n{CONFIG}")
    line = one_error(lwnas(tmp_path, "train", "opts.yaml"))
    assert line == "error opts.yaml: task_options: task `digits` takes no option 'bogus' (its options: none)", line
    assert not (tmp_path / "runs").exists()


def test_a_features_checkpoint_whose_data_moved_takes_data(tmp_path):
    rng = np.random.default_rng(0)
    run_dir, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    run_dir.mkdir(), elsewhere.mkdir()
    np.savez(
        run_dir / "mine.npz",
        regions=rng.normal(size=(120, 3, 4)).astype("float32"),
        labels=rng.integers(0, 3, size=120),
    )
    (run_dir / "tiny.yaml").write_text(CONFIG)
    trained = lwnas(run_dir, "train", "tiny.yaml", "--task", "features", "--data", "mine.npz", "--out", "run")
    assert trained.returncode == 0, trained.stderr
    checkpoint = str(run_dir / "run" / "checkpoint.pt")

    # `lwnas train` records the data path absolute (any folder finds it); once the file moves, --data says where
    (run_dir / "mine.npz").rename(elsewhere / "moved.npz")
    line = one_error(lwnas(elsewhere, "evaluate", checkpoint))
    assert "mine.npz" in line and "pass --data" in line
    evaluated = lwnas(elsewhere, "evaluate", checkpoint, "--data", "moved.npz")
    assert evaluated.returncode == 0, evaluated.stderr
    assert (
        json.loads(evaluated.stdout)["accuracy"]
        == json.loads((run_dir / "run" / "metrics.json").read_text())["test"]["accuracy"]
    )
