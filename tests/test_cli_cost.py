"""`lwnas cost` end to end through the real CLI (typer's runner, real models)."""

import json
import re
from pathlib import Path

import pytest
from helpers.procs import lwnas
from typer.testing import CliRunner

from tuners.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_help_on_every_command():
    assert runner.invoke(app, ["--help"]).exit_code == 0
    result = runner.invoke(app, ["cost", "--help"])
    assert result.exit_code == 0 and "peak memory" in result.output


def test_cost_json_on_a_paper_row():
    path = ROOT / "studies/papers/lw-transformer/table2-transformer.yaml"
    result = runner.invoke(app, ["cost", str(path), "--json", "--no-memory", "--check"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["params_breakdown"]["encoder"] + data["params_breakdown"]["decoder"] == 44_138_496
    assert data["madds_breakdown"]["encoder"] + data["madds_breakdown"]["decoder"] == 2_581_536_768
    assert all(r["matches"] for r in data["reference"])


def test_cost_with_memory(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text("family: encoder\nd_model: 32\nheads: 4\nattention: coupled\n")
    result = runner.invoke(app, ["cost", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["memory_bytes"] > 4 * data["params"]  # at least the fp32 weights
    assert data["attention_map_bytes"] > 0


def test_bad_config_names_knob_value_and_rule(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("family: mcan\nd_modle: 512\nheads: 8\ngroups: 3\ng_mha: true\n")
    result = runner.invoke(app, ["cost", str(path)])
    assert result.exit_code == 2
    assert "d_modle" in result.output and "did you mean `d_model`" in result.output
    assert "heads" in result.output and "divisible by `groups` (3)" in result.output


def test_check_fails_on_a_wrong_reference(tmp_path):
    path = tmp_path / "wrong.yaml"
    path.write_text("family: encoder\nreference:\n  table: X\n  params: {total: 1.0M}\n")
    result = runner.invoke(app, ["cost", str(path), "--no-memory", "--check"])
    assert result.exit_code == 1
    assert "mismatch" in result.output


@pytest.mark.parametrize("config, task", [("digits-baseline.yaml", "digits"), ("shapes-vqa-lw.yaml", "shapes-vqa")])
def test_cost_at_a_task_equals_the_trained_model(tmp_path, config, task):
    path = ROOT / "studies/baselines" / config
    costed = lwnas(tmp_path, "cost", str(path), "--task", task, "--no-memory", "--json")
    assert costed.returncode == 0, costed.stderr
    trained = lwnas(
        tmp_path,
        "train",
        str(path),
        "--task",
        task,
        "--epochs",
        "1",
        "--threads",
        "1",
        "--batch-size",
        "256",
        "-o",
        str(tmp_path / "run"),
    )
    assert trained.returncode == 0, trained.stderr
    figures, summary = json.loads(costed.stdout), json.loads(trained.stdout)
    assert (figures["params"], figures["madds"]) == (summary["params"], summary["madds"])
    # without a task the family's default input sizes give another model (the report)
    default = json.loads(lwnas(tmp_path, "cost", str(path), "--no-memory", "--json").stdout)
    assert default["params"] != summary["params"]


def test_cost_of_a_folder_shows_progress_and_the_memory_it_measured(tmp_path):
    for name, width in (("a", 16), ("b", 32)):
        (tmp_path / f"{name}.yaml").write_text(
            f"family: encoder\nd_model: {width}\nheads: 2\n"
            "reference:\n  table: X\n  row: r\n  params: {total: 1.0M}\n"
        )
    done = lwnas(tmp_path, "cost", str(tmp_path), "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("costing")] == [
        f"costing [1/2] {tmp_path / 'a.yaml'}",
        f"costing [2/2] {tmp_path / 'b.yaml'}",
    ]
    header, _, *rows = done.stdout.splitlines()
    assert header.endswith("| peak memory fwd+bwd, batch 1 (cpu) |") and len(rows) == 2
    assert all(re.search(r"\| [0-9.]+[KMG]?B \|$", row) for row in rows), done.stdout
    without = lwnas(tmp_path, "cost", str(tmp_path), "--format", "markdown", "--no-memory")
    assert "peak memory" not in without.stdout and without.stdout.splitlines()[0].endswith("| verdict |")


def test_config_file_duplicate_key_names_file_and_line(tmp_path):
    """Configuration files are read like study files: a key given twice is refused, with its line."""
    path = tmp_path / "twice.yaml"
    path.write_text("family: encoder\nd_model: 32\nheads: 4\nd_model: 64\n")
    result = lwnas(tmp_path, "cost", str(path), "--no-memory", timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"error {path}:4: `d_model` is given twice in one mapping (first on line 2)"


def test_config_file_alias_bomb_and_bad_bytes_are_located(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb.write_text("family: encoder\nreference:\n" + "".join(f"  {line}\n" for line in levels))
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("family: encoder\nreference: {table: caf\xe9}\n".encode("latin-1"))
    for path, message in ((bomb, "7: holds more than 100,000 values"), (latin, "2: not UTF-8: byte 0xe9")):
        result = lwnas(tmp_path, "cost", str(path), timeout=120)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.startswith(f"error {path}:{message}"), result.stderr


def test_cost_at_a_task_of_another_family_names_the_file(tmp_path):
    config = tmp_path / "vqa.yaml"
    config.write_text("family: mcan\nd_model: 32\nheads: 2\nlayers: 1\n")
    done = lwnas(tmp_path, "cost", str(config), "--task", "digits", "--no-memory")
    assert done.returncode == 2, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("error")] == [
        f"error {config}: family: task `digits` trains family `encoder`, but the configuration is `mcan`"
    ]
