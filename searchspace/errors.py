"""Errors lwnas reports to a user: each names what is wrong, where, and the rule broken.

``LwnasError`` is the base of every error the project raises about a user's input or environment.
The ``lwnas`` command catches it once (``tuners.cli.main.run``) and prints its ``lines()`` without a
traceback; anything else that escapes is a bug in lwnas and keeps its traceback.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable
from typing import Any

MAX_LINE = 2000  # characters of one printed problem; a value quoted in it is cut well before (see shown)


class LwnasError(Exception):
    """An error a user can act on; printed as one line per problem, never with a traceback."""

    exit_code = 1

    def lines(self) -> list[str]:
        """What the CLI prints, one line each (without the leading ``error``)."""
        return [shorten(line, MAX_LINE) for line in str(self).splitlines()] or [type(self).__name__]


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
        return [shorten(f"{knob}: {message}", MAX_LINE) for knob, message in self.problems]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """Return `` (did you mean `x`?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxtuple, r.maxset = 2, 4, 4, 4, 4
    r.maxstring, r.maxother, r.maxlong = 40, 40, 40
    return r


_REPR = _bounded_repr()


def shown(value: Any) -> str:
    """``repr(value)`` bounded in size without building the full text (a YAML alias bomb is huge)."""
    return shorten(_REPR.repr(value), 200)


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"
