"""Does LW-Transformer 1x's MAdds saving show up as CPU latency? Times, in the same run, the
MCAN baseline and LW-Transformer 1x (G-MHA + G-FFN + weight sharing, k=2; LW-Transformer
Table II rows 1 and "1x") at inference, and compares the realised speedup with the MAdds ratio.

Both models: family mcan, d_model 512, d_ff 2048, 8 heads, 6 encoder + 6 decoder layers,
14 question tokens, 100 image regions, dropout 0, eval mode, torch.inference_mode.

Two things are timed per model and batch size:
  * layers: the 6 encoder + 6 decoder layers on already-embedded inputs, called exactly as
    MCAN.forward calls them (question mask included); this is the part the paper's MAdds count
    (its footnote 3) and what madds_breakdown's encoder + decoder sections cover.
  * full: MCAN.forward end to end (embeddings, layers, pooling, classifier).

Measurements are interleaved (base, lw, lw, base, ...) so drift on a shared machine hits both
alike; each sample is the mean of `number` calls (calibrated per batch size). The speedup is the
median over rounds of the paired ratio t_base / t_lw (both timed back to back in that round, so
slow spells of a shared machine mostly cancel); the ratio of the median latencies is reported too.

  efficiency = (t_base / t_lw) / (madds_base / madds_lw)      (target >= 0.8)

Prints one JSON object to stdout; progress goes to stderr.
Usage: python bench/latency_lw_vs_mcan.py [--batch-sizes 1,8] [--repeats 7] [--threads N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HelpFormatter, LoadMonitor, all_cores, calibrate, log  # noqa: E402

from searchspace import ArchConfig, build_model  # noqa: E402
from trainers import cost  # noqa: E402

BASE = ArchConfig(
    family="mcan", d_model=512, d_ff=2048, heads=8, layers=6, dropout=0.0, question_tokens=14, image_regions=100
)
LW_1X = BASE.replace(groups=2, g_mha=True, g_ffn=True, weight_sharing=True)


def layers_fn(model, question, regions):
    """The encoder + decoder stacks on embedded inputs, as MCAN.forward runs them."""
    q_mask = question != 0
    q_emb = model.embed_tokens(question)
    x_emb = model.embed_regions(regions)

    def run():
        q = q_emb
        for layer in model.encoder:
            q = layer(q, mask=q_mask)
        x = x_emb
        for layer in model.decoder:
            x = layer(x, q, memory_mask=q_mask)
        return q, x

    return run


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, number: int) -> dict[str, list[float]]:
    """Seconds per call of each fn, ``repeats`` samples of ``number`` calls; the order alternates
    every round (A B, B A, ...) so neither side always runs first."""
    names = list(fns)
    samples = {n: [] for n in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            fn = fns[name]
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - t0) / number)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--batch-sizes", default="1,8", help="comma-separated batch sizes")
    parser.add_argument("--repeats", type=int, default=7, help="timed samples per model (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per model and batch size")
    parser.add_argument(
        "--sample-seconds",
        type=float,
        default=0.3,
        help="target duration of one sample; sets the calls averaged per sample",
    )
    parser.add_argument("--threads", type=int, default=all_cores(), help="torch.set_num_threads; default: all cores")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: batch 1, 3 encoder + 3 decoder layers, 2 samples, 1 warm-up call",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    monitor = LoadMonitor(args.threads)

    base_cfg, lw_cfg = BASE, LW_1X
    batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    repeats, warmup, sample_s = args.repeats, args.warmup, args.sample_seconds
    if args.quick:
        base_cfg, lw_cfg = BASE.replace(layers=3), LW_1X.replace(layers=3)
        batch_sizes, repeats, warmup, sample_s = [1], 2, 1, 0.0

    log("counting MAdds (fvcore) ...")
    madds = {}
    for name, cfg in (("base", base_cfg), ("lw", lw_cfg)):
        report = cost(cfg, memory=False)
        br = report.madds_breakdown
        madds[name] = {
            "layers": br["encoder"] + br["decoder"],
            "total": report.madds,
            "params_layers": report.params_breakdown["encoder"] + report.params_breakdown["decoder"],
        }
    madds_ratio = madds["base"]["layers"] / madds["lw"]["layers"]
    madds_ratio_total = madds["base"]["total"] / madds["lw"]["total"]

    models = {"base": build_model(base_cfg).eval(), "lw": build_model(lw_cfg).eval()}
    results = []
    with torch.inference_mode():
        for batch in batch_sizes:
            question = torch.randint(1, base_cfg.vocab_size, (batch, base_cfg.question_tokens))
            regions = torch.randn(batch, base_cfg.image_regions, base_cfg.region_features)
            base, lw = models["base"], models["lw"]
            # order: each base/lw pair runs back to back (the order reverses every round)
            fns = {
                "base_layers": layers_fn(base, question, regions),
                "lw_layers": layers_fn(lw, question, regions),
                "base_full": lambda base=base, question=question, regions=regions: base(question, regions),
                "lw_full": lambda lw=lw, question=question, regions=regions: lw(question, regions),
            }
            # sanity: the layers path is the same computation MCAN.forward does
            for name, model in models.items():
                q, x = fns[f"{name}_layers"]()
                ref = model(question, regions)
                fused = model.proj_question(model.pool_question(q, question != 0)) + model.proj_image(
                    model.pool_image(x)
                )
                assert torch.allclose(model.classifier(model.norm(fused)), ref, atol=1e-4), "layers path diverges"
            for fn in fns.values():
                for _ in range(warmup):
                    fn()
            n = max(calibrate(fn, sample_s) for fn in fns.values())  # same call count for every side
            log(f"batch {batch}: timing {repeats} interleaved rounds of {n} call(s) per sample")
            samples = interleaved(fns, repeats, n)
            med = {k: statistics.median(v) for k, v in samples.items()}
            # per-round paired ratios: both sides of a pair ran back to back, so slow spells of a
            # shared machine cancel in the ratio better than in the ratio of medians
            paired = {
                part: statistics.median(b / w for b, w in zip(samples[f"base_{part}"], samples[f"lw_{part}"]))
                for part in ("layers", "full")
            }
            speed = {part: med[f"base_{part}"] / med[f"lw_{part}"] for part in ("layers", "full")}
            row = {
                "batch": batch,
                "calls_per_sample": n,
                "latency_ms": {k: round(v * 1e3, 2) for k, v in med.items()},
                "latency_ms_min": {k: round(min(v) * 1e3, 2) for k, v in samples.items()},
                "latency_ms_max": {k: round(max(v) * 1e3, 2) for k, v in samples.items()},
                "speedup_layers": round(paired["layers"], 3),
                "speedup_full": round(paired["full"], 3),
                "efficiency_layers": round(paired["layers"] / madds_ratio, 3),
                "efficiency_full": round(paired["full"] / madds_ratio_total, 3),
                "meets_target_0.8": paired["layers"] / madds_ratio >= 0.8,
                "speedup_layers_ratio_of_medians": round(speed["layers"], 3),
                "speedup_full_ratio_of_medians": round(speed["full"], 3),
                "efficiency_layers_ratio_of_medians": round(speed["layers"] / madds_ratio, 3),
            }
            log(
                f"batch {batch}: layers base {row['latency_ms']['base_layers']} ms, "
                f"lw {row['latency_ms']['lw_layers']} ms -> speedup {row['speedup_layers']}, "
                f"efficiency {row['efficiency_layers']}"
            )
            results.append(row)

    print(
        json.dumps(
            {
                "benchmark": "latency_lw_vs_mcan",
                "base": "MCAN baseline (LW-Transformer Table II row 1)",
                "lw": "LW-Transformer 1x: G-MHA + G-FFN + WS, k=2",
                "quick": args.quick,
                "config_base": base_cfg.to_dict(),
                "config_lw": lw_cfg.to_dict(),
                "threads": args.threads,
                "machine_load": monitor.report(),
                "torch": torch.__version__,
                "repeats": repeats,
                "madds_layers": {"base": madds["base"]["layers"], "lw": madds["lw"]["layers"]},
                "madds_total": {"base": madds["base"]["total"], "lw": madds["lw"]["total"]},
                "madds_ratio_layers": round(madds_ratio, 3),
                "madds_ratio_total": round(madds_ratio_total, 3),
                "params_layers": {"base": madds["base"]["params_layers"], "lw": madds["lw"]["params_layers"]},
                "results": results,
                "note": "speedup_* = median over rounds of t_base / t_lw (paired, same round); "
                "efficiency_layers = speedup_layers / madds_ratio_layers (the paper's counted part); "
                "efficiency_full = speedup_full / madds_ratio_total",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
