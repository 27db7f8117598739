"""A digits task that writes down the seed its data was loaded with (a task plugin for
tests/test_data_seed.py, which copies this file next to its configuration)."""

from __future__ import annotations

from pathlib import Path

from trainers.tasks.digits import Digits


class SeedRecordingDigits(Digits):
    name = "seed-recording-digits"
    family = "encoder"

    def load(self, seed: int = 0):
        Path("load-seeds.txt").open("a").write(f"{seed}\n")
        return super().load(seed=seed)
