"""Is measured latency trustworthy, and where do MAdds mislead? For configurations of every family, measures
forward latency (trainers/latency.py, as a sweep does: median after warm-up, CV recorded) twice in one run
and reports, per family and batch size:

  * rank agreement of the two passes: Spearman rho of latency pass 1 vs pass 2 (target >= 0.9);
  * latency against MAdds: Spearman rho of MAdds vs latency, and the configurations whose latency per MAdd
    is furthest from the family's median (grouped or coupled kernels, sharing, sketch pooling);
  * the median CV of the measurements.

The passes are interleaved by configuration order reversed (pass 1 in order, pass 2 in reverse), so slow
spells of a shared machine do not line up with the same configurations. Prints one JSON object to stdout.
Usage: python bench/latency.py [--per-family 12] [--batch 1,8] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HelpFormatter, LoadMonitor, log  # noqa: E402

from searchspace import FAMILIES, ArchConfig, build_model  # noqa: E402
from trainers import cost  # noqa: E402
from trainers.latency import measure_latency  # noqa: E402

FAMILY_SIZES = {
    "encoder": dict(grid=(8, 8), patch_features=16, num_classes=10),
    "mcan": dict(vocab_size=500, region_features=64, image_regions=20, question_tokens=14, num_answers=50),
    "ort": dict(vocab_size=500, region_features=64, image_regions=20, caption_tokens=12),
    "retrieval": dict(vocab_size=500, region_features=64, image_regions=20, caption_tokens=12),
}
# widths x knobs: plain widths (where MAdds and latency should agree) and the knobs where they may not
WIDTHS = [
    dict(d_model=64, heads=4, layers=2),
    dict(d_model=128, heads=4, layers=2),
    dict(d_model=128, heads=8, layers=4),
]
KNOBS = {
    "base": {},
    "g_mha+g_ffn k4": dict(groups=4, g_mha=True, g_ffn=True),
    "ws k4": dict(groups=4, g_mha=True, g_ffn=True, weight_sharing=True),
    "albert": dict(layer_sharing="(0x{layers})"),
    "attn kv": dict(attention_sharing="kv"),
}
SPECIFIC = {
    "encoder": {"coupled": dict(attention="coupled"), "sketch": dict(pooling="sketch", sketch_n=4, sketch_k=16)},
    "mcan": {"sketch": dict(pooling="sketch", sketch_n=4, sketch_k=16)},
    "ort": {"radix 16": dict(radix_base=16)},
    "retrieval": {"sketch": dict(pooling="sketch", sketch_n=4, sketch_k=16)},
}


def configurations(family: str, limit: int) -> dict[str, ArchConfig]:
    out = {}
    knobs = {**KNOBS, **SPECIFIC[family]}
    for width in WIDTHS:
        for name, k in knobs.items():
            k = {key: (v.format(**width) if isinstance(v, str) else v) for key, v in k.items()}
            label = f"d{width['d_model']} h{width['heads']} L{width['layers']} {name}"
            out[label] = ArchConfig(
                family=family, d_ff=2 * width["d_model"], dropout=0.0, **{**width, **FAMILY_SIZES[family], **k}
            )
    return dict(list(out.items())[:limit])


def measure(models: dict, batch: int, device: str, threads: int, order: list[str]) -> dict:
    return {name: measure_latency(models[name], batch, device, threads) for name in order}


def family_report(family: str, limit: int, batches: list[int], device: str, threads: int) -> dict:
    configs = configurations(family, limit)
    torch.manual_seed(0)
    models = {n: build_model(c) for n, c in configs.items()}
    madds = {n: cost(c, memory=False).madds for n, c in configs.items()}
    names = list(configs)
    out = {"configurations": len(names), "batches": {}}
    for batch in batches:
        log(f"{family}: batch {batch}, {len(names)} configurations, two passes")
        first = measure(models, batch, device, threads, names)
        second = measure(models, batch, device, threads, names[::-1])
        a = [first[n].ms for n in names]
        b = [second[n].ms for n in names]
        m = [madds[n] * batch for n in names]
        per_madd = {n: (first[n].ms + second[n].ms) / 2 / (madds[n] * batch) for n in names}
        typical = statistics.median(per_madd.values())
        outliers = sorted(names, key=lambda n: abs(np.log(per_madd[n] / typical)), reverse=True)[:3]
        out["batches"][str(batch)] = {
            "spearman_pass1_vs_pass2": round(float(spearmanr(a, b).statistic), 3),
            "spearman_madds_vs_latency": round(float(spearmanr(m, a).statistic), 3),
            "median_cv": round(statistics.median([first[n].cv for n in names] + [second[n].cv for n in names]), 3),
            "most_off_madds": {
                n: {
                    "ms": round((first[n].ms + second[n].ms) / 2, 3),
                    "madds": madds[n] * batch,
                    "latency_per_madd_vs_family_median": round(per_madd[n] / typical, 2),
                }
                for n in outliers
            },
            "rows": {
                n: {
                    "ms_pass1": round(first[n].ms, 3),
                    "ms_pass2": round(second[n].ms, 3),
                    "cv_pass1": round(first[n].cv, 3),
                    "madds": madds[n] * batch,
                }
                for n in names
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--per-family", type=int, default=12, help="configurations per family (>= 10 for the claim)")
    parser.add_argument("--batch", default="1,8", help="batch sizes, comma-separated")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args()
    batches = [int(b) for b in args.batch.split(",")]
    monitor = LoadMonitor(args.threads)
    report = {
        "device": measure_latency(
            build_model(configurations("encoder", 1)["d64 h4 L2 base"]), 1, args.device, args.threads
        ).device,
        "families": {
            f: family_report(f, args.per_family, batches, args.device, args.threads) for f in args.families.split(",")
        },
    }
    report["machine"] = monitor.report()
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
