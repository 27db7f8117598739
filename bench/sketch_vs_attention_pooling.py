"""Does T-EMDE's sketch pooling scale linearly in the number of tokens where self-attention
pooling scales quadratically? Times, in the same run and for growing token counts (4x steps):

  sketch     searchspace.layers.SketchPool(dim, N=8, K=8, D=8): the T-EMDE sketch (§3.2)
  attention  self-attention pooling, the kind T-EMDE replaces: one
             searchspace.layers.MultiHeadAttention over the tokens (standard kernel: torch SDPA)
             followed by the mean over tokens; quadratic in tokens
  attflat    for reference, searchspace.layers.AttentionPool (MCAN's AttFlat: learned softmax
             weights over tokens; linear in tokens, no token-token interaction)

Inputs: batch 8, dim 128 by default; eval mode, torch.inference_mode. For every size the
variants are timed interleaved (order reversed every round), each sample is the mean of enough
calls to last about --sample-seconds, and the median sample is reported.

Reported per variant: time per size, growth factor per 4x tokens (t(4T) / t(T); ~4 for linear,
~16 for quadratic once the quadratic term dominates), local exponent log4(growth) and the
least-squares log-log slope over all sizes and over the upper half of the sizes. Also the
attention / sketch time ratio at every size.

Prints one JSON object to stdout; progress goes to stderr.
Usage: python bench/sketch_vs_attention_pooling.py [--tokens 64,256,1024,4096] [--batch 8] [--dim 128] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HelpFormatter, LoadMonitor, all_cores, calibrate, log  # noqa: E402

from searchspace.layers import AttentionPool, MultiHeadAttention, SketchPool  # noqa: E402


class SelfAttentionPool(nn.Module):
    """Self-attention over the tokens, then their mean: (B, T, d) -> (B, d)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attn = MultiHeadAttention(dim, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x).mean(1)


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(y) on log(x)."""
    if len(xs) < 2:
        return None
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--tokens", default="64,256,1024,4096", help="comma-separated token counts (4x steps)")
    parser.add_argument("--batch", type=int, default=8, help="batch size")
    parser.add_argument("--dim", type=int, default=128, help="token width")
    parser.add_argument("--heads", type=int, default=4, help="heads of the self-attention pooling")
    parser.add_argument("--sketch", default="8,8,8", help="sketch N,K,D")
    parser.add_argument("--repeats", type=int, default=5, help="timed samples per variant and size (median)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per variant and size")
    parser.add_argument(
        "--sample-seconds",
        type=float,
        default=0.2,
        help="target duration of one sample; sets the calls averaged per sample",
    )
    parser.add_argument("--threads", type=int, default=all_cores(), help="torch.set_num_threads; default: all cores")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    parser.add_argument("--quick", action="store_true", help="smoke run: tokens 16,64,256, 2 samples")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    monitor = LoadMonitor(args.threads)
    sizes = [int(t) for t in args.tokens.split(",") if t.strip()]
    repeats, warmup, sample_s = args.repeats, args.warmup, args.sample_seconds
    if args.quick:
        sizes, repeats, warmup, sample_s = [16, 64, 256], 2, 1, 0.02
    n, k, d = (int(v) for v in args.sketch.split(","))

    pools = {
        "sketch": SketchPool(args.dim, n, k, d).eval(),
        "attention": SelfAttentionPool(args.dim, args.heads).eval(),
        "attflat": AttentionPool(args.dim).eval(),
    }
    names = list(pools)
    times: dict[str, list[float]] = {name: [] for name in names}
    calls: dict[int, int] = {}
    with torch.inference_mode():
        for t in sizes:
            x = torch.randn(args.batch, t, args.dim)
            fns = {name: (lambda p=pool, x=x: p(x)) for name, pool in pools.items()}
            for fn in fns.values():
                for _ in range(warmup):
                    fn()
            number = {name: calibrate(fn, sample_s) for name, fn in fns.items()}
            samples = {name: [] for name in names}
            for r in range(repeats):
                for name in names if r % 2 == 0 else names[::-1]:
                    t0 = time.perf_counter()
                    for _ in range(number[name]):
                        fns[name]()
                    samples[name].append((time.perf_counter() - t0) / number[name])
            for name in names:
                times[name].append(statistics.median(samples[name]))
            calls[t] = number
            log(f"tokens {t}: " + ", ".join(f"{name} {times[name][-1] * 1e3:.3f} ms" for name in names))

    def summary(ts: list[float]) -> dict:
        growth = [b / a for a, b in zip(ts, ts[1:])]
        steps = [b / a for a, b in zip(sizes, sizes[1:])]
        upper = len(sizes) // 2
        return {
            "ms": {str(s): round(v * 1e3, 4) for s, v in zip(sizes, ts)},
            "growth_per_step": [round(g, 2) for g in growth],
            "local_exponent_per_step": [round(math.log(g) / math.log(st), 2) for g, st in zip(growth, steps)],
            "loglog_slope_all": round(slope(sizes, ts), 3),
            "loglog_slope_upper_half": round(slope(sizes[upper:], ts[upper:]), 3) if len(sizes) - upper >= 2 else None,
        }

    print(
        json.dumps(
            {
                "benchmark": "sketch_vs_attention_pooling",
                "quick": args.quick,
                "tokens": sizes,
                "batch": args.batch,
                "dim": args.dim,
                "heads": args.heads,
                "sketch_nkd": [n, k, d],
                "threads": args.threads,
                "torch": torch.__version__,
                "repeats": repeats,
                "machine_load": monitor.report(),
                "calls_per_sample": {str(t): c for t, c in calls.items()},
                "sketch": summary(times["sketch"]),
                "attention": summary(times["attention"]),
                "attflat": summary(times["attflat"]),
                "attention_over_sketch_time": {
                    str(s): round(a / b, 2) for s, a, b in zip(sizes, times["attention"], times["sketch"])
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
