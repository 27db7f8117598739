"""`lwnas train` then `lwnas evaluate` reproduce the same metric; the run is fully recorded."""

import json

import yaml
from typer.testing import CliRunner

from searchspace.files import load_config_file
from trainers import cost
from tuners.cli.main import app

runner = CliRunner()


def test_train_then_evaluate_reproduces_the_metric(tmp_path):
    config = tmp_path / "digits.yaml"
    config.write_text(
        "family: encoder\nd_model: 32\nheads: 4\nlayers: 1\ntraining:\n  epochs: 2\n  batch_size: 64\n  lr: 0.003\n"
    )
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", str(config), "--task", "digits", "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["history"]) == 2 and metrics["history"][0]["epoch"] == 1

    evaluated = runner.invoke(app, ["evaluate", str(out / "checkpoint.pt")])
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(evaluated.stdout)["accuracy"] == metrics["test"]["accuracy"]

    # the written config is the exact one trained: it rebuilds with the recorded parameter count
    used = load_config_file(out / "config.yaml")
    assert used.config.grid == (4, 4)  # the task's input sizes were applied
    assert cost(used.config, memory=False).params == metrics["params"]
    assert yaml.safe_load((out / "config.yaml").read_text())["training"]["seed"] == 3


def test_train_errors_are_clear(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("family: mcan\n")
    result = runner.invoke(app, ["train", str(config), "--task", "digits", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "trains family `encoder`" in result.output
    # (the damaged-checkpoint cases run the installed script: tests/test_evaluate_errors.py)
