"""The study file's `latency` section: where and how a study measures the `latency` metrics.

``latency`` is the median forward time in milliseconds at batch 1, ``latency_batch`` the same at the
study's ``batch_size``; both are costs (minimised, constrainable). They are measured by the sweep's driver
on ``device`` with ``threads`` CPU threads, the forward run as ``mode`` says (trainers/latency.py;
docs/studies.md says why the driver and what each mode removes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import did_you_mean, shown

LATENCY_METRICS = ("latency", "latency_batch")
LATENCY_DEVICES = ("cpu", "cuda")
# how the forward pass is run while timed: as written (eager), compiled by torch.compile (inductor), or a
# captured CUDA graph replayed (GPU only): the last two remove Python and kernel-launch overhead
LATENCY_MODES = ("eager", "compile", "cuda-graph")


@dataclass(frozen=True)
class LatencySettings:
    device: str = "cpu"
    batch_size: int = 8  # the batch of `latency_batch` (`latency` is always batch 1)
    threads: int = 1  # CPU threads torch uses while measuring
    mode: str = "eager"  # one of LATENCY_MODES

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "batch_size": self.batch_size, "threads": self.threads, "mode": self.mode}


_RULES = {
    "device": (f"one of {', '.join(LATENCY_DEVICES)}", lambda v: v in LATENCY_DEVICES),
    "batch_size": ("an integer from 1 to 4096", lambda v: _is_int(v) and 1 <= v <= 4096),
    "threads": ("an integer from 1 to 256", lambda v: _is_int(v) and 1 <= v <= 256),
    "mode": (f"one of {', '.join(LATENCY_MODES)}", lambda v: v in LATENCY_MODES),
}


def mode_problem(device: str, mode: str) -> str | None:
    """Why ``mode`` cannot be measured on ``device`` (a rule of the file, whatever the machine), or None."""
    if mode == "cuda-graph" and device != "cuda":
        return "`cuda-graph` replays a captured CUDA graph and needs `device: cuda`; on cpu use eager or compile"
    return None


def latency_settings(raw: Any, problems: list) -> LatencySettings:
    """The section's settings; each problem is appended as ((path...), message)."""
    if not isinstance(raw, Mapping):
        problems.append(
            (
                ("latency",),
                f"must be a mapping like {{device: cpu, batch_size: 8, threads: 1, mode: eager}}, got {shown(raw)}",
            )
        )
        return LatencySettings()
    out = {}
    for key, value in raw.items():
        if key not in _RULES:
            problems.append((("latency", key), f"unknown key{did_you_mean(str(key), _RULES)}"))
            continue
        rule, ok = _RULES[key]
        if not ok(value):
            problems.append((("latency", key), f"must be {rule}, got {shown(value)}"))
        else:
            out[key] = value
    settings = LatencySettings(**out)
    if (problem := mode_problem(settings.device, settings.mode)) is not None and "mode" in out:
        problems.append((("latency", "mode"), problem))
    return settings


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
