"""Conditions on knobs (``when:``): a knob is searched only where its condition holds.

A condition is written as a mapping (every key must hold) or a list of mappings (any one must hold);
each key names a knob and gives one value or a list of values::

    when: {pooling: sketch}                     # pooling is sketch
    when: {layers: [4, 6], g_mha: true}         # layers is 4 or 6, and g_mha is on
    when: [{g_mha: true}, {g_ffn: true}]        # either grouping is on
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .domains import DomainError, show_value
from .errors import shown

Clause = tuple[tuple[str, tuple[Any, ...]], ...]


def same_value(a: Any, b: Any) -> bool:
    """Equality that keeps ``true`` and ``1`` apart (Python says True == 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def is_member(value: Any, allowed: tuple[Any, ...]) -> bool:
    return any(same_value(value, a) for a in allowed)


@dataclass(frozen=True)
class Condition:
    """Any of the clauses holds; a clause holds when each of its knobs takes one of its values."""

    clauses: tuple[Clause, ...]

    @classmethod
    def parse(cls, data: Any) -> Condition:
        items = data if isinstance(data, list) else [data]
        if not items:
            raise DomainError("`when` is empty: give a mapping like {pooling: sketch}", "when")
        clauses = []
        for item in items:
            if not isinstance(item, Mapping) or not item:
                raise DomainError(
                    f"`when` takes a mapping like {{pooling: sketch}} or a list of them, got {shown(item)}", "when"
                )
            clause = []
            for knob, allowed in item.items():
                values = tuple(allowed) if isinstance(allowed, list) else (allowed,)
                if not values:
                    raise DomainError(f"`when: {{{knob}: []}}` lists no value, so it never holds", "when")
                clause.append((str(knob), values))
            clauses.append(tuple(clause))
        return cls(tuple(clauses))

    def holds(self, values: Mapping[str, Any]) -> bool:
        return any(all(is_member(values[k], allowed) for k, allowed in clause) for clause in self.clauses)

    @property
    def knobs(self) -> set[str]:
        return {k for clause in self.clauses for k, _ in clause}

    def __and__(self, other: Condition | None) -> Condition:
        if other is None:
            return self
        return Condition(tuple(a + b for a in self.clauses for b in other.clauses))

    def describe(self) -> str:
        def one(knob: str, values: tuple) -> str:
            shown = [show_value(v) for v in values]
            return f"{knob} = {shown[0]}" if len(shown) == 1 else f"{knob} in [{', '.join(shown)}]"

        return " or ".join(" and ".join(one(k, v) for k, v in clause) for clause in self.clauses)

    def negation(self) -> str:
        """What makes the condition fail, for a message: ``g_mha and g_ffn to false`` where every clause
        is one knob at one true/false value (``[{g_mha: true}, {g_ffn: true}]``), else ``the knobs so that
        not (...)``."""
        single = [clause[0] for clause in self.clauses if len(clause) == 1 and len(clause[0][1]) == 1]
        values = [allowed[0] for _, allowed in single]
        same_bool = all(v is True for v in values) or all(v is False for v in values)
        if len(single) == len(self.clauses) and same_bool:
            return f"{' and '.join(knob for knob, _ in single)} to {show_value(not values[0])}"
        return f"the knobs so that not ({self.describe()})"

    def to_dict(self) -> Any:
        mappings = [{k: (list(v) if len(v) > 1 else v[0]) for k, v in clause} for clause in self.clauses]
        return mappings[0] if len(mappings) == 1 else mappings
