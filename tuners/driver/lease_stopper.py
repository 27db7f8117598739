"""The Ray Tune stopper that ends a sweep whose driver lost its lease (``tuners/driver/lease.py``), apart from
the lease itself so that read commands checking a lease import no Ray."""

from __future__ import annotations

from ray.tune import Stopper

from tuners.driver.lease import StudyLease


class LeaseStopper(Stopper):
    """Ray Tune stopper: ends the whole sweep once the driver has lost its lease (or its storage)."""

    def __init__(self, lease: StudyLease):
        self.lease = lease

    def __getstate__(self) -> dict:
        return {"lease": None}  # Tune pickles its experiment state; the lease stays with this driver

    def __call__(self, trial_id: str, result: dict) -> bool:
        return False

    def stop_all(self) -> bool:
        return self.lease is not None and self.lease.lost is not None
