"""``--allow-plugin MODULE:CLASS``: the one way to import a task class no installed package registered.

A study, configuration or checkpoint names a task; lwnas looks it up among the built-in tasks and the
plugins registered in the ``lwnas.tasks`` entry-point group (``trainers/tasks/registry.py``). Importing any
other module is the user's explicit choice on the command line, never a field of a file.
"""

from __future__ import annotations

from typing import Annotated

import typer

AllowPlugin = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-plugin",
        metavar="MODULE:CLASS",
        help="Import this task class although no installed package registers it (repeatable); a file may then "
        "name it as its task. Registered plugins (entry-point group lwnas.tasks) need no flag.",
    ),
]


def allow(references: list[str] | None) -> None:
    """Allow ``references`` (the flag's values) for this process; a malformed one is a usage error (exit 2)."""
    if not references:  # the registry imports torch (trainers/__init__.py): a command that allows nothing need not
        return
    from searchspace import ConfigError
    from trainers.tasks.registry import allow_plugins

    try:
        allow_plugins(references or ())
    except ValueError as exc:
        raise ConfigError([("--allow-plugin", str(exc))]) from None
