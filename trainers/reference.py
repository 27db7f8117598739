"""Comparing the cost model with published figures (the ``reference`` section of a config file).

A reference gives figures exactly as the paper prints them (``"44.1M"``, ``"2.58G"``) per scope:

* ``total``: all unique parameters / MAdds of the model;
* ``layers``: encoder + decoder layers only (LW-Transformer counts these, its footnote 3);
* ``attention``: the attention modules' share (ACORT Table 10);
* ``vocabulary``: token embedding + output layer (ACORT Table 6's "Embeddings").

A figure matches when ours is within 1% of it, or within half a unit of its last printed digit
(``0.3M`` printed to one decimal stands for anything in [0.25M, 0.35M)). A metric listed under the
reference's ``inconsistent`` (with the reason: the paper's own rows disagree with each other) is
reported, never asserted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from searchspace import ArchConfig, build_model

from .cost import CostReport

_FIGURE = re.compile(r"^\s*(\d+(?:\.(\d+))?)\s*([KMG]?)\s*$")
_SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
REL_TOLERANCE = 0.01


@dataclass(frozen=True)
class Figure:
    """A published number and its printed precision."""

    text: str
    value: float
    half_unit: float

    @classmethod
    def parse(cls, text: str | int | float) -> Figure:
        match = _FIGURE.match(str(text))
        if not match:
            raise ValueError(f"a published figure looks like '44.1M' or '2.58G', got {text!r}")
        number, decimals, suffix = match.groups()
        scale = _SCALE[suffix]
        return cls(str(text), float(number) * scale, 0.5 * 10 ** -len(decimals or "") * scale)


@dataclass(frozen=True)
class Comparison:
    metric: str  # params | madds
    scope: str
    paper: Figure
    ours: int
    asserted: bool  # False for rows the paper itself is inconsistent about

    @property
    def rel_error(self) -> float:
        return (self.ours - self.paper.value) / self.paper.value

    @property
    def matches(self) -> bool:
        diff = abs(self.ours - self.paper.value)
        return diff <= REL_TOLERANCE * self.paper.value or diff < self.paper.half_unit


def scoped_value(config: ArchConfig, report: CostReport, metric: str, scope: str) -> int:
    """Our figure for ``metric`` (params/madds) over ``scope``."""
    breakdown = report.params_breakdown if metric == "params" else report.madds_breakdown
    if scope == "total":
        return report.params if metric == "params" else report.madds
    if scope == "layers":
        return breakdown["encoder"] + breakdown["decoder"]
    if scope == "attention":
        return breakdown["attention"]
    if scope == "vocabulary" and metric == "params":
        with torch.device("meta"):
            model = build_model(config)
        parts = [m for name in ("embed_tokens", "generator", "classifier") if (m := getattr(model, name, None))]
        return sum(p.numel() for m in parts for p in m.parameters())
    raise ValueError(f"unknown scope {scope!r} for {metric}; use total, layers, attention or vocabulary (params)")


def compare(config: ArchConfig, report: CostReport, reference: dict) -> list[Comparison]:
    """One ``Comparison`` per figure in ``reference['params']`` and ``reference['madds']``."""
    inconsistent = reference.get("inconsistent") or {}
    rows = []
    for metric in ("params", "madds"):
        for scope, text in (reference.get(metric) or {}).items():
            rows.append(
                Comparison(
                    metric,
                    scope,
                    Figure.parse(text),
                    scoped_value(config, report, metric, scope),
                    asserted=metric not in inconsistent,
                )
            )
    return rows
