"""Static cost model: parameters, MAdds and peak memory of a configuration, before any training.

* Parameters: unique parameters (shared layers and shared group weights count once), split into
  the model's sections (``embeddings``, ``encoder``, ``decoder``, ``head``) plus the ``attention``
  share (every attention module, ORT's box-relation heads included: ACORT Table 10 counts them).
* MAdds: per-layer formulas over the meta-device model (``trainers.cost_formula``, the fast path,
  a few ms for a tiny encoder), or with ``counter="trace"`` fvcore over a jit trace of it
  (``trainers.madds``, the reference the formulas are tested against); per section and attention share.
* Memory: peak bytes of one forward + backward at batch 1: torch's MemTracker on CPU, CUDA peak
  statistics on a GPU net of what the device held before the pass (``_cuda_peak``); plus the bytes of
  the attention maps a naive kernel would materialise.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from torch.fx.experimental import _config as fx_config

from searchspace import ArchConfig, ArchModel, build_model
from searchspace.errors import LwnasError
from searchspace.layers import MultiHeadAttention

from .cost_formula import formula_count
from .madds import count_madds

SECTION_NAMES = ("embeddings", "encoder", "decoder", "head")


@dataclass
class CostReport:
    """Static costs of one configuration; ``to_dict`` is what ``lwnas cost --json`` prints."""

    params: int
    params_breakdown: dict[str, int]
    madds: int
    madds_breakdown: dict[str, int]
    memory_bytes: int | None = None
    attention_map_bytes: int | None = None
    memory_device: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _section_of(name: str, sections: dict[str, tuple[str, ...]]) -> str:
    top = name.split(".")[0]
    for section, children in sections.items():
        if top in children:
            return section
    raise KeyError(f"parameter {name!r} belongs to no cost section; add {top!r} to the model's SECTIONS")


def _attention_prefixes(model: nn.Module) -> tuple[str, ...]:
    return tuple(f"{n}." for n, m in model.named_modules() if isinstance(m, MultiHeadAttention))


def count_params(model: ArchModel) -> tuple[int, dict[str, int]]:
    """Unique parameter count and its breakdown by section (+ ``attention`` share)."""
    breakdown = {s: 0 for s in model.SECTIONS}
    attention = _attention_prefixes(model)
    breakdown["attention"] = 0
    for name, p in model.named_parameters():  # named_parameters() yields shared tensors once
        breakdown[_section_of(name, model.SECTIONS)] += p.numel()
        if name.startswith(attention):
            breakdown["attention"] += p.numel()
    total = sum(p.numel() for p in model.parameters())
    return total, {k: breakdown.get(k, 0) for k in (*SECTION_NAMES, "attention")}


def _madds_breakdown(model: ArchModel, by_child: dict[str, int], attention: int) -> dict[str, int]:
    """MAdds by module name summed into the model's sections (only top-level children are read), plus the
    ``attention`` share."""
    out = {s: sum(by_child.get(child, 0) for child in children) for s, children in model.SECTIONS.items()}
    out["attention"] = attention
    return {k: out.get(k, 0) for k in (*SECTION_NAMES, "attention")}


def attention_map_bytes(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> int:
    """Bytes of the attention maps a forward pass would keep with a naive kernel (per call, so
    shared layers count at every depth they are used)."""
    total = 0

    def hook(module, args, _output):
        nonlocal total
        q, k = args[0], args[1]
        total += module.map_numel(q, k, getattr(module, "grid", None)) * q.element_size()

    kernels = [m.kernel for m in model.modules() if isinstance(m, MultiHeadAttention)]
    handles = [k.register_forward_hook(hook) for k in kernels]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return total


def peak_memory(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[int, str]:
    """Peak bytes of one forward + backward pass (parameters, gradients, activations, temporaries)."""
    device = next(model.parameters()).device
    model.zero_grad(set_to_none=True)  # gradients left by an earlier pass would count as live memory
    if device.type == "cuda":
        return _cuda_peak(model, inputs, device), "cuda"
    tracker = _global_peak_tracker()
    tracker.track_external(model)
    with tracker:
        model(*inputs).float().sum().backward()
    peak = tracker.get_tracker_snapshot("peak")
    return int(sum(stats["Total"] for stats in peak.values())), "cpu"


def _model_bytes(model: nn.Module) -> int:
    """Bytes of the model's parameters and buffers (shared tensors once)."""
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def _cuda_peak(model: nn.Module, inputs: tuple[torch.Tensor, ...], device: torch.device) -> int:
    """The model's own peak on a GPU: its parameters and buffers plus the rise of allocated memory during one
    forward + backward, measured after a first, untimed pass.

    ``max_memory_allocated`` alone counts everything the process holds on the device: the workspaces cuBLAS
    and the allocator set up on first use (about 67 MB on an H100, the same for every model) swamped a
    small model's figure. The first pass creates them; the peak is then reset and read net of what was
    allocated before the measured pass (the model's weights, the workspaces), and the weights and buffers
    are added back, as the CPU tracker counts them.
    """
    model(*inputs).float().sum().backward()  # warms cuBLAS / cuDNN workspaces and the allocator's pools
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    model(*inputs).float().sum().backward()
    torch.cuda.synchronize(device)
    rise = torch.cuda.max_memory_allocated(device) - before
    model.zero_grad(set_to_none=True)
    return int(rise + _model_bytes(model))


