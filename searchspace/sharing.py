"""Cross-layer sharing patterns in ACORT's notation (ACORT §4.2, Fig. 4).

A pattern lists, for each layer of a stack, the index of the independent layer it uses:
``(0,0,1,1,2,2)`` is six layers built from three, ``(0x3,1x3)`` is shorthand for
``(0,0,0,1,1,1)`` and ``(0x6)`` is ALBERT-style sharing of one layer across six.
"""

from __future__ import annotations

import re

_TERM = re.compile(r"^\s*(\d+)\s*(?:x\s*(\d+))?\s*$")

# The deepest stack a configuration may have (the limit of ArchConfig's depth knobs, ``config.py``):
# a pattern is checked against it before it is expanded, so `(0x1000000000)` costs nothing.
MAX_LAYERS = 256

# Named pattern families, generated for a given depth (used by study files too).
PATTERN_FAMILIES = ("none", "successive", "symmetric", "albert")


def parse_pattern(text: str | list | tuple) -> tuple[int, ...]:
    """Parse ``"(0x3,1x3)"`` / ``"0,0,1"`` / ``[0, 0, 1]`` into a tuple of layer indices.

    Raises ValueError saying what is wrong; callers attach the knob name.
    """
    if isinstance(text, (list, tuple)):
        terms = [str(t) for t in text]
    elif isinstance(text, str):
        body = text.strip()
        if body.startswith("(") and body.endswith(")"):
            body = body[1:-1]
        terms = body.split(",") if body.strip() else []
    else:
        raise ValueError(f"a sharing pattern is a string like '(0x3,1x3)' or a list, got {type(text).__name__}")
    if len(terms) > MAX_LAYERS:
        raise ValueError(f"has {len(terms):,} terms; a stack has at most {MAX_LAYERS} layers")
    indices: list[int] = []
    for term in terms:
        match = _TERM.match(term) if len(term) <= 40 else None
        if not match:
            raise ValueError(
                f"cannot read term {term.strip()[:40]!r}: each term is `i` or `ixn`, e.g. (0,0,1) or (0x3,1x3)"
            )
        index, repeat = int(match.group(1)), int(match.group(2) or 1)
        if repeat < 1:
            raise ValueError(f"term {term.strip()!r} repeats a layer {repeat} times; repeats must be >= 1")
        if len(indices) + repeat > MAX_LAYERS or index >= MAX_LAYERS:
            raise ValueError(f"term {term.strip()!r} goes beyond {MAX_LAYERS} layers, the most a stack may have")
        indices.extend([index] * repeat)
    if not indices:
        raise ValueError("a sharing pattern needs at least one layer")
    used = sorted(set(indices))
    if used != list(range(len(used))):
        missing = sorted(set(range(max(used) + 1)) - set(used))
        raise ValueError(f"independent layers must be numbered 0..{max(used)} without gaps; {missing} never appear")
    return tuple(indices)


def format_pattern(pattern: tuple[int, ...]) -> str:
    """Format a pattern compactly in the paper's notation: runs of 3 or more become ``ixn``."""
    terms: list[str] = []
    i = 0
    while i < len(pattern):
        j = i
        while j < len(pattern) and pattern[j] == pattern[i]:
            j += 1
        run = j - i
        terms.extend(
            [f"{pattern[i]}x{run}"] if run >= 3 or (run >= 2 and len(set(pattern)) == 1) else [str(pattern[i])] * run
        )
        i = j
    return "(" + ",".join(terms) + ")"


def generate_pattern(family: str, depth: int, independent: int | None = None) -> tuple[int, ...]:
    """Generate a pattern of ``depth`` layers by family name.

    ``none``: every layer independent; ``albert``: one layer shared by all (0xL);
    ``successive``: ``independent`` layers each repeated in a run, e.g. (0,0,1,1,2,2);
    ``symmetric``: mirrored, e.g. (0,1,2,2,1,0).
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if family == "none":
        return tuple(range(depth))
    if family == "albert":
        return (0,) * depth
    if family == "successive":
        m = independent or max(1, depth // 2)
        if not 1 <= m <= depth:
            raise ValueError(f"`independent` must be in 1..{depth}, got {m}")
        return tuple(i * m // depth for i in range(depth))
    if family == "symmetric":
        half = [i for i in range((depth + 1) // 2)]
        return tuple(half + half[: depth // 2][::-1])
    raise ValueError(f"unknown pattern family {family!r}; choose one of {', '.join(PATTERN_FAMILIES)}")
