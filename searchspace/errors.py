"""Errors raised for invalid configurations, each naming the knob, the value and the rule."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(ValueError):
    """One or more knobs of an architecture configuration break a rule.

    ``problems`` holds one ``(knob, message)`` pair per broken rule, so callers (the study-file
    validator, the CLI) can report every problem at once rather than the first.
    """

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("\n".join(f"{knob}: {message}" for knob, message in problems))


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """Return `` (did you mean `x`?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""
