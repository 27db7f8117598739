"""Errors lwnas reports to a user: each names what is wrong, where, and the rule broken.

``LwnasError`` is the base of every error the project raises about a user's input or environment.
The ``lwnas`` command catches it once (``tuners.cli.run``) and prints its ``lines()`` without a
traceback; anything else that escapes is a bug in lwnas and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class LwnasError(Exception):
    """An error a user can act on; printed as one line per problem, never with a traceback."""

    exit_code = 1

    def lines(self) -> list[str]:
        """What the CLI prints, one line each (without the leading ``error``)."""
        return str(self).splitlines() or [type(self).__name__]


class ConfigError(LwnasError, ValueError):
    """One or more knobs of an architecture configuration break a rule.

    ``problems`` holds one ``(knob, message)`` pair per broken rule, so callers (the study-file
    validator, the CLI) can report every problem at once rather than the first.
    """

    exit_code = 2

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("\n".join(f"{knob}: {message}" for knob, message in problems))

    def lines(self) -> list[str]:
        return [f"{knob}: {message}" for knob, message in self.problems]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """Return `` (did you mean `x`?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""
