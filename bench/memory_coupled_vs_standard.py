"""How much memory does Couplformer's coupled attention save? Peak memory of one forward +
backward of an encoder-family model on a 32x32 grid (1024 tokens) with ``attention: coupled``
against ``attention: standard``, measured in the same run.

The standard kernel calls torch's scaled_dot_product_attention, which on CPU may run a fused
(flash) kernel that never materialises the (T x T) attention map. The papers' baselines do
materialise it, so a third variant swaps every standard kernel for ``NaiveAttention`` below
(explicit ``softmax(q k^T / sqrt(d)) v``, same weights, same outputs). Three variants:

  coupled         attention: coupled (Couplformer Eq. 7, two maps of h x h and w x w)
  standard_sdpa   attention: standard, torch SDPA (whatever kernel torch picks)
  standard_naive  attention: standard with the kernel replaced by NaiveAttention

Measured per variant:
  * peak_memory_bytes: trainers.cost.peak_memory (torch MemTracker on CPU: parameters,
    gradients, activations, temporaries) of model(x).sum().backward(), training mode.
  * attention_map_bytes: trainers.cost.attention_map_bytes (the maps a naive kernel keeps,
    by formula), and for the naive variant also the bytes of the maps it actually built.
  * fwd_bwd_ms: time of one forward + backward (median of interleaved samples).

Ratios coupled / standard are reported against both standard variants, plus (derived) the ratio
of the peaks above the SDPA run's peak, which isolates what the kernel adds on top of the memory
all variants share. Dropout is 0 so that
only the attention kernels differ. Prints one JSON object to stdout; progress goes to stderr.
Usage: python bench/memory_coupled_vs_standard.py [--grid 32] [--d-model 64] [--heads 4] [--layers 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HelpFormatter, LoadMonitor, all_cores, log  # noqa: E402

from searchspace import ArchConfig, build_model  # noqa: E402
from searchspace.layers import MultiHeadAttention, ScaledDotProductAttention  # noqa: E402
from trainers.cost import attention_map_bytes, peak_memory  # noqa: E402


class NaiveAttention(nn.Module):
    """The textbook kernel: ``softmax(q k^T / sqrt(d_q)) v`` with the (Tq x Tk) map as a tensor.
    Drop-in for ``ScaledDotProductAttention`` without masks, causality or bias (not needed here).
    ``built_bytes`` accumulates the bytes of the probability maps it has created."""

    map_numel = staticmethod(ScaledDotProductAttention.map_numel)

    def __init__(self):
        super().__init__()
        self.built_bytes = 0

    def forward(self, q, k, v, key_mask=None, causal=False, bias=None):
        if key_mask is not None or causal or bias is not None:
            raise ValueError("NaiveAttention in this benchmark supports no mask, causality or bias")
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5  # (B, H, Tq, Tk)
        probs = scores.softmax(-1)
        self.built_bytes += probs.numel() * probs.element_size()
        return torch.matmul(probs, v)


def use_naive_kernels(model: nn.Module) -> list[NaiveAttention]:
    kernels = []
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            if not isinstance(module.kernel, ScaledDotProductAttention):
                raise TypeError(f"expected a standard kernel, got {type(module.kernel).__name__}")
            module.kernel = NaiveAttention()
            kernels.append(module.kernel)
    return kernels


def fwd_bwd(model, inputs):
    model.zero_grad(set_to_none=True)
    model(*inputs).float().sum().backward()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--grid", type=int, default=32, help="grid side: grid x grid tokens (32 -> 1024)")
    parser.add_argument("--d-model", type=int, default=64, help="model width")
    parser.add_argument("--heads", type=int, default=4, help="attention heads")
    parser.add_argument("--layers", type=int, default=2, help="encoder layers")
    parser.add_argument("--batch", type=int, default=1, help="batch size")
    parser.add_argument("--repeats", type=int, default=5, help="timed fwd+bwd samples per variant (median)")
    parser.add_argument("--threads", type=int, default=all_cores(), help="torch.set_num_threads; default: all cores")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    parser.add_argument("--quick", action="store_true", help="smoke run: 16x16 grid, 1 layer, 2 timed samples")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    monitor = LoadMonitor(args.threads)
    grid, layers, repeats = args.grid, args.layers, args.repeats
    if args.quick:
        grid, layers, repeats = 16, 1, 2

    base = ArchConfig(
        family="encoder",
        d_model=args.d_model,
        heads=args.heads,
        layers=layers,
        dropout=0.0,
        grid=(grid, grid),
        patch_features=1,
    )
    configs = {"coupled": base.replace(attention="coupled"), "standard_sdpa": base, "standard_naive": base}
    models, naive_kernels = {}, []
    for name, cfg in configs.items():
        torch.manual_seed(args.seed)  # same weights in every variant
        models[name] = build_model(cfg).train()
        if name == "standard_naive":
            naive_kernels = use_naive_kernels(models[name])
    inputs = models["coupled"].example_inputs(batch=args.batch)

    # the naive kernel is a faithful replacement: same output as SDPA for the same weights
    with torch.no_grad():
        same = torch.allclose(models["standard_sdpa"](*inputs), models["standard_naive"](*inputs), atol=1e-4)
    if not same:
        raise SystemExit("NaiveAttention disagrees with the SDPA kernel")

    report = {}
    for name, model in models.items():
        log(f"{name}: attention-map bytes and peak memory ...")
        for k in naive_kernels:
            k.built_bytes = 0
        maps = attention_map_bytes(model, inputs)
        built = sum(k.built_bytes for k in naive_kernels) if name == "standard_naive" else None
        peaks = []
        for _ in range(2):  # deterministic; measured twice to show it
            # peak_memory counts gradients left by an earlier pass, so start without any
            model.zero_grad(set_to_none=True)
            peaks.append(peak_memory(model, inputs)[0])
        model.zero_grad(set_to_none=True)
        report[name] = {
            "attention_map_bytes": maps,
            "peak_memory_bytes": peaks[-1],
            "peak_memory_repeat_equal": peaks[0] == peaks[1],
            "params": sum(p.numel() for p in model.parameters()),
        }
        if built is not None:
            report[name]["naive_maps_built_bytes"] = built

    log(f"timing fwd+bwd, {repeats} interleaved samples ...")
    names = list(models)
    for name in names:  # warm-up
        fwd_bwd(models[name], inputs)
    times = {n: [] for n in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            fwd_bwd(models[name], inputs)
            times[name].append(time.perf_counter() - t0)
    for name in names:
        report[name]["fwd_bwd_ms"] = round(statistics.median(times[name]) * 1e3, 2)

    c = report["coupled"]

    def ratio(a, b):
        return round(a / b, 4) if b else None

    ratios = {
        "peak_memory_coupled_over_naive": ratio(c["peak_memory_bytes"], report["standard_naive"]["peak_memory_bytes"]),
        "peak_memory_coupled_over_sdpa": ratio(c["peak_memory_bytes"], report["standard_sdpa"]["peak_memory_bytes"]),
        "peak_memory_sdpa_over_naive": ratio(
            report["standard_sdpa"]["peak_memory_bytes"], report["standard_naive"]["peak_memory_bytes"]
        ),
        "attention_map_bytes_coupled_over_standard": ratio(
            c["attention_map_bytes"], report["standard_sdpa"]["attention_map_bytes"]
        ),
        "fwd_bwd_time_coupled_over_naive": ratio(c["fwd_bwd_ms"], report["standard_naive"]["fwd_bwd_ms"]),
        "fwd_bwd_time_coupled_over_sdpa": ratio(c["fwd_bwd_ms"], report["standard_sdpa"]["fwd_bwd_ms"]),
    }
    # derived: peak above the fused SDPA run, i.e. what each kernel costs on top of the rest of the
    # model (parameters, gradients, FFN and projection activations, which all variants share)
    sdpa_peak = report["standard_sdpa"]["peak_memory_bytes"]
    for name in ("coupled", "standard_naive"):
        report[name]["peak_above_sdpa_bytes"] = report[name]["peak_memory_bytes"] - sdpa_peak
    ratios["peak_above_sdpa_coupled_over_naive"] = ratio(
        c["peak_above_sdpa_bytes"], report["standard_naive"]["peak_above_sdpa_bytes"]
    )
    ratios["meets_target_peak_coupled_at_most_10pct_of_naive"] = ratios["peak_memory_coupled_over_naive"] <= 0.10
    print(
        json.dumps(
            {
                "benchmark": "memory_coupled_vs_standard",
                "quick": args.quick,
                "grid": [grid, grid],
                "tokens": grid * grid,
                "d_model": args.d_model,
                "heads": args.heads,
                "layers": layers,
                "batch": args.batch,
                "dropout": 0.0,
                "threads": args.threads,
                "torch": torch.__version__,
                "machine_load": monitor.report(),
                "variants": report,
                "ratios": ratios,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
