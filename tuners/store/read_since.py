"""The bookkeeping of an incremental trial read, shared by ``bulk_read.TrialReader`` and ``record_read.RecordReader``.

Optuna never changes a finished trial and trial ids grow, so a reader that remembers the largest trial id it
has read and the trials that were still open (running, waiting) then needs only those two sets next time,
and returns an open trial only where it differs from what it read before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

OPEN = ("RUNNING", "WAITING")
CHUNK = 500  # trial ids per IN list (SQLite allows 32,766 bound values; PostgreSQL more)

T = TypeVar("T")


class ReadSince(Generic[T]):
    """What a reader has seen: the largest trial id, and each trial open at the last read (by id)."""

    def __init__(self, is_open: Callable[[T], bool]):
        self.max_trial_id = -1  # trials above it are new at the next read
        self.open: dict[int, T] = {}  # trials running or waiting at the last read, by id
        self._is_open = is_open

    def open_chunks(self) -> list[list[int]]:
        """The open trials' ids, sorted, in lists of at most ``CHUNK`` (one SQL ``IN`` list each)."""
        ids = sorted(self.open)
        return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]

    def changed(self, pairs: list[tuple[int, T]]) -> list[T]:
        """Of ``(trial id, trial)`` just read, the new ones and the open ones that changed; remembers them."""
        changed = [trial for key, trial in pairs if self.open.get(key) != trial]  # an open trial may be as it was
        for key, trial in pairs:
            self.max_trial_id = max(self.max_trial_id, key)
            self.open.pop(key, None)
            if self._is_open(trial):
                self.open[key] = trial
        return changed
