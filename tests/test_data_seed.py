"""Every run loads its task's data with one seed: a sweep's trial, `lwnas train` with any training
seed and `lwnas evaluate` see the same split, so an exported trial retrains on the data it was
scored on (a plugin whose split depends on the seed would otherwise train on other data)."""

import json
import subprocess
import sys
from pathlib import Path

LWNAS = str(Path(sys.executable).parent / "lwnas")


def test_train_and_evaluate_load_the_data_split_of_every_sweep_trial(tmp_path):
    (tmp_path / "c.yaml").write_text("family: encoder\nd_model: 16\nheads: 2\nlayers: 1\n")
    env_run = dict(cwd=tmp_path, capture_output=True, text=True, timeout=300)
    trained = subprocess.run(
        [
            LWNAS,
            "train",
            "c.yaml",
            "--task",
            "seed-recording-digits",
            "--seed",
            "7",
            "--epochs",
            "1",
            "--threads",
            "1",
            "-o",
            "run",
        ],
        **env_run,
    )
    assert trained.returncode == 0, trained.stderr
    evaluated = subprocess.run([LWNAS, "evaluate", "run/checkpoint.pt"], **env_run)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout) == json.loads(trained.stdout)["test"]
    # the sweep's workers load with trainers.tasks.base.DATA_SEED (0) whatever the trial's seed
    assert (tmp_path / "load-seeds.txt").read_text().split() == ["0", "0"]
