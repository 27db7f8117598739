"""What a refresh keeps: a study's front candidates, seed groups and fronts, updated from the trials that changed.

At 100,000 trials recomputing these over every record took most of a dashboard refresh (docs/performance.md).
A refresh changes few trials, and a changed trial only touches its own seed group, so ``LiveSets.update``
rebuilds the groups of the parents it touches and nothing else. Fronts follow from a fact of dominance:
while candidates are only added, the front of all of them is the front of (the previous front + the added
ones), because whatever an old candidate dominates, some member of the old front dominates too
(``FrontMemo``). A candidate that stops being one (never seen from ``TrialStore.records_since``: finished trials do not
change, but a study deleted and recreated restarts the cache) starts the fronts afresh.
``tests/test_dashboard_refresh.py`` checks every one of these equals a from-scratch build after refreshes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tuners.fronts.objectives import front_candidates
from tuners.fronts.seeds import SeedGroup, groups_of
from tuners.store.record import TrialRecord

Front = Callable[[list[TrialRecord]], list[TrialRecord]]


class FrontMemo:
    """Fronts over a growing list of candidates: each front is kept with how many candidates it covers."""

    def __init__(self) -> None:
        self.added: list[TrialRecord] = []  # every candidate in the order it arrived (append only)
        self._fronts: dict[tuple[str, ...], tuple[int, list[TrialRecord]]] = {}
        self._lock = threading.Lock()  # Streamlit sessions share one cache

    def front(
        self, metrics: tuple[str, ...], size: int, compute: Front, candidates: Callable[[], list[TrialRecord]]
    ) -> list[TrialRecord]:
        """The front over the first ``size`` candidates: the kept front plus those added since, else all."""
        with self._lock:
            seen, known = self._fronts.get(metrics, (-1, []))
        if seen < 0 or seen > size:  # none kept, or kept for a newer load than this one: from scratch
            front = compute(candidates())
        else:
            # by trial number, as the candidates are: ties on the sort objective then keep a full build's order
            front = compute(sorted([*known, *self.added[seen:size]], key=lambda r: r.number))
        with self._lock:
            if size > self._fronts.get(metrics, (-1, []))[0]:
                self._fronts[metrics] = (size, front)
        return front

    def keep(self, fronts: dict[tuple[str, ...], list[TrialRecord]]) -> None:
        """Keep fronts computed elsewhere over every candidate added so far (a first load's, from its columns)."""
        with self._lock:
            for metrics, front in fronts.items():
                self._fronts[metrics] = (len(self.added), list(front))


@dataclass(frozen=True)
class LiveView:
    """One load's candidates, seed groups and seeds (shared, read only), and where its fronts come from."""

    candidates: list[TrialRecord]
    seed_groups: list[SeedGroup]
    seeds: dict[int, int]
    memo: FrontMemo
    size: int  # candidates in ``memo.added`` this load covers


class LiveSets:
    """The candidates, seed groups and fronts of a study, kept by a ``TrialCache`` across refreshes."""

    def __init__(self) -> None:
        self._candidates: dict[int, TrialRecord] = {}
        self._ordered: list[TrialRecord] = []
        self._parent_of: dict[int, int] = {}  # candidate -> the parent of its seed group
        self._members: dict[int, dict[int, TrialRecord]] = {}  # parent -> its candidates
        self._groups: dict[int, SeedGroup] = {}
        self._ordered_groups: list[SeedGroup] = []
        self._seeds: dict[int, int] = {}
        self.memo = FrontMemo()

    def update(self, changed: Sequence[tuple[TrialRecord, int]]) -> LiveView:
        """Take in ``(record, parent)`` of the trials new or changed since the last update."""
        is_candidate = {r.number for r in front_candidates([r for r, _ in changed])}
        touched: set[int] = set()
        added, removed = [], False
        for record, parent in changed:
            number = record.number
            if number in self._parent_of:  # was a candidate: leaves its group (and joins again below if still one)
                old_parent = self._parent_of.pop(number)
                touched.add(old_parent)
                self._members[old_parent].pop(number, None)
            if number in is_candidate:
                touched.add(parent)
                self._parent_of[number] = parent
                self._members.setdefault(parent, {})[number] = record
                removed |= number in self._candidates  # replaced: its old values may have held up the front
                self._candidates[number] = record
                added.append(record)
            elif self._candidates.pop(number, None) is not None:
                removed = True
        if added or removed:
            self._ordered = [self._candidates[n] for n in sorted(self._candidates)]
        if removed:
            self.memo = FrontMemo()
            self.memo.added.extend(self._ordered)
        else:
            self.memo.added.extend(sorted(added, key=lambda r: r.number))
        if touched:
            self._regroup(touched)
        return LiveView(self._ordered, self._ordered_groups, self._seeds, self.memo, len(self.memo.added))

    def _regroup(self, parents: set[int]) -> None:
        seeds = dict(self._seeds)  # a new dict: the previous load's view keeps its own
        for parent in parents:
            old = self._groups.pop(parent, None)
            for member in old.members if old else ():
                seeds.pop(member.number, None)
            members = self._members.get(parent)
            if not members:
                self._members.pop(parent, None)
                continue
            if len(members) == 1:  # most points, and every one at a first load: as groups_of builds it, directly
                (record,) = members.values()
                group = SeedGroup(parent, [record], record, [None] * len(record.scores))
            else:
                (group,) = groups_of(list(members.values()), dict.fromkeys(members, parent))
            self._groups[parent] = group
            seeds.update(dict.fromkeys((m.number for m in group.members), group.seeds))
        self._seeds = seeds
        self._ordered_groups = [self._groups[p] for p in sorted(self._groups)]
