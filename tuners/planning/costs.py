"""Static constraints of a study, checked from the cost model before any training.

``StaticCosts`` computes a point's parameters, MAdds and (only when the study uses them) peak memory
and measured latency at the task's input sizes, and tells whether the point meets the study's constraints. It keeps a
tally of rejected points by reason, which sweeps record and ``lwnas space sample`` prints.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from searchspace import ArchConfig
from searchspace.latency_settings import LATENCY_METRICS, LatencySettings
from searchspace.study import Study
from trainers.cost import CostReport, cost
from trainers.tasks import Task, adapt_config

REPORTS_KEPT = 4096  # distinct architectures whose cost reports the driver keeps


@dataclass(frozen=True)
class Verdict:
    """Static costs of one point and how far it is from each constraint (<= 0: met)."""

    costs: dict[str, float | str]  # params, madds, memory, latency figures, and the latency device's name
    violations: dict[str, float]
    report: CostReport = field(repr=False)
    config: ArchConfig = field(repr=False)  # the configuration costed: the point adapted to the task's input sizes

    @property
    def feasible(self) -> bool:
        return all(v <= 0 for v in self.violations.values())

    def reasons(self) -> list[str]:
        return [name for name, v in self.violations.items() if v > 0]


class StaticCosts:
    """Costs and constraint verdicts of a study's points, with a tally of rejections."""

    def __init__(self, study: Study, task: Task | None = None, device: str = "cpu"):
        self.study, self.task, self.device = study, task, device
        used = {c.metric for c in study.constraints} | {o.metric for o in study.objectives}
        self.memory = "memory" in used
        self.latency = bool(used & set(LATENCY_METRICS))
        # each constraint with the name its violations are kept under, described once rather than per point
        self._constraints = [(c.describe(), c) for c in study.constraints]
        if self.latency:
            from trainers.latency import check_device, check_mode

            check_device(study.latency.device)  # no GPU here: say so before any point is costed
            check_mode(study.latency.mode, study.latency.device)  # nor a compiler torch.compile needs
        self.checked = 0
        self.rejected_points = 0
        self.rejected: Counter[str] = Counter()  # by constraint; a point may break several
        # cost reports by adapted configuration: points that differ only in training settings (lr, batch
        # size, ...) share an architecture, and costing it again would take 2-60 ms per point in the driver
        self._reports: dict[str, tuple[CostReport, dict[str, float | str]]] = {}

    def adapt(self, config: ArchConfig) -> ArchConfig:
        return adapt_config(config, self.task) if self.task is not None else config

    def evaluate(self, config: ArchConfig) -> Verdict:
        """The verdict of a proposed point, counted in the tally the sweep records."""
        verdict = self.verdict(config)
        self.checked += 1
        self.rejected_points += not verdict.feasible
        for reason in verdict.reasons():
            self.rejected[reason] += 1
        return verdict

    def verdict(self, config: ArchConfig) -> Verdict:
        """The verdict of a point, left out of the tally (a check before the sweep, not a proposal)."""
        config = self.adapt(config)
        report, latency = self._costed(config)
        costs: dict[str, float | str] = {"params": report.params, "madds": report.madds}
        if self.memory and report.memory_bytes is not None:
            costs["memory"] = report.memory_bytes
        costs.update(latency)
        # a constraint's metric is a numeric cost (the study parser allows no other)
        violations = {name: c.violation(float(costs[c.metric])) for name, c in self._constraints}
        return Verdict(costs, violations, report, config)

    def _costed(self, config: ArchConfig) -> tuple[CostReport, dict[str, float | str]]:
        """The cost report and measured latency of ``config``'s architecture, each computed once per architecture.

        Latency is kept too: timing the same model twice differs by its noise, so a latency constraint could
        otherwise accept one point and reject its twin (a seed repeat, or a point with another lr)."""
        key = json.dumps(config.to_dict(), sort_keys=True, default=str)
        if key not in self._reports:
            if len(self._reports) >= REPORTS_KEPT:
                del self._reports[next(iter(self._reports))]  # the oldest: memory stays bounded
            report = cost(config, memory=self.memory, device=self.device)
            self._reports[key] = (report, latency_costs(config, self.study.latency) if self.latency else {})
        return self._reports[key]

    def summary(self) -> dict[str, Any]:
        """``{"checked": n, "rejected": m, "reasons": {constraint: count}}``."""
        return {"checked": self.checked, "rejected": self.rejected_points, "reasons": dict(self.rejected)}


def latency_costs(config: ArchConfig, settings: LatencySettings) -> dict[str, float | str]:
    """``latency`` (ms, batch 1), ``latency_batch`` (ms at the study's batch size), their CVs, the device line and
    the measurement mode (``latency_mode``: eager, compile or cuda-graph).

    Measured here, in the driver, before training (like memory): a latency constraint must reject a point
    before a worker trains it, and one process on one device measures every point of the sweep, so the
    values of one study are comparable. ``latency_device`` names that device and machine.
    """
    from trainers.latency import config_latencies

    one, many = config_latencies(config, [1, settings.batch_size], settings.device, settings.threads, settings.mode)
    return {
        "latency": one.ms,
        "latency_cv": one.cv,
        "latency_batch": many.ms,
        "latency_batch_cv": many.cv,
        "latency_batch_size": settings.batch_size,
        "latency_device": one.device,
        "latency_mode": one.mode,
    }
