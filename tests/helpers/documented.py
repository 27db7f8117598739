"""The `lwnas ...` invocations written in README.md and docs/*.md, and a check of each against the
real command tree of the `lwnas` script (Typer's click tree of ``tuners.cli.main.app``, which the script runs)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INLINE = re.compile(r"`(lwnas [^`]+)`")
SEPARATORS = re.compile(r"&&|\|\||;|\|")


@dataclass(frozen=True)
class Invocation:
    file: str
    line: int
    text: str  # from `lwnas` on, as written

    def tokens(self) -> list[str]:
        """Words after `lwnas`; optional parts (`[--json]`) count as written, `...` is dropped."""
        words = shlex.split(self.text, comments=True)[1:]
        return [w.strip("[]") for w in words if w.strip("[].")]


def documented_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def invocations(path: Path, name: str | None = None) -> list[Invocation]:
    """Every `lwnas ...` in the file: command lines in fenced blocks and `lwnas ...` code spans."""
    found, fenced = [], False
    name = name or str(path.relative_to(ROOT))
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            for part in SEPARATORS.split(line.split(" #")[0]):
                words = part.split()
                if "lwnas" in words:  # after env assignments such as LWNAS_STORAGE=... lwnas dashboard
                    found.append(Invocation(name, number, " ".join(words[words.index("lwnas") :])))
        else:
            found.extend(Invocation(name, number, m[1]) for m in INLINE.finditer(line))
    return found


def problems(invocation: Invocation, root: Any) -> list[str]:
    """What in ``invocation`` the command tree lacks: a command, a subcommand or an option.

    ``root`` is ``typer.main.get_command(app)``: a click-style group whose ``commands`` map names
    to commands (Typer ships its own copy of click, so the classes are not ``click``'s).
    """
    command, path, out = root, ["lwnas"], []
    for word in invocation.tokens():
        if word == "--":
            break
        if hasattr(command, "commands") and not word.startswith("-"):
            if word not in command.commands:
                return [f"`{' '.join(path)} {word}`: no such command (have: {', '.join(sorted(command.commands))})"]
            command, path = command.commands[word], [*path, word]
            continue
        if word.startswith("-") and not re.fullmatch(r"-\d[\d.]*", word):
            option = word.split("=", 1)[0]
            known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
            if option not in known:
                out.append(f"`{' '.join(path)}` has no option `{option}`")
    if hasattr(command, "commands") and command is not root and not out:
        out.append(f"`{' '.join(path)}` needs a subcommand")
    return out