def _global_peak_tracker():
    """torch's MemTracker, keeping only the global peak.

    Stock MemTracker also refreshes every module's local peak after every op, which costs
    O(ops x modules) (about 5x slower on the MCAN baseline, bench/cost_speed.py); we only report
    the global peak, so that update is skipped (the private names are MemTracker's own).

    Private on purpose, checked against torch 2.13: MemTracker itself lives in the private
    ``torch.distributed._tools``, and torch has no public peak-memory figure on CPU
    (``torch.accelerator.max_memory_allocated`` and ``torch.cuda``'s serve accelerators only; the
    profiler's ``profile_memory`` gives per-op allocations, not the live peak). The override touches
    ``_update_peak_stats``, ``_curr_mem_snap``, ``_peak_mem`` and ``_peak_mem_snap``: if an upgrade
    renames the method, stock MemTracker measures (same peak, slower); if it renames the fields, the
    override raises and ``tests/test_cli_cost.py``'s memory checks fail.
    """
    from torch.distributed._tools.mem_tracker import MemTracker

    class GlobalPeakTracker(MemTracker):
        def _update_peak_stats(self, peak_state) -> None:
            for dev, snap in self._curr_mem_snap.items():
                if self._peak_mem.get(dev, 0) < snap["Total"]:
                    self._peak_mem[dev] = snap["Total"]
                    self._peak_mem_snap[dev] = dict(snap)

    return GlobalPeakTracker()


class CostError(LwnasError, ValueError):
    """A cost that cannot be computed for this configuration (said why, with the figures)."""


def check_memory_device(device: str) -> None:
    """An error when peak memory is asked for on ``cuda`` where torch sees no GPU (instead of torch's traceback)."""
    if device == "cuda" and not torch.cuda.is_available():
        import socket

        raise CostError(
            f"peak memory on `cuda` was asked for, but torch sees no CUDA GPU on this machine "
            f"({socket.gethostname()}); measure on cpu (--device cpu) or run where a GPU is"
        )


# Measuring peak memory materialises the model and runs it; a point whose weights, gradients and
# attention maps alone need more than this is refused from its meta-device shapes instead.
MEMORY_PROBE_LIMIT = 8 << 30


def _check_probe_size(params: int, map_bytes: int) -> None:
    floor = 8 * params + map_bytes  # fp32 weights + gradients, and the maps a forward keeps
    if floor > MEMORY_PROBE_LIMIT:
        raise CostError(
            f"peak memory is not measured: one forward + backward needs at least {floor / 2**30:,.1f} GiB "
            f"({params:,} parameters with gradients, plus attention maps), over the "
            f"{MEMORY_PROBE_LIMIT >> 30} GiB limit of the memory probe"
        )


