"""GPU figures next to the CPU's, for the LW-Transformer Table II configurations (the device check of issue 30):

  * peak memory of one forward + backward at batch 1: the CPU tracker's figure and the CUDA figure net of what
    the device held before the pass (trainers/cost.py:_cuda_peak), and their ratio (expected near 1);
  * forward latency (median ms and CV) at each batch size in each latency mode (eager, compile, cuda-graph).

A prepared script for a session that is lent a GPU: one run prints a Markdown table to stdout and the
machine to stderr. Without CUDA it stops with one line. Usage:
python bench/device_figures.py [--batch 1,8] [--modes eager,compile,cuda-graph] [--configs table2-lw-1x,...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HelpFormatter, log  # noqa: E402

from searchspace.files import load_config_file  # noqa: E402
from searchspace.latency_settings import LATENCY_MODES  # noqa: E402
from trainers import cost  # noqa: E402
from trainers.latency import LatencyError, config_latencies, describe_device  # noqa: E402

PAPER = ROOT / "studies" / "papers" / "lw-transformer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--batch", default="1,8", help="batch sizes of the latencies, comma-separated")
    parser.add_argument("--modes", default=",".join(LATENCY_MODES), help="latency modes, comma-separated")
    parser.add_argument("--configs", default="", help="stems of files in studies/papers/lw-transformer")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("error bench/device_figures.py measures on a GPU, and torch sees no CUDA device here")
    batches = [int(b) for b in args.batch.split(",")]
    modes = args.modes.split(",")
    stems = args.configs.split(",") if args.configs else sorted(p.stem for p in PAPER.glob("table2-*.yaml"))
    log(f"measuring on {describe_device('cuda', 1)}")
    head = ["config", "MAdds", "memory cpu", "memory cuda", "cuda / cpu"]
    head += [f"{mode} b{b} ms (CV)" for mode in modes for b in batches]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for stem in stems:
        config = load_config_file(PAPER / f"{stem}.yaml").config
        on_cpu, on_gpu = cost(config, device="cpu"), cost(config, device="cuda")
        cells = [stem, f"{on_cpu.madds:,}", f"{on_cpu.memory_bytes:,}", f"{on_gpu.memory_bytes:,}"]
        cells.append(f"{(on_gpu.memory_bytes or 0) / (on_cpu.memory_bytes or 1):.3f}")
        for mode in modes:
            try:
                measured = config_latencies(config, batches, "cuda", 1, mode)
                cells += [f"{lat.ms:.3f} ({lat.cv:.2f})" for lat in measured]
            except LatencyError as exc:  # e.g. a forward that cannot be captured as a CUDA graph
                log(f"{stem} {mode}: {exc}")
                cells += ["refused"] * len(batches)
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
