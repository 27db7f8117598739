"""Measured latency: the forward time of a built model on a named device, with its spread and its machine.

Unlike parameters and MAdds, latency is a measurement, so it comes with the two things needed to trust it:
the coefficient of variation of the repeats (std / mean) next to the median, and a description of what
measured it (device, CPU or GPU model, threads, host, torch version). Values measured by different
machines are not comparable; ``describe_device`` is what tells them apart.
"""

from __future__ import annotations

import math
import platform
import shutil
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from searchspace.errors import LwnasError
from searchspace.latency_settings import LATENCY_MODES, mode_problem
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
    mode: str = "eager"  # how the forward ran: eager, compile (torch.compile) or cuda-graph (a replayed graph)

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


def check_mode(mode: str, device: str) -> None:
    """An error when ``mode`` cannot be measured on ``device`` here (unknown, GPU-only, or no C compiler)."""
    if mode not in LATENCY_MODES:
        raise LatencyError(f"latency mode must be one of {', '.join(LATENCY_MODES)}, got {mode!r}")
    if (problem := mode_problem(device, mode)) is not None:
        raise LatencyError(f"latency mode {problem}")
    if mode == "compile" and device == "cpu" and not _c_compiler():
        # inductor writes C++ for CPU kernels and builds it with the system compiler
        raise LatencyError(
            "latency mode `compile` on cpu needs a C compiler (torch.compile's inductor builds C++ kernels), "
            f"and none (gcc, cc, clang, or $CXX) is on PATH on {socket.gethostname()}; install one or use `eager`"
        )


def _c_compiler() -> str | None:
    import os

    for name in (os.environ.get("CXX"), "g++", "gcc", "cc", "clang++", "clang"):
        if name and (found := shutil.which(name)):
            return found
    return None


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


def _forward(model: torch.nn.Module, inputs: tuple, device: torch.device, mode: str) -> Callable[[], object]:
    """The call that is timed: the model's forward as ``mode`` runs it.

    ``compile``: ``torch.compile`` (inductor) of the model; its first calls (the warm-up) compile it.
    ``cuda-graph``: the forward captured once into a CUDA graph, then replayed on the same input tensors, so
    one timed call is one graph launch: no Python and no per-kernel launch cost, as a deployment that
    replays a graph pays.
    """
    if mode == "compile":
        compiled = torch.compile(model)
        return lambda: compiled(*inputs)
    if mode == "cuda-graph":
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):  # warm-up on a side stream, as capture requires
            for _ in range(WARMUP):
                model(*inputs)
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                model(*inputs)
        except RuntimeError as exc:  # e.g. a data-dependent shape (a boolean mask's nonzero) cannot be captured
            raise LatencyError(
                f"latency mode `cuda-graph`: this model's forward cannot be captured as a CUDA graph "
                f"({str(exc).splitlines()[0]}); use eager or compile"
            ) from None
        return graph.replay
    return lambda: model(*inputs)


def _timings(model: torch.nn.Module, inputs: tuple, device: torch.device, mode: str = "eager") -> list[float]:
    """Seconds of each timed forward, after warm-up, repeated until the median is pinned down."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    forward = _forward(model, inputs, device, mode)
    for _ in range(WARMUP):
        forward()
    sync()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_REPEATS:
        t0 = time.perf_counter()
        forward()
        sync()
        times.append(time.perf_counter() - t0)
        if len(times) >= MIN_REPEATS:
            se = 1.2533 * statistics.stdev(times) / math.sqrt(len(times))
            if se <= TARGET_SE * statistics.median(times) or time.perf_counter() - start > MAX_SECONDS:
                break
    return times


def measure_latency(
    model: ArchModel, batch: int, device: str = "cpu", threads: int = 1, mode: str = "eager"
) -> Latency:
    """Median forward time of ``model`` (eval mode, no grad) at ``batch`` on ``device``.

    Args:
        model: a model built by ``searchspace.build_model`` (it provides ``example_inputs``).
        batch: the batch size of the inputs.
        device: ``cpu`` or ``cuda``.
        threads: CPU threads torch may use while measuring (restored afterwards).
        mode: ``eager`` (the model as written), ``compile`` (``torch.compile``) or ``cuda-graph`` (GPU only).
    """
    dev = check_device(device)
    check_mode(mode, device)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = model.to(dev).eval()
        inputs = model.example_inputs(batch=batch, device=dev)
        with torch.inference_mode():
            times = _timings(model, inputs, dev, mode)
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
        mode=mode,
    )


def config_latencies(
    config, batches: list[int], device: str = "cpu", threads: int = 1, mode: str = "eager"
) -> list[Latency]:
    """Latency of the model ``config`` builds at each batch size (weights seeded: timing does not depend on them)."""
    from searchspace import build_model

    torch.manual_seed(0)
    model = build_model(config)
    return [measure_latency(model, b, device, threads, mode) for b in batches]
