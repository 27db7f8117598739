"""A knob is written once, as a field of ArchConfig (or TrainSettings) carrying its metadata; the knob
table (searchspace/knobs.py) is read from those fields. docs/knobs.md is generated from it, every rule
reads only the knobs it declares, and a knob added as one field line is checked by ArchConfig and a
study's `space`, documented, drawn or recorded by the dashboard's sample and demanded by the model
registry's coverage check."""

from __future__ import annotations

import inspect
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from searchspace.config import ArchConfig, type_problems
from searchspace.knob_fields import WIDTHS, arch_knobs
from searchspace.knob_fields import knob as knob_field
from searchspace.knobs import ARCH, FAMILIES, RULES_TABLE, TRAINING, VOCABULARY
from searchspace.knobs_doc import COMMAND
from searchspace.training import TrainSettings

ROOT = Path(__file__).resolve().parents[1]


def test_docs_knobs_md_is_generated_from_the_table():
    done = subprocess.run(
        [sys.executable, "-m", "searchspace.knobs_doc"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (ROOT / "docs/knobs.md").read_text() == done.stdout, (
        f"docs/knobs.md is stale: regenerate it with `{COMMAND}`"
    )


def test_the_table_refuses_a_malformed_knob():
    @dataclass(frozen=True)
    class Malformed:
        x: int = knob_field(3, "help", section=WIDTHS, families=("encoder",), limit=4)

    with pytest.raises(ValueError, match="knob table: x: a knob of some families only defaults to None"):
        arch_knobs(Malformed)

    @dataclass(frozen=True)
    class Unlimited:
        y: int = knob_field(3, "help", section=WIDTHS)

    with pytest.raises(ValueError, match="knob table: y: int and grid knobs, and only they, have a limit"):
        arch_knobs(Unlimited)

    @dataclass(frozen=True)
    class NotOptional:
        z: int = knob_field(None, "help", section=WIDTHS, limit=4)  # the mistake: None, but not `int | None`

    with pytest.raises(ValueError, match="knob table: z: a knob is `T | None` exactly when it defaults to None"):
        arch_knobs(NotOptional)


def test_every_field_is_written_out_in_its_class():
    """A reader, an IDE and mypy see every knob: each is a line `name: type = knob(...)` of the class."""
    for cls, table in ((ArchConfig, ARCH), (TrainSettings, TRAINING)):
        source = inspect.getsource(cls)
        written = re.findall(r"^    (\w+): [^=]+ = (?:knob|setting)\(", source, re.M)
        assert written == [k.name for k in table], cls.__name__


def test_every_knob_is_complete_and_named_once():
    assert len(set(VOCABULARY)) == len(VOCABULARY)
    assert [f.name for f in fields(ArchConfig)] == [k.name for k in ARCH]
    for knob in ARCH:
        assert knob.help, knob.name  # the rest of a knob's shape is checked by ArchKnob itself
        if knob.activation is not None:  # the rule that refuses it where inactive reads it and its condition
            assert any(r.activation and {knob.name, *knob.activation.knobs} <= r.reads for r in RULES_TABLE), knob.name
    for r in RULES_TABLE:  # and an activation rule belongs to a knob with `active_when`
        assert not r.activation or any(k.active_when is not None and k.name in r.reads for k in ARCH), r.name


# Values each knob may take in the random configurations below (valid and invalid between knobs).
_VALUES = {
    "int": [1, 2, 3, 4, 6, 8, 12],
    "bool": [True, False],
    "float": [0.0, 0.1],
    "grid": [(2, 3), (4, 4)],
    "pattern": [None, "(0,0)", "(0x3)", "(0,1,1,0)", "(0,0,1,1,2,2)"],
}


class _Recorded(ArchConfig):
    """An ``ArchConfig`` that notes every knob read from it (through properties and methods too)."""

    def __getattribute__(self, name):
        if name in _KNOBS:
            object.__getattribute__(self, "_read").add(name)
        return object.__getattribute__(self, name)


_KNOBS = {k.name for k in ARCH}


def _random_config(rng: random.Random) -> _Recorded | None:
    family = rng.choice(FAMILIES)
    values = {"family": family}
    for knob in ARCH:
        if knob.name != "family" and family in knob.families and rng.random() < 0.5:
            options = list(knob.choices) if knob.kind == "choice" else _VALUES[knob.kind]
            values[knob.name] = rng.choice(options + ([None] if knob.optional else []))
    if type_problems(values):
        return None
    cfg = object.__new__(_Recorded)
    object.__setattr__(cfg, "_read", set())
    for f in fields(ArchConfig):
        object.__setattr__(cfg, f.name, values.get(f.name, f.default))
    ArchConfig._normalise(cfg)  # fill defaults as a built config has them, without the rules
    return cfg


def test_every_rule_reads_only_the_knobs_it_declares():
    rng, checked = random.Random(0), 0
    while checked < 2000:
        cfg = _random_config(rng)
        if cfg is None:
            continue
        checked += 1
        for r in RULES_TABLE:
            cfg._read.clear()
            list(r.check(cfg))
            # the family is fixed for a whole space, so a rule may read it without declaring it
            assert cfg._read - {"family"} <= r.reads, (r.name, sorted(cfg._read - r.reads))


# ---- a knob added as one field ---------------------------------------------------------------------
# The whole diff of a knob that is only checked and documented (docs/architecture.md, "Adding a knob"):
# one field line at the end of ArchConfig's fields, then docs/knobs.md regenerated.
PROBE = (
    '    probe_width: int | None = knob(None, "a knob the table test adds: checked and documented, read by no '
    'layer", section=WIDTHS, families=("encoder", "retrieval"), family_defaults={"encoder": 3, "retrieval": 3}, '
    "limit=16)\n"
)
STUDY = """task: digits
objectives: [accuracy, params]
budget: {trials: 2, epochs: 1}
space:
  d_model: 32
  probe_width: {choice: [2, %s]}
"""


def _copy_with_probe(tmp_path: Path) -> Path:
    copy = tmp_path / "lwnas"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", ".*cache"))
    config = copy / "searchspace/config.py"
    text = config.read_text()
    end = "\n\n    def __post_init__(self) -> None:"
    assert text.count(end) == 1, "the test adds a field after ArchConfig's last, found by the method after it"
    config.write_text(text.replace(end, "\n" + PROBE.rstrip("\n") + end, 1))
    return copy


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(copy)},
    )


