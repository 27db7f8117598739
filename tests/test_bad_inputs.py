"""Bad inputs outside study files, through the installed `lwnas` script: configuration files, tasks
and their data, storage URLs and command-line options. Each is one `error ...` line (or the CLI's
usage error), a non-zero exit and no traceback. docs/studies.md ("Bad inputs and what you see")
lists every class with its test; the last test here checks that each listed test exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
from helpers.procs import ROOT, lwnas

ANSI = re.compile(r"\x1b\[[0-9;]*m")
GOOD = "family: encoder\nd_model: 32\nheads: 4\nlayers: 1\ntraining: {epochs: 1}\n"


@dataclass(frozen=True)
class Bad:
    id: str
    files: dict[str, str]  # written to the working directory first
    args: tuple[str, ...]
    seen: str  # the line the user sees (a fragment of it)
    exit_code: int = 2


CASES = [
    Bad("config-missing-file", {}, ("train", "missing.yaml", "--task", "digits"), "error missing.yaml: no such file"),
    Bad(
        "config-not-a-mapping",
        {"c.yaml": "- d_model\n- heads\n"},
        ("train", "c.yaml", "--task", "digits"),
        "error c.yaml: expected a mapping of knobs, got list",
    ),
    Bad(
        "config-unknown-key",
        {"c.yaml": "family: encoder\nd_modle: 32\n"},
        ("train", "c.yaml", "--task", "digits"),
        "error c.yaml: d_modle: unknown key (did you mean `d_model`?)",
    ),
    Bad(
        "config-duplicate-key",
        {"c.yaml": "family: encoder\nd_model: 64\nd_model: 32\n"},
        ("train", "c.yaml", "--task", "digits"),
        "error c.yaml:3: `d_model` is given twice in one mapping (first on line 2)",
    ),
    Bad(
        "config-python-tag",
        {"c.yaml": "family: !!python/object/apply:os.system ['touch pwned']\n"},
        ("train", "c.yaml", "--task", "digits"),
        "only plain YAML values are allowed (tags like !!python/... are refused)",
    ),
    Bad(
        "config-rule",
        {"c.yaml": "family: encoder\nd_model: 30\nheads: 4\n"},
        ("train", "c.yaml", "--task", "digits"),
        "error c.yaml: d_model: 30 must be divisible by `heads` (4)",
    ),
    Bad(
        "unknown-task",
        {"c.yaml": GOOD},
        ("train", "c.yaml", "--task", "digitz"),
        "error unknown task 'digitz' (did you mean `digits`?)",
        1,
    ),
    Bad(
        "features-data-missing",
        {"c.yaml": GOOD},
        ("train", "c.yaml", "--task", "features", "--data", "none.npz"),
        "error features: no such file or directory: ",
        1,
    ),
    Bad(
        "override-out-of-range",
        {"c.yaml": GOOD},
        ("train", "c.yaml", "--task", "digits", "--epochs", "0"),
        "error epochs: must be an integer >= 1, got 0",
    ),
    Bad(
        "override-not-finite",
        {"c.yaml": GOOD},
        ("train", "c.yaml", "--task", "digits", "--lr", "nan"),
        "error lr: must be a finite number > 0, got nan",
    ),
    Bad("option-wrong-type", {}, ("sweep", "s.yaml", "--trials", "many"), "Invalid value for '--trials'"),
    Bad("unknown-option", {}, ("sweep", "s.yaml", "--trails", "3"), "No such option: --trails"),
    Bad("unknown-command", {}, ("swep", "s.yaml"), "No such command 'swep'"),
    Bad(
        "storage-unknown-scheme",
        {},
        ("status", "quickstart", "--storage", "sqlit:///lwnas.db"),
        "error cannot open storage sqlit:///lwnas.db",
        1,
    ),
    Bad(
        "storage-file-missing",
        {},
        ("status", "quickstart", "--storage", "sqlite:///lwnas.db"),
        "error no database at sqlite:///lwnas.db: ",
        1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line(tmp_path, case):
    for name, text in case.files.items():
        (tmp_path / name).write_text(text)
    result = lwnas(tmp_path, *case.args)
    output = ANSI.sub("", result.stdout + result.stderr)
    assert result.returncode == case.exit_code, output
    assert case.seen in output, output
    assert "Traceback" not in output, output
    assert not (tmp_path / "pwned").exists()  # a tag in a file is never run


def test_features_data_without_labels_names_what_it_has(tmp_path):
    (tmp_path / "c.yaml").write_text(GOOD)
    np.savez(tmp_path / "data.npz", regions=np.zeros((4, 2, 3), dtype=np.float32))
    result = lwnas(tmp_path, "train", "c.yaml", "--task", "features", "--data", "data.npz")
    assert (
        result.returncode == 1
        and f"error features: {tmp_path / 'data.npz'} lacks `labels` (has: regions)" in result.stderr
    )


def test_a_study_not_in_the_storage_names_those_that_are(tmp_path):
    import optuna

    url = "sqlite:///lwnas.db"
    optuna.create_study(study_name="quickstart", storage=f"sqlite:///{tmp_path / 'lwnas.db'}")
    result = lwnas(tmp_path, "status", "quickstrat", "--storage", url)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"error no study 'quickstrat' in {url}; studies there: quickstart" in ANSI.sub("", result.stderr)


# ---- the catalogue in docs/studies.md ---------------------------------------------------------------
SECTION = "## Bad inputs and what you see"
REFERENCE = re.compile(r"(tests/[\w/]+\.py)::(\w+)(?:\[([^\]]+)\])?")


def catalogue_rows() -> list[str]:
    text = (ROOT / "docs" / "studies.md").read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.find("\n## ", 1)] if "\n## " in section[1:] else section
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| class")]


def test_catalogue_lists_forty_classes_each_with_a_test_that_exists():
    rows = catalogue_rows()
    assert len(rows) >= 40, len(rows)
    for row in rows:
        references = REFERENCE.findall(row)
        assert references, f"no test named for: {row}"
        for file, name, case_id in references:
            source = (ROOT / file).read_text()
            assert re.search(rf"^def {name}\(", source, re.M), f"{file} has no test {name}: {row}"
            if case_id:
                assert f'"{case_id}"' in source, f"{file} has no case {case_id!r}: {row}"
