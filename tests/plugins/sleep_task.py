"""A digits-shaped task whose epochs are mostly sleep: each epoch's one training step (16 samples, batch
16) sleeps ``sleep_s`` seconds, so a trial holds its Ray slot for about ``sleep_s`` per epoch, all of it
inside the training wall time lwnas records, while using almost no CPU, so many trials can run at
once on a small machine (a task plugin for bench/many_workers.py and tests/test_many_workers.py,
which copy this file next to their study).

Its 16 samples per split are drawn from a seeded generator instead of loading scikit-learn's digits:
loading them imports scikit-learn and SciPy, about 150 MB of private memory and 2.7 s per Ray worker
(measured, see docs/performance.md), which would bound how many trials fit at once more than lwnas does.
The model, training loop and record path are lwnas's own (the task only supplies data and sleeps)."""

from __future__ import annotations

import time

import torch

from trainers.tasks.digits import Digits

SAMPLES = 16  # per split: the training step itself costs next to nothing


class SleepDigits(Digits):
    name = "sleep-digits"
    family = "encoder"

    def __init__(self, sleep_s: float = 1.0):
        self.sleep_s = float(sleep_s)

    def load(self, seed: int = 0):
        # the same shapes as Digits: a 4x4 grid of 2x2-pixel patches, 10 classes
        generator = torch.Generator().manual_seed(seed)
        return {
            split: {
                "patches": torch.randn(SAMPLES, 16, 4, generator=generator),
                "labels": torch.randint(0, 10, (SAMPLES,), generator=generator),
            }
            for split in ("train", "val", "test")
        }

    def loss(self, model, batch):
        time.sleep(self.sleep_s)  # once per epoch: the training split is one batch
        return super().loss(model, batch)
