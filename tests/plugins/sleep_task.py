"""A digits task whose epochs are mostly sleep: a trial holds its Ray slot for about ``sleep_s`` seconds
per epoch while using almost no CPU, so many trials can run at once on a small machine (a task plugin
for bench/many_workers.py, which copies this file next to its study)."""

from __future__ import annotations

import time

from trainers.tasks.digits import Digits


class SleepDigits(Digits):
    name = "sleep-digits"
    family = "encoder"

    def __init__(self, sleep_s: float = 1.0):
        self.sleep_s = float(sleep_s)

    def load(self, seed: int = 0):
        # a few samples per split: the training step itself costs next to nothing
        return {split: {key: value[:16] for key, value in data.items()} for split, data in super().load(seed=seed).items()}

    def evaluate(self, model, data, batch_size=256):
        time.sleep(self.sleep_s)  # once per epoch on the validation split (and once at the end on test)
        return super().evaluate(model, data, batch_size)