# Building a model allocates its weights at once: a configuration (a checkpoint's, a `lwnas train` file's) whose
# weights alone outgrow the machine is refused from its meta-device shapes, before anything is allocated.
WEIGHT_BYTES = 4  # fp32 weights: evaluating or exporting a checkpoint
TRAINING_BYTES = 16  # fp32 weights, their gradients and AdamW's two moments: training, before any activation


def device_memory(device: torch.device) -> int:
    """Bytes of memory ``device`` has in all (the machine's RAM for the CPU)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_fits(config: ArchConfig, device: torch.device, bytes_per_param: int, doing: str) -> int:
    """The parameter count of ``config``, counted on the meta device; CostError when its ``bytes_per_param``
    bytes a parameter need more memory than ``device`` has."""
    with torch.device("meta"):
        params = count_params(build_model(config))[0]
    need, have = params * bytes_per_param, device_memory(device)
    if need > have:
        raise CostError(
            f"{doing} this configuration needs at least {need / 2**30:,.1f} GiB ({params:,} parameters x "
            f"{bytes_per_param} bytes), more than the {have / 2**30:,.1f} GiB of {device.type}; shrink d_model, "
            f"d_ff or layers"
        )
    return params


COUNTERS = ("formula", "trace")


def cost(
    config: ArchConfig | dict, memory: bool = True, device: str | torch.device = "cpu", counter: str = "formula"
) -> CostReport:
    """Static costs of ``config``.

    Parameters, MAdds and attention-map bytes come from a meta-device model (shapes only, nothing
    allocated). With ``memory``, that model is materialised uninitialised on ``device`` (values do
    not change memory use, and skipping initialisation saves a full build) and runs one forward +
    backward at batch 1. ``counter`` picks how MAdds and attention-map bytes are counted:
    ``formula`` (fast, the default) or ``trace`` (fvcore over a jit trace, the reference; same figures).
    """
    if counter not in COUNTERS:
        raise ValueError(f"`counter` must be one of {', '.join(COUNTERS)}, got {counter!r}")
    if isinstance(config, dict):
        config = ArchConfig.from_dict(config)
    with torch.device("meta"):
        model = build_model(config)
    model.eval()
    params, params_breakdown = count_params(model)
    by_child: dict[str, int]  # MAdds by module name
    if counter == "formula":
        count = formula_count(model)
        by_child, attention, map_bytes = count.by_child, count.attention, count.map_bytes
        madds = sum(by_child.values())
    else:
        madds, by_child, attention, map_bytes = _traced_counts(model)
    report = CostReport(
        params, params_breakdown, madds, _madds_breakdown(model, by_child, attention), attention_map_bytes=map_bytes
    )
    if memory:
        _check_probe_size(params, map_bytes)
        model = model.to_empty(device=device).train()
        inputs = model.example_inputs(batch=1, device=device)
        report.memory_bytes, report.memory_device = peak_memory(model, inputs)
    return report


def _traced_counts(model: ArchModel) -> tuple[int, dict[str, int], int, int]:
    """fvcore's MAdds (total, by module name, attention share) and the hooks' attention-map bytes of one
    meta-device forward."""
    inputs = model.example_inputs(batch=1, device="meta")
    # The sketch pooling selects real tokens with a boolean mask; meta tensors cannot know how many
    # are real, and the example inputs have no padding, so "all of them" is exact here.
    # `patch` is added by torch's install_config_module; this config module, unlike torch._dynamo.config,
    # does not import its typing stub, so mypy cannot see it.
    with fx_config.patch(meta_nonzero_assume_all_nonzero=True):  # type: ignore[attr-defined]
        madds, by_module = count_madds(model, inputs)
        map_bytes = attention_map_bytes(model, inputs)
    # fvcore attributes a shared module's calls to one of its names; attention modules sit below
    # the layers, so summing the distinct attention module names counts each call once.
    attention = sum(by_module.get(p[:-1], 0) for p in _attention_prefixes(model))
    return madds, by_module, attention, map_bytes
