"""What happened to a trial: the values stored in its ``outcome`` user attribute."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """What happened to a trial; stored as its plain value in the trial's ``outcome`` attribute."""

    COMPLETE = "complete"  # trained its full budget
    INFEASIBLE = "infeasible"  # broke a static constraint; never trained
    PRUNED = "pruned"  # a scheduler stopped it early
    FAILED = "failed"  # an error, a dead worker or a NaN metric
    INTERRUPTED = "interrupted"  # its driver stopped while it ran; re-queued on resume
    SCREENED = "screened"  # the study's search strategy judged it not worth training; never trained

    def __str__(self) -> str:
        return self.value


TERMINAL_OUTCOMES = (Outcome.COMPLETE, Outcome.PRUNED, Outcome.FAILED)  # count toward the budget
_FINISHED_STATES = {"COMPLETE": Outcome.COMPLETE, "PRUNED": Outcome.PRUNED, "FAIL": Outcome.FAILED}


def outcome_of_state(state: str) -> str:
    """The outcome of a trial without an ``outcome`` attribute, from Optuna's state name (running, waiting)."""
    finished = _FINISHED_STATES.get(state)
    return finished.value if finished else state.lower()
