"""A sweep's trial budget and how its last driver ended, kept as study user attributes.

The budget in force lives on the study (``lwnas:budget``) rather than only in the study file, so
``lwnas sweep --trials N`` and ``lwnas resume NAME --trials N`` stay in force for every later
``lwnas resume``; each raise is appended to ``lwnas:budget_changes`` (old and new budget, when, and
how many trials had used their place by then: the front-stopping rule counts its window from there).
Why the last driver ended (``lwnas:ended``) is what ``lwnas status`` shows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import optuna

from searchspace.errors import LwnasError
from searchspace.study import Study
from tuners.store import keys


class BudgetError(LwnasError, ValueError):
    exit_code = 2


class Ended(StrEnum):
    """Why a sweep's driver ended; stored as its plain value in ``lwnas:ended``."""

    BUDGET = "budget"  # every place in the budget used
    FRONT_STALLED = "front-stalled"  # budget.stop_when: the front stopped moving
    TIME = "time"  # budget.time ran out
    STOPPED = "stopped"  # Ctrl-C, a lost lease, a storage failure

    def __str__(self) -> str:
        return self.value


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def budget_in_force(ot_study: optuna.Study, study: Study) -> int:
    """The trial budget of a study in storage: the last one set on it, else its study file's."""
    return int(ot_study.user_attrs.get(keys.STUDY_BUDGET, study.budget.trials))


def changes(ot_study: optuna.Study) -> list[dict[str, Any]]:
    return list(ot_study.user_attrs.get(keys.STUDY_BUDGET_CHANGES, []))


def counted_at_last_raise(ot_study: optuna.Study) -> int:
    """Trials that had used their place when the budget was last raised (0 if it never was)."""
    raised = changes(ot_study)
    return int(raised[-1]["counted"]) if raised else 0


def raise_budget(ot_study: optuna.Study, study: Study, new: int, counted: int) -> dict[str, Any] | None:
    """Set the budget to ``new`` trials (it only grows) and record the change; None when it is unchanged."""
    old = budget_in_force(ot_study, study)
    if new < old:
        raise BudgetError(
            f"--trials must be at least the study's budget ({old} trials): `lwnas resume --trials N` "
            f"grows a sweep to N trials in all, it never shrinks one (got {new})"
        )
    if new == old:
        return None
    change = {"from": old, "to": new, "at": now(), "counted": counted}
    ot_study.set_user_attr(keys.STUDY_BUDGET_CHANGES, [*changes(ot_study), change])
    ot_study.set_user_attr(keys.STUDY_BUDGET, new)
    return change


def record_end(ot_study: optuna.Study, reason: Ended, detail: str, counted: int) -> None:
    ot_study.set_user_attr(
        keys.STUDY_ENDED, {"reason": reason.value, "detail": detail, "at": now(), "counted": counted}
    )


def ended(ot_study: optuna.Study) -> dict[str, Any] | None:
    """How the study's last driver ended, or None (never ended, or written before lwnas recorded it)."""
    return ot_study.user_attrs.get(keys.STUDY_ENDED)
