"""The README's quickstart as a new user types it: the commands are read from README.md itself and
run through the installed `lwnas` script in a fresh directory holding only the study file.

sweep (with `--trials 1`, and the study's epochs cut to 2 in the copy), status, export, train the exported file (one
epoch), and the dashboard the sweep points to answering on its health endpoint. The hints the sweep
prints are checked against the command tree too (they once named a command that did not exist).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
from helpers.documented import ROOT, Invocation, invocations, problems
from helpers.procs import kill_session, proc_env, run_proc, start_dashboard

from tuners.cli.main import app

pytestmark = pytest.mark.slow

HINT = re.compile(r"^[a-z ]+: (lwnas .+)$", re.M)


def quickstart_commands() -> list[str]:
    """The README's first lwnas commands: the sweep, then status, export and train."""
    found = [i.text for i in invocations(ROOT / "README.md")]
    first = next(n for n, text in enumerate(found) if text.startswith("lwnas sweep studies/quickstart.yaml"))
    commands = found[first : first + 4]
    assert [c.split()[1] for c in commands] == ["sweep", "status", "export", "train"], commands
    return commands


def run(tmp_path: Path, command: str, log: str, timeout: float = 300) -> str:
    rc, output = run_proc(shlex.split(command), tmp_path, proc_env(tmp_path), tmp_path / log, timeout)
    assert rc == 0, f"`{command}` exited with {rc}:\n{output[-3000:]}"
    assert "Traceback" not in output, output[-3000:]
    return output


def test_readme_quickstart_end_to_end(tmp_path):
    sweep, status, export, train = quickstart_commands()
    (tmp_path / "studies").mkdir()
    # the README's study with 2 epochs instead of 10: the commands are the README's, the training shorter
    text = (ROOT / "studies" / "quickstart.yaml").read_text()
    assert "budget: {trials: 16, epochs: 10," in text
    (tmp_path / "studies" / "quickstart.yaml").write_text(text.replace("epochs: 10,", "epochs: 2,"))

    output = run(tmp_path, f"{sweep} --trials 1", "sweep.log")
    assert "[1/1] trial 0 complete" in output and (tmp_path / "lwnas.db").exists()
    tree = typer.main.get_command(app)
    hints = HINT.findall(output)
    assert any(h.startswith("lwnas dashboard") for h in hints), output
    for hint in hints:  # every command the sweep tells the user to type exists
        assert not problems(Invocation("sweep output", 0, hint), tree), hint

    assert "quickstart" in run(tmp_path, status, "status.log")
    run(tmp_path, export, "export.log")
    exported = sorted((tmp_path / "exported").glob("quickstart-trial-*.yaml"))
    assert exported, list(tmp_path.iterdir())
    train_command = train.replace("exported/quickstart-trial-NNNN.yaml", str(exported[0].relative_to(tmp_path)))
    assert train_command != train
    trained = run(tmp_path, f"{train_command} --epochs 1", "train.log")
    assert "trained digits" in trained and (tmp_path / "runs" / "latest" / "checkpoint.pt").exists()

    storage = next(h for h in hints if h.startswith("lwnas dashboard")).split("--storage ")[1].split()[0]
    proc, address = start_dashboard(storage, tmp_path, proc_env(tmp_path), tmp_path / "dashboard.log")
    kill_session(proc)
    assert address.startswith("http://127.0.0.1:")
