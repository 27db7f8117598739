"""Every `lwnas ...` written in README.md and docs/*.md exists: the command, its subcommand and every
option it uses, checked against the command tree the installed `lwnas` script runs."""

from __future__ import annotations

import copy

import pytest
import typer
from helpers.documented import ROOT, Invocation, documented_files, invocations, problems
from helpers.procs import lwnas

from tuners.cli.main import app


@pytest.fixture(scope="module")
def tree():
    return typer.main.get_command(app)


def test_the_script_runs_this_tree(tmp_path, tree):
    """The installed `lwnas` lists the same commands as the tree the checks read."""
    result = lwnas(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    for name in tree.list_commands(None):
        assert f" {name} " in result.stdout, (name, result.stdout)


def test_docs_have_invocations_to_check():
    found = [i for p in documented_files() for i in invocations(p)]
    assert len(found) > 40
    assert {"README.md", "docs/dashboard.md", "docs/studies.md"} <= {i.file for i in found}
    assert any(i.tokens()[:1] == ["dashboard"] and "--port" in i.tokens() for i in found)


@pytest.mark.parametrize("path", documented_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_documented_command_and_option_exists(path, tree):
    found = [f"{i.file}:{i.line}: {i.text}: {m}" for i in invocations(path) for m in problems(i, tree)]
    assert not found, "\n".join(found)


def line(text: str) -> Invocation:
    return Invocation("fake.md", 1, text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("lwnas sweep studies/q.yaml --bogus 3", "`lwnas sweep` has no option `--bogus`"),
        ("lwnas sweeep studies/q.yaml", "`lwnas sweeep`: no such command"),
        ("lwnas space validat studies/", "`lwnas space validat`: no such command"),
        ("lwnas space", "`lwnas space` needs a subcommand"),
        ("lwnas dashboard --storage sqlite:///x.db --prot 8600", "`lwnas dashboard` has no option `--prot`"),
        ("lwnas train c.yaml --task digits [--epochz N]", "`lwnas train` has no option `--epochz`"),
    ],
)
def test_a_wrong_doc_line_is_caught(tree, text, expected):
    assert any(expected in p for p in problems(line(text), tree)), problems(line(text), tree)


def test_removing_a_documented_option_fails_the_check(tree):
    """The README's `lwnas export quickstart --trials pareto -o exported/` passes, and fails once
    `export` loses `--trials`."""
    readme = [i for i in invocations(ROOT / "README.md") if i.text.startswith("lwnas export quickstart")]
    assert readme and not problems(readme[0], tree)
    pruned = copy.deepcopy(tree)
    export = pruned.commands["export"]
    export.params = [p for p in export.params if "--trials" not in p.opts]
    assert problems(readme[0], pruned) == ["`lwnas export` has no option `--trials`"]
    del pruned.commands["dashboard"]
    dashboard = [i for i in invocations(ROOT / "README.md") if i.text.startswith("lwnas dashboard")]
    assert dashboard and all(problems(i, pruned) for i in dashboard)


def test_fenced_and_inline_invocations_are_read(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "Run `lwnas status NAME --storage URL` here.\n\n```bash\n"
        "pip install -e . && LWNAS_STORAGE=x lwnas dashboard --port 1   # a comment --nope\n```\n"
    )
    got = [(i.line, i.text) for i in invocations(doc, "x.md")]
    assert got == [(1, "lwnas status NAME --storage URL"), (4, "lwnas dashboard --port 1")]
