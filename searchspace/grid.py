"""The grid of a space: every distinct point, each once (``tuner: {sampler: grid}``).

A point is its params (the active searched knobs), so a knob that a condition switches off does not
multiply the grid: `sketch_k` adds values only where `pooling: sketch`. The walk runs the space's own
``effective`` (the function every sampler's suggestions go through) as an odometer over the knobs it asks
for, so the grid holds exactly the points a sampler could suggest. A float range has no finite grid;
a grid beyond ``GRID_LIMIT`` points is refused before it is walked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .domains import FloatRange
from .space import Knob, SearchSpace, SpaceError
from .space_check import discrete_size

GRID_LIMIT = 100_000  # points a grid sweep may enumerate (a sweep trains each one)


def grid_problems(space: SearchSpace) -> list[tuple[tuple[Any, ...], str]]:
    """Why ``space`` has no finite grid a sweep could train: float ranges (named), or too many points."""
    problems: list[tuple[tuple[Any, ...], str]] = [
        (
            ("space", k.name),
            f"is a float range ({k.domain.describe()}), which has no finite grid: "
            "`sampler: grid` needs a `choice` or an `int` range for every searched knob",
        )
        for k in space.searched
        if isinstance(k.domain, FloatRange)
    ]
    if not problems:
        size, exact = discrete_size(space)
        if size > GRID_LIMIT:
            problems.append(
                (
                    ("space",),
                    f"has {'about ' if not exact else ''}{size:,} distinct points; a grid sweep trains at most "
                    f"{GRID_LIMIT:,}: narrow the space",
                )
            )
    return problems


def grid_points(space: SearchSpace) -> Iterator[dict[str, Any]]:
    """Params of every distinct point of ``space``, in odometer order (the last knob asked turns fastest).

    Raises SpaceError (naming the knob) where the grid is infinite or beyond ``GRID_LIMIT``.
    """
    problems = grid_problems(space)
    if problems:
        raise SpaceError(problems)
    path: list[int] = []  # the value index of each knob asked so far in this walk, in the order asked
    while True:
        sizes: list[int] = []  # the domain size of each knob this walk asks for
        values = space.effective(_odometer(path, sizes))
        del path[len(sizes) :]  # knobs asked in an earlier walk that this one's values switched off
        yield space.active_params(values)
        while path and path[-1] + 1 >= sizes[len(path) - 1]:
            path.pop()
        if not path:
            return
        path[-1] += 1


def _odometer(path: list[int], sizes: list[int]) -> Callable[[Knob], Any]:
    """``effective``'s choice for one walk: the i-th knob asked takes its value number ``path[i]``."""

    def choose(knob: Knob) -> Any:
        i = len(sizes)
        sizes.append(knob.domain.size())
        if i == len(path):
            path.append(0)  # a knob this branch of the grid has not turned yet starts at its first value
        return knob.domain.at(path[i])

    return choose


def grid_size(space: SearchSpace) -> int:
    """How many distinct points ``grid_points`` yields."""
    return sum(1 for _ in grid_points(space))
