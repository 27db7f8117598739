"""What the docs and the help say stays true: the quickstart study the docs show is the shipped one,
the benchmark pages name only flags the scripts have, help text is never broken mid-sentence, and a
study file given where a configuration belongs says so."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LWNAS = str(Path(sys.executable).parent / "lwnas")
ALL_SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))


def run(*cmd: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def test_the_docs_quickstart_is_the_shipped_study():
    text = (ROOT / "docs/studies.md").read_text()
    example = text.split("## A complete example", 1)[1]
    shown = re.search(r"```yaml\n(.*?)```", example, re.S).group(1)
    assert yaml.safe_load(shown) == yaml.safe_load((ROOT / "studies/quickstart.yaml").read_text())


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


def _script_flags(script: str) -> set[str]:
    done = run(sys.executable, f"bench/{script}", "--help")
    assert done.returncode == 0, done.stderr
    return _flags(done.stdout)


def test_benchmark_docs_name_only_flags_the_scripts_have():
    claims: dict[str, set[str]] = {}  # script -> flags the docs say it takes
    for page in ("benchmarks.md", "performance.md"):
        text = (ROOT / "docs" / page).read_text()
        intro, *sections = re.split(r"\n## ", text)
        scripts = []
        for section in sections:  # a section titled with a script: every flag it names is that script's
            title = re.match(r"`bench/(\w+\.py)`", section)
            if title:
                scripts.append(title.group(1))
                claims.setdefault(title.group(1), set()).update(_flags(section))
        for script in scripts:  # the introduction speaks of every script the page describes ...
            claims[script].update(_flags(intro))
        for sentence in re.split(r"(?<=\.)\s", intro):  # ... and "every script" of every script in bench/
            if re.search(r"\bevery (benchmark )?script\b", sentence, re.I):
                for script in ALL_SCRIPTS:
                    claims.setdefault(script, set()).update(_flags(sentence))
        for script, args in re.findall(r"python bench/(\w+\.py)([^`\n]*)", text):  # commands as written
            claims.setdefault(script, set()).update(_flags(args))
    assert claims
    wrong = {script: sorted(flags - _script_flags(script)) for script, flags in claims.items()}
    assert not {s: f for s, f in wrong.items() if f}, wrong


COMMANDS = [
    ["sweep"],
    ["resume"],
    ["status"],
    ["export"],
    ["dashboard"],
    ["cost"],
    ["train"],
    ["evaluate"],
    ["space", "validate"],
    ["space", "show"],
    ["space", "sample"],
    ["space", "export-nni"],
]


def test_help_text_is_not_broken_mid_sentence():
    with ThreadPoolExecutor(4) as pool:  # each start imports torch: overlap them
        helps = list(pool.map(lambda command: run(LWNAS, *command, "--help", COLUMNS="400"), COMMANDS))
    for command, done in zip(COMMANDS, helps):
        assert done.returncode == 0, done.stderr
        description = done.stdout.split("Usage:", 1)[1].split("╭", 1)[0].splitlines()[1:]
        lines = [line.strip() for line in description if line.strip()]
        assert lines, done.stdout
        # at 400 columns nothing wraps: a line that ends without punctuation was broken in the source
        broken = [line for line in lines if not line.endswith((".", ":", ")", "`"))]
        assert not broken, (command, broken)


@pytest.mark.parametrize("command", [["train"], ["cost"]])
def test_a_study_file_where_a_configuration_belongs_says_so(command):
    done = run(LWNAS, *command, "studies/quickstart.yaml")
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert errors == [
        "error studies/quickstart.yaml: this is a study file (it has a search `space`), not one "
        "configuration; use `lwnas sweep` to search it, or `lwnas space show|sample|validate`"
    ], done.stderr


@pytest.mark.slow
def test_the_readme_cost_commands_run_on_the_readme_configuration(tmp_path):
    text = (ROOT / "README.md").read_text()
    config = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("family:"))
    (tmp_path / "my-config.yaml").write_text(config)
    commands = re.findall(r"^lwnas (cost my-config\.yaml[^#\n]*)", text, re.M)
    assert any("--task" in c for c in commands), commands
    for command in commands:  # as written, without the memory measurement (it is not what is checked)
        done = subprocess.run(
            [LWNAS, *command.split(), "--no-memory"], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (command, done.stderr)
