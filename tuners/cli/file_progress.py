"""Progress over several files (``lwnas cost DIR``, ``lwnas space validate DIR``), on stderr.

On a terminal a transient bar; on logs and pipes one line per file as its work starts, so a long
run is never silent. stdout carries only the command's result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress


class FileProgress:
    """``with FileProgress(err, files, "costing") as p: for f in files: p.start(f); ...``"""

    def __init__(self, console: Console, total: int, verb: str, bar: bool = True):
        self.console, self.total, self.verb, self.done = console, total, verb, 0
        self.lines = total > 1 and not console.is_terminal
        self.bar = Progress(console=console, transient=True, disable=not (bar and console.is_terminal))
        self.job: Any = None

    def __enter__(self) -> FileProgress:
        self.bar.__enter__()
        self.job = self.bar.add_task(self.verb, total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def start(self, path: Path) -> None:
        """Announce the next file (a line off a terminal; the bar's label on one)."""
        self.done += 1
        label = f"{self.verb} [{self.done}/{self.total}] {path}"
        if self.lines:
            self.console.print(escape(label), highlight=False)
        self.bar.update(self.job, description=escape(label), completed=self.done - 1)
