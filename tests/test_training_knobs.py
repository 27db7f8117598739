"""The one table of training knobs: its readers agree, and a bad value is refused where it is read.

`lwnas space validate`, `lwnas sweep` and `lwnas train` run as the installed script, the way a user
types them; each must name the file, the line, the key, the value and the rule, and the sweep must
refuse before Ray starts.
"""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
from pathlib import Path

import pytest
from helpers.procs import lwnas

from searchspace.errors import ConfigError
from searchspace.training import TRAINING, TRAINING_DEFAULTS, TRAINING_KNOBS
from trainers.loop import TrainSettings

REPO = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# (line as written, key, the rule's words, the value as shown)
BAD = [
    ("threads: many", "threads", "must be an integer >= 1 or null", "got 'many'"),
    ("grad_clip: -3", "grad_clip", "must be a finite number >= 0", "got -3"),
    ("batch_size: 0", "batch_size", "must be an integer >= 1", "got 0"),
    ("lr: .nan", "lr", "must be a finite number > 0", "got nan"),
    ("schedule: cosine-restarts", "schedule", "must be one of cosine, step, noam, constant", "got 'cosine-restarts'"),
    ("batch_size: true", "batch_size", "must be an integer >= 1", "got True"),
]


def study_with(*lines: str) -> str:
    """A small valid study but for its `training` section, whose first line is line 5."""
    return (
        "task: digits\nobjectives: [accuracy, params]\nbudget: {trials: 2, epochs: 1}\ntraining:\n"
        + "".join(f"  {line}\n" for line in lines)
        + "space:\n  d_model: {choice: [16, 32]}\n"
    )


def assert_refused(result: subprocess.CompletedProcess, file: str, line: int, key: str, *words: str) -> None:
    output = ANSI.sub("", result.stderr + result.stdout)
    assert result.returncode == 2, output
    assert f"error {file}:{line}: training.{key}: " in output, output
    for word in words:
        assert word in output, output
    assert "Traceback" not in output, output


@pytest.mark.parametrize("line, key, rule, shown", BAD, ids=[b[0] for b in BAD])
def test_space_validate_refuses_bad_training_value(tmp_path, line, key, rule, shown):
    (tmp_path / "study.yaml").write_text(study_with(line))
    assert_refused(lwnas(tmp_path, "space", "validate", "study.yaml"), "study.yaml", 5, key, rule, shown)


def test_sweep_refuses_bad_training_values_before_ray_starts(tmp_path):
    text = study_with("threads: many", "grad_clip: -3")
    (tmp_path / "study.yaml").write_text(text)
    result = lwnas(tmp_path, "sweep", "study.yaml", "--storage", f"sqlite:///{tmp_path / 'lwnas.db'}")
    assert_refused(result, "study.yaml", 5, "threads", "got 'many'")
    assert (
        "study.yaml:6: training.grad_clip: must be a finite number >= 0 (0 turns clipping off), got -3" in result.stderr
    )
    assert "Ray" not in result.stderr and not (tmp_path / "lwnas.db").exists()


@pytest.mark.parametrize("line, key, rule, shown", BAD, ids=[b[0] for b in BAD])
def test_train_refuses_bad_training_value_of_a_configuration(tmp_path, line, key, rule, shown):
    (tmp_path / "config.yaml").write_text(f"family: encoder\nd_model: 32\ntraining:\n  epochs: 1\n  {line}\n")
    result = lwnas(tmp_path, "train", "config.yaml", "--task", "digits", "--out", "run")
    assert_refused(result, "config.yaml", 5, key, rule, shown)
    assert not (tmp_path / "run").exists()


def test_train_settings_are_built_from_the_table():
    fields = {f.name: f.default for f in dataclasses.fields(TrainSettings)}
    assert fields == {k.name: k.default for k in TRAINING}
    assert TRAINING_DEFAULTS == {k: fields[k] for k in TRAINING_KNOBS}
    for line, key, rule, _ in BAD:
        value = {
            "many": "many",
            "-3": -3,
            "0": 0,
            ".nan": math.nan,
            "cosine-restarts": "cosine-restarts",
            "true": True,
        }[line.split(": ")[1]]
        with pytest.raises(ConfigError, match=re.escape(f"{key}: {rule}")):
            TrainSettings(**{key: value})
    with pytest.raises(ConfigError) as info:  # every problem at once, unknown keys included
        TrainSettings.from_dict({"lr": -1, "epoch": 3})
    assert [k for k, _ in info.value.problems] == ["lr", "epoch"]


def test_docs_table_lists_every_training_knob_with_its_default():
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `(\w+)` \| ([^|]+) \|", (REPO / "docs/tasks.md").read_text(), re.M)}
    for knob in TRAINING:
        assert knob.name in rows, f"docs/tasks.md has no row for `{knob.name}`"
        shown = rows[knob.name].strip().strip("`")
        assert shown == (
            "null"
            if knob.default is None
            else str(knob.default).lower()
            if isinstance(knob.default, bool)
            else str(knob.default)
        ), (knob.name, shown)
