"""How much memory does a sweep worker save by reading a bring-your-own data set lazily?

Writes a VQA v2 layout (question and annotation JSON, one bottom-up-attention ``.npz`` of region
features per image) to a temporary folder, prepares it once, then in fresh processes runs one epoch
of batches over the training split two ways, measured in the same run:

  lazy    the `vqa` task's split as loaded: columns read per batch (per-image files, memory maps)
  eager   the same split materialised as tensors first (what a task that holds its split in memory,
          like `features`, keeps in every worker)

Each process reports its peak resident memory (VmHWM) above what it held after importing and
constructing the task. The variants alternate (order reversed every round); medians and the spread
(min..max) over ``--repeats`` rounds are printed as one JSON object. Progress goes to stderr.
Usage: python bench/byod_lazy_memory.py [--images 400] [--regions 36] [--features 2048] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import HelpFormatter, log

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import sys, torch
from trainers.tasks import batches, resolve_task
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
task = resolve_task("vqa", path=sys.argv[1])
data = task.load()["train"]
base = rss("VmRSS")
if sys.argv[2] == "eager":
    every = torch.arange(len(data["question"]))
    data = {k: v[every] for k, v in data.items()}
touched = 0
for b in batches(data, 64, torch.Generator().manual_seed(0)):
    touched += float(b["regions"].sum())
print(rss("VmHWM") - base)
"""


def write_vqa(root: Path, images: int, regions: int, features: int) -> int:
    """The VQA layout with random features; returns the bytes of feature data written."""
    rng = np.random.default_rng(0)
    (root / "features").mkdir(parents=True)
    for i in range(1, images + 1):
        box = rng.uniform(0, 300, (regions, 2))
        np.savez(
            root / "features" / f"COCO_train2014_{i:012d}.jpg.npz",
            x=rng.normal(size=(regions, features)).astype(np.float32),
            bbox=np.concatenate([box, box + 50], 1).astype(np.float32),
            image_w=640,
            image_h=480,
        )
    qid = 0
    for split, ids in (("train", range(1, int(images * 0.8) + 1)), ("val", range(int(images * 0.8) + 1, images + 1))):
        questions, annotations = [], []
        for image in ids:
            for text in ("is there a cat", "what colour is the car", "how many people are there"):
                qid += 1
                questions.append({"image_id": image, "question": text, "question_id": qid})
                annotations.append(
                    {
                        "question_id": qid,
                        "answers": [{"answer": str(rng.choice(["yes", "no", "2"]))} for _ in range(10)],
                    }
                )
        (root / f"v2_OpenEnded_mscoco_{split}2014_questions.json").write_text(json.dumps({"questions": questions}))
        (root / f"v2_mscoco_{split}2014_annotations.json").write_text(json.dumps({"annotations": annotations}))
    return images * regions * features * 4


def peak(data: Path, variant: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(data), variant], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--images", type=int, default=400, help="Images (3 questions each; 80%% train).")
    parser.add_argument("--regions", type=int, default=36, help="Regions per image.")
    parser.add_argument("--features", type=int, default=2048, help="Features per region.")
    parser.add_argument("--repeats", type=int, default=3, help="Rounds of both variants.")
    parser.add_argument("--quick", action="store_true", help="40 images, 1 round: a smoke run; figures mean nothing.")
    args = parser.parse_args()
    if args.quick:
        args.images, args.repeats = 40, 1
    sys.path.insert(0, str(ROOT))
    from trainers.tasks import resolve_task

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "vqa"
        size = write_vqa(data, args.images, args.regions, args.features)
        log(f"wrote {size / 2**20:.0f} MiB of features; preparing")
        train_rows = len(resolve_task("vqa", path=str(data)).load()["train"]["question"])
        results: dict[str, list[int]] = {"lazy": [], "eager": []}
        for r in range(args.repeats):
            for variant in ("lazy", "eager") if r % 2 == 0 else ("eager", "lazy"):
                results[variant].append(peak(data, variant))
                log(f"round {r + 1} {variant}: {results[variant][-1] / 2**20:.1f} MiB")
    mib = {k: [v / 2**20 for v in vals] for k, vals in results.items()}
    med = {k: statistics.median(v) for k, v in mib.items()}
    print(
        json.dumps(
            {
                "feature_data_mib": size / 2**20,
                "train_rows": train_rows,
                "peak_above_start_mib": {
                    k: {"median": med[k], "min": min(v), "max": max(v), "runs": v} for k, v in mib.items()
                },
                "eager_over_lazy": med["eager"] / med["lazy"] if med["lazy"] else None,
                "args": vars(args),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
