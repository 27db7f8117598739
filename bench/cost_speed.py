"""How fast is the static cost model? Times `trainers.cost` on the 44M-parameter MCAN baseline
(LW-Transformer Table II, row 1) and compares, in the same run, peak-memory measurement with
torch's stock MemTracker against our global-peak subclass (same peak, less bookkeeping).

Prints one JSON object. Usage: python bench/cost_speed.py [--repeats N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchspace import build_model  # noqa: E402
from searchspace.files import load_config_file  # noqa: E402
from trainers import cost  # noqa: E402
from trainers.cost import peak_memory  # noqa: E402


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _stock_peak(model, inputs) -> int:
    from torch.distributed._tools.mem_tracker import MemTracker

    tracker = MemTracker()
    tracker.track_external(model)
    with tracker:
        model(*inputs).float().sum().backward()
    return int(sum(s["Total"] for s in tracker.get_tracker_snapshot("peak").values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "studies/papers/lw-transformer/table2-transformer.yaml"))
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--quick", action="store_true", help="one repeat, for a smoke run")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else args.repeats
    config = load_config_file(args.config).config

    cold = _timed(lambda: cost(config))  # first call in the process pays one-time imports
    full = [_timed(lambda: cost(config)) for _ in range(repeats)]
    static = [_timed(lambda: cost(config, memory=False)) for _ in range(repeats)]

    model = build_model(config).train()
    inputs = model.example_inputs(batch=1)
    ours_peak, stock_peak, ours_t, stock_t = 0, 0, [], []
    for _ in range(repeats):  # interleaved so drift hits both alike
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        ours_peak = peak_memory(model, inputs)[0]
        ours_t.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        stock_peak = _stock_peak(model, inputs)
        stock_t.append(time.perf_counter() - t0)

    med = statistics.median
    print(
        json.dumps(
            {
                "config": args.config,
                "params": cost(config, memory=False).params,
                "threads": args.threads,
                "cost_seconds_first_call": round(cold, 3),
                "cost_seconds_warm_median": round(med(full), 3),
                "cost_seconds_without_memory_median": round(med(static), 3),
                "peak_memory_ours_bytes": ours_peak,
                "peak_memory_stock_memtracker_bytes": stock_peak,
                "peak_memory_seconds_ours": round(med(ours_t), 3),
                "peak_memory_seconds_stock_memtracker": round(med(stock_t), 3),
                "stock_over_ours_time_ratio": round(med(stock_t) / med(ours_t), 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
