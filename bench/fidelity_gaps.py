"""How large is each remaining difference between lwnas and a paper or its authors' code?
The figures docs/paper-fidelity.md states, each measured here on random inputs (seeded).

  box_relation      ORT's box-relation embedding: lwnas (the authors' released code: sizes + 1.0,
                    ratio log(w_i / w_j)) against the paper's formula (no offset, log(w_j / w_i)),
                    on random boxes in 0-1 coordinates: max |difference| of the 4 geometry numbers
                    and of the 64-d sinusoidal embedding.
  coupled_scale     Couplformer's logit scale: `quarter` (c^-1/4, the authors' current code) over
                    `half` (c^-1/2, their 2021 code) is a temperature factor c^(1/4) on both maps;
                    max |difference| of the kernel output on N(0, 1) q, k, v.
  layer_norm        ACORT's code normalises by the unbiased standard deviation plus eps (1e-6);
                    nn.LayerNorm by sqrt(biased variance + eps) (1e-5). Max |difference| with
                    identical weights (1, 0) on N(0, 1) inputs of width d.
  radix_digits      digits per word: lwnas (paper, v^D >= words: D) against the authors' tokenizer
                    (the number of base-v digits of the word count) at exact powers and at 10,001.
  sketch_batchnorm  T-EMDE's sketch in training mode: lwnas's BatchNorm statistics over all real
                    tokens of a padded batch against running the coder item by item (Listing 1 is
                    per item): max |difference| of the pooled sketches, relative to their max.

Prints one JSON object to stdout (no timings: these are sizes of differences, deterministic per seed).
Usage: python bench/fidelity_gaps.py [--seed 0] [--threads N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import HelpFormatter  # noqa: E402
from searchspace.layers import CoupledAttention, SketchPool  # noqa: E402
from searchspace.models import box_relation_embedding  # noqa: E402
from searchspace.radix import digits_for  # noqa: E402


def paper_geometry(boxes: torch.Tensor) -> torch.Tensor:
    """(B, R, 4) -> (B, R, R, 4): Hu et al.'s numbers as the ORT paper writes them (no offset, w_j / w_i)."""
    x0, y0, x1, y1 = boxes.unbind(-1)
    cx, cy, w, h = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0), (y1 - y0)
    dx = torch.log(((cx[:, :, None] - cx[:, None, :]).abs() / w[:, :, None]).clamp(min=1e-3))
    dy = torch.log(((cy[:, :, None] - cy[:, None, :]).abs() / h[:, :, None]).clamp(min=1e-3))
    return torch.stack([dx, dy, torch.log(w[:, None, :] / w[:, :, None]), torch.log(h[:, None, :] / h[:, :, None])], -1)


