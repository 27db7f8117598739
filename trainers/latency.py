"""Measured latency: the forward time of a built model on a named device, with its spread and its machine.

Unlike parameters and MAdds, latency is a measurement, so it comes with the two things needed to trust it:
the coefficient of variation of the repeats (std / mean) next to the median, and a description of what
measured it (device, CPU or GPU model, threads, host, torch version). Values measured by different
machines are not comparable; ``describe_device`` is what tells them apart.
"""

from __future__ import annotations

import math
import platform
import socket
import statistics
import time
from dataclasses import asdict, dataclass

import torch

from searchspace.errors import LwnasError
from searchspace.models import ArchModel

DEVICES = ("cpu", "cuda")
# Timed runs: at least MIN_REPEATS, then more until the median's standard error is below TARGET_SE of it
# (SE of a median ~ 1.2533 * std / sqrt(n) for near-normal timings) or MAX_REPEATS / MAX_SECONDS is reached.
MIN_REPEATS, MAX_REPEATS, MAX_SECONDS, TARGET_SE = 15, 200, 2.0, 0.01
WARMUP = 3


class LatencyError(LwnasError, ValueError):
    """A latency that cannot be measured as asked (no such device here)."""


@dataclass(frozen=True)
class Latency:
    """Forward time of one model at one batch size: median milliseconds, its CV, and what measured it."""

    batch: int
    ms: float
    cv: float
    repeats: int
    device: str  # describe_device(...): the machine and device that measured it

    def to_dict(self) -> dict:
        return asdict(self)


def check_device(device: str) -> torch.device:
    """``cpu`` or ``cuda`` as a torch device; an error when the name is unknown or no GPU is here."""
    if device not in DEVICES:
        raise LatencyError(f"latency device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise LatencyError(
            "latency device `cuda` was asked for, but torch sees no CUDA GPU on this machine "
            f"({socket.gethostname()}); measure on `cpu` or run where a GPU is"
        )
    return torch.device(device)


def _cpu_name() -> str:
    """The CPU model (Linux's /proc/cpuinfo; else what platform knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_device(device: str, threads: int) -> str:
    """One line naming what measures: ``cpu: MODEL, 1 thread, host H, torch V`` (or the GPU's name)."""
    if device == "cuda":
        what = f"cuda: {torch.cuda.get_device_name(0)}"
    else:
        what = f"cpu: {_cpu_name()}, {threads} thread{'s' if threads != 1 else ''}"
    return f"{what}, host {socket.gethostname()}, torch {torch.__version__}"


def _timings(model: torch.nn.Module, inputs: tuple, device: torch.device) -> list[float]:
    """Seconds of each timed forward, after warm-up, repeated until the median is pinned down."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(WARMUP):
        model(*inputs)
    sync()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_REPEATS:
        t0 = time.perf_counter()
        model(*inputs)
        sync()
        times.append(time.perf_counter() - t0)
        if len(times) >= MIN_REPEATS:
            se = 1.2533 * statistics.stdev(times) / math.sqrt(len(times))
            if se <= TARGET_SE * statistics.median(times) or time.perf_counter() - start > MAX_SECONDS:
                break
    return times


def measure_latency(model: ArchModel, batch: int, device: str = "cpu", threads: int = 1) -> Latency:
    """Median forward time of ``model`` (eval mode, no grad) at ``batch`` on ``device``.

    Args:
        model: a model built by ``searchspace.build_model`` (it provides ``example_inputs``).
        batch: the batch size of the inputs.
        device: ``cpu`` or ``cuda``.
        threads: CPU threads torch may use while measuring (restored afterwards).
    """
    dev = check_device(device)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = model.to(dev).eval()
        inputs = model.example_inputs(batch=batch, device=dev)
        with torch.inference_mode():
            times = _timings(model, inputs, dev)
    finally:
        torch.set_num_threads(before)
    mean = statistics.fmean(times)
    cv = statistics.stdev(times) / mean if len(times) > 1 and mean > 0 else 0.0
    return Latency(
        batch=batch,
        ms=statistics.median(times) * 1e3,
        cv=cv,
        repeats=len(times),
        device=describe_device(device, threads),
    )


def config_latencies(config, batches: list[int], device: str = "cpu", threads: int = 1) -> list[Latency]:
    """Latency of the model ``config`` builds at each batch size (weights seeded: timing does not depend on them)."""
    from searchspace import build_model

    torch.manual_seed(0)
    model = build_model(config)
    return [measure_latency(model, b, device, threads) for b in batches]
