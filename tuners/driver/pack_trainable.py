"""The Ray Tune trainable of a pack (``tuner: {pack: N}``): one Ray trial trains several Optuna trials.

The Ray trial's config carries the records of its members (``RECORDS``), each planned by the driver as a
single trial's is (``tuners/driver/pack_searcher.py``). The worker trains them together with
``trainers.pack.fit_pack`` (one task, one loaded data set, each member as it trains alone). After each round
(every live member trained one epoch) it sends Ray Tune one report, ``{MEMBERS: [...]}``, holding each member's
epoch (naming its member, ``MEMBER``): Tune's per-report work (its result processing, loggers and callbacks)
is paid once per round, not once per member. A member's last report says how it ended (``ENDED``: trained its
budget, failed or pruned), and the driver closes that member's Optuna trial at once while the others train on.

With ``scheduler: mo-asha`` the pack cannot be stopped member by member from the driver (Ray stops whole
trials), so each member's rung decision is asked of the sweep's ``PackPruner`` actor, which holds the same
``MOASHA`` rungs for every member of every pack.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from tuners.driver.mo_asha import MOASHA
from tuners.driver.trainable import (
    ALLOWED_PLUGINS,
    epoch_reporter,
    task_and_data,
    where_this_runs,
)
from tuners.store.record import TrialRecord

RECORDS = "_lwnas_records"  # the members' TrialRecord.for_worker(), in pack order
MEMBERS = "_lwnas_members"  # a pack's report: the member reports of one round, each a dict with MEMBER
MEMBER = "_lwnas_member"  # in each member report: the Optuna number of the member it is about
ENDED = "_lwnas_ended"  # in a member's last report: "complete", "pruned" or "failed"
PRUNED = "lwnas_pruned"  # with ENDED "pruned": why mo-asha stopped it (MOASHA.judge's reason)
PRUNER = "_lwnas_pruner"  # the name of the sweep's PackPruner actor (absent: no scheduler)


class PackPruner:
    """mo-asha's rungs for members of packs, as one Ray actor per sweep (``ray.remote(PackPruner)``)."""

    def __init__(self, moasha: MOASHA):
        self.moasha = moasha

    def judge(self, number: int, result: dict[str, Any]) -> dict[str, Any] | None:
        """None: the member trains on; else why it stops (recorded as its ``pruned_by``)."""
        return self.moasha.judge(str(number), number, result)


def train_pack(
    records: list[TrialRecord],
    report: Callable[[dict[str, Any]], None],
    judge: Callable[[int, dict[str, Any]], dict[str, Any] | None] | None = None,
) -> None:
    """Train ``records`` together; after each round (every live member trained an epoch) one ``report``
    of ``{MEMBERS: [...]}``: each member's epoch (``MEMBER``) and, in its last, how it ended (``ENDED``).

    ``judge(number, result)`` is mo-asha's decision (None: continue). Every member's failure is its own.
    """
    from searchspace import ArchConfig
    from trainers.loop import StopTraining, TrainSettings
    from trainers.pack import Member, MemberOutcome, fit_pack

    task, data = task_and_data(records[0])
    configs = [ArchConfig.from_dict(r.config) for r in records]
    settings = [TrainSettings.from_dict(r.training) for r in records]
    members = [Member(c, s, _int_or_none(r.costs.get("madds"))) for c, s, r in zip(configs, settings, records)]
    pending: list[dict[str, Any]] = []  # this round's member reports: one Ray report per round, not per member
    reporters = [
        epoch_reporter(r, c, s, _naming(r.number, pending.append)) for r, c, s in zip(records, configs, settings)
    ]

    def epoch(i: int, result: dict[str, Any]) -> None:
        number = records[i].number
        reason = judge(number, {**_numeric(records[i].costs), **result}) if judge is not None else None
        if reason is not None:
            reporters[i]({**result, ENDED: "pruned", PRUNED: reason})
            raise StopTraining
        last = result["epoch"] >= settings[i].epochs
        reporters[i]({**result, ENDED: "complete"} if last else result)

    def ended(i: int, outcome: MemberOutcome) -> None:
        if outcome.failure is not None:
            failure = outcome.failure
            pending.append(
                {MEMBER: records[i].number, "epoch": failure.epoch, "lwnas_failed": str(failure), ENDED: "failed"}
            )

    def flush() -> None:
        if pending:
            report({MEMBERS: list(pending)})
            pending.clear()

    fit_pack(members, task, callback=epoch, data=data, on_end=ended, on_round=flush)
    flush()  # members that failed before the first round (beyond the device)


def run_pack(config: dict[str, Any]) -> None:
    """Train the pack in ``config``; reports each round of member epochs to Ray Tune, each naming its member."""
    import ray
    from ray import tune

    from trainers.tasks.registry import allow_plugins

    allow_plugins(config.get(ALLOWED_PLUGINS, ()))
    where = where_this_runs()
    pruner = ray.get_actor(config[PRUNER]) if config.get(PRUNER) else None

    def judge(number: int, result: dict[str, Any]) -> dict[str, Any] | None:
        return ray.get(pruner.judge.remote(number, result))  # type: ignore[union-attr,return-value]

    def report(round_: dict[str, Any]) -> None:
        tune.report({MEMBERS: [{**r, **where} for r in round_[MEMBERS]], **where})

    try:
        records = [TrialRecord.from_worker(r) for r in config[RECORDS]]
        train_pack(records, report, judge if pruner is not None else None)
    except Exception as exc:
        tune.report(
            {"lwnas_error": f"{type(exc).__name__}: {exc}", **where, "lwnas_traceback": traceback.format_exc(limit=8)}
        )
        raise


def _naming(number: int, report: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``report`` with each result naming member ``number``."""
    return lambda result: report({**result, MEMBER: number})


def _numeric(costs: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in costs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _int_or_none(value: float | str | None) -> int | None:
    return None if value is None else int(value)