def sinusoid(numbers: torch.Tensor, dim: int = 64, wave_len: float = 1000.0) -> torch.Tensor:
    """ORT's embedding of the geometry numbers: 100x, 8 frequencies, sines then cosines."""
    inv = wave_len ** (-torch.arange(dim // 8, dtype=numbers.dtype) / (dim // 8))
    angles = (100.0 * numbers.unsqueeze(-1) * inv).flatten(-2)
    return torch.cat([angles.sin(), angles.cos()], -1)


def box_relation(gen: torch.Generator, images: int = 64) -> dict:
    corner = torch.rand(images, 20, 2, generator=gen, dtype=torch.float64) * 0.6
    sides = 0.01 + torch.rand(images, 20, 2, generator=gen, dtype=torch.float64) * 0.39
    boxes = torch.cat([corner, corner + sides], -1)
    ours = box_relation_embedding(boxes)
    paper_numbers = paper_geometry(boxes)
    # lwnas's numbers, read back from its own embedding would need an inverse; recompute them instead.
    x0, y0, x1, y1 = boxes.unbind(-1)
    w, h = x1 - x0 + 1.0, y1 - y0 + 1.0
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    ours_numbers = torch.stack(
        [
            torch.log(((cx[:, :, None] - cx[:, None, :]).abs() / w[:, :, None]).clamp(min=1e-3)),
            torch.log(((cy[:, :, None] - cy[:, None, :]).abs() / h[:, :, None]).clamp(min=1e-3)),
            torch.log(w[:, :, None] / w[:, None, :]),
            torch.log(h[:, :, None] / h[:, None, :]),
        ],
        -1,
    )
    assert torch.allclose(sinusoid(ours_numbers), ours)  # the recomputation is lwnas's embedding
    return {
        "boxes": f"{images} images x 20 boxes, corners U(0, 0.6), sides U(0.01, 0.4)",
        "max_abs_diff_geometry_numbers": (ours_numbers - paper_numbers).abs().amax().item(),
        "max_abs_diff_embedding": (ours - sinusoid(paper_numbers)).abs().amax().item(),
    }


def coupled_scale(gen: torch.Generator, c: int = 64) -> dict:
    q, k, v = (torch.randn(8, 4, 64, c, generator=gen, dtype=torch.float64) for _ in range(3))
    quarter = CoupledAttention((8, 8), coupled_scale="quarter")(q, k, v)
    half = CoupledAttention((8, 8), coupled_scale="half")(q, k, v)
    return {
        "head_size": c,
        "temperature_factor": c**0.25,
        "grid": [8, 8],
        "max_abs_diff_output": (quarter - half).abs().amax().item(),
    }


def layer_norm(gen: torch.Generator) -> dict:
    out = {}
    for d in (16, 64, 512):
        x = torch.randn(4096, d, generator=gen, dtype=torch.float64)
        mean = x.mean(-1, keepdim=True)
        authors = (x - mean) / (x.std(-1, keepdim=True) + 1e-6)  # unbiased std, eps on the std
        ours = nn.functional.layer_norm(x, (d,), eps=1e-5)
        out[f"d={d}"] = {"max_abs_diff": (authors - ours).abs().amax().item(), "relative_scale": math.sqrt((d - 1) / d)}
    return out


def authors_digit_count(words: int, base: int) -> int:
    """Length of the base-``base`` representation of the word count (the authors' tokens per word)."""
    count = 0
    while words:
        words //= base
        count += 1
    return max(count, 1)


def radix_digits() -> list[dict]:
    table6 = [(10001, v) for v in (256, 512, 768, 1024)]  # the paper's vocabulary at every v of its Table 6
    cases = [*table6, (256**2, 256), (768**2, 768), (512, 512), (1000, 10)]
    return [{"words": n, "base": v, "lwnas": digits_for(n, v), "authors": authors_digit_count(n, v)} for n, v in cases]


def sketch_batchnorm(gen: torch.Generator) -> dict:
    torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=gen)))
    pool = SketchPool(32, n=4, k=8, d=8).double().train()
    x = torch.randn(6, 10, 32, generator=gen, dtype=torch.float64)
    lengths = [10, 7, 5, 3, 8, 2]
    mask = torch.arange(10)[None, :] < torch.tensor(lengths)[:, None]
    batch = pool(x, mask)
    per_item = torch.cat([pool(x[i : i + 1, :n]) for i, n in enumerate(lengths)])
    return {
        "batch": "6 items, 2-10 real tokens of width 32, N=4, K=8, D=8",
        "max_abs_diff": (batch - per_item).abs().amax().item(),
        "max_abs_value": batch.abs().amax().item(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: all cores)")
    parser.add_argument("--quick", action="store_true", help="4 images of boxes instead of 64 (a smoke run)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(args.seed)
    with torch.no_grad():
        result = {
            "seed": args.seed,
            "quick": args.quick,
            "box_relation": box_relation(gen, 4 if args.quick else 64),
            "coupled_scale": coupled_scale(gen),
            "layer_norm": layer_norm(gen),
            "radix_digits": radix_digits(),
            "sketch_batchnorm": sketch_batchnorm(gen),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