CHECKS = """
import numpy as np, searchspace
from pathlib import Path
assert Path(searchspace.__file__).resolve().parent == Path.cwd() / "searchspace", searchspace.__file__
from searchspace import ArchConfig, ConfigError
assert ArchConfig().probe_width == 3 and ArchConfig(probe_width=5).to_dict()["probe_width"] == 5
for bad in ({"probe_width": 99}, {"probe_width": "wide"}, {"family": "mcan", "probe_width": 2}):
    try:
        ArchConfig(**bad)
    except ConfigError as exc:
        print("config", bad, exc.problems)
    else:
        raise AssertionError(bad)
from dashboards.sample import config_of, draw_params
print("dashboard", config_of(draw_params(np.random.default_rng(0)))["probe_width"])
"""


def test_a_knob_added_as_one_field_is_checked_documented_and_demanded(tmp_path):
    copy = _copy_with_probe(tmp_path)
    done = _run(copy, "-c", CHECKS)
    assert done.returncode == 0, done.stderr
    assert (
        "config {'probe_width': 99} [('probe_width', \"must be at most 16 (the knob's limit), got 99\")]" in done.stdout
    )
    assert "config {'probe_width': 'wide'} [('probe_width', \"must be an integer, got 'wide'\")]" in done.stdout
    assert (
        "config {'family': 'mcan', 'probe_width': 2} [('probe_width', 'does not apply to family `mcan` "
        "(used by encoder, retrieval)')]"
    ) in done.stdout
    assert "dashboard 3" in done.stdout  # every sample trial records it, at its default

    cli = "import sys; from tuners.cli.main import run; sys.argv[0] = 'lwnas'; run()"
    (copy / "ok.yaml").write_text(STUDY % 4)
    (copy / "bad.yaml").write_text(STUDY % 40)
    ok = _run(copy, "-c", cli, "space", "validate", "ok.yaml")
    assert ok.returncode == 0, ok.stderr
    bad = _run(copy, "-c", cli, "space", "validate", "bad.yaml")
    assert bad.returncode != 0
    assert "bad.yaml:6: space.probe_width.choice: must be at most 16 (the knob's limit), got 40" in bad.stderr, (
        bad.stderr
    )

    docs = _run(copy, "-m", "searchspace.knobs_doc")
    assert docs.returncode == 0, docs.stderr
    assert (
        "| `probe_width` | 3 | a knob the table test adds: checked and documented, read by no layer; "
        "`encoder`, `retrieval` only |" in docs.stdout
    )
    assert "`probe_width`" in docs.stdout.split("## Limits", 1)[1].split("| 16 |")[0].splitlines()[-1]

    registry = _run(
        copy,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",  # one process: the copy's pyproject asks pytest-xdist for a worker per core
        "tests/test_models_registry.py",
        "-k",
        "exercises_every_knob",
    )
    assert registry.returncode == 1, registry.stdout
    assert "probe_width (encoder), probe_width (retrieval)" in registry.stdout, registry.stdout
