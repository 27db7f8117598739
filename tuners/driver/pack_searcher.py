"""The driver's side of ``tuner: {pack: N}``: one Ray trial trains N Optuna trials, each keeping its own record.

``PackSearcher`` is the study's searcher (``StudySearcher``) with one Ray trial standing for a pack: each
``suggest`` asks Optuna for up to N feasible points, plans each exactly as a single trial is planned (its
own number, seed, record and costs in storage) and hands the worker their records
(``tuners/driver/pack_trainable.py``). The worker reports a round of member epochs at a time, each naming
its member; each goes to that member's trial record as a single trial's report would, and a member's last
report (trained, failed, pruned) tells Optuna its outcome at once, so a driver killed mid-pack leaves
RUNNING only the members that were still training: ``lwnas resume`` re-queues those and nothing else.

Inside, each member is known by a key of its own (``"<ray trial id>#<index>"``) wherever ``StudySearcher``
keys by Ray trial id, so every per-trial step (epochs, retries, outcome, the -> trial-state mapping) is the
single-trial code.

``pack: auto`` sizes each pack by memory: members are added while their planned training memory (the
measured peak of ``trainers.cost`` where the study measures memory, else parameters x
``trainers.cost.TRAINING_BYTES``, the estimate training checks a model against) fits in a quarter of the
memory this driver's machine has free on the study's device, at most ``AUTO_MAX`` members.
"""

from __future__ import annotations

import math
from typing import Any

import optuna
from ray.tune.search import Searcher

from searchspace.study import Study
from tuners.driver.pack_trainable import ENDED, MEMBER, MEMBERS, PRUNED, PRUNER, RECORDS
from tuners.driver.searcher import StudySearcher
from tuners.driver.trainable import NUMBER
from tuners.planning.costs import StaticCosts
from tuners.store import keys
from tuners.store.trial_store import TrialStore

AUTO_MAX = 32  # members of a `pack: auto` pack
AUTO_SHARE = 0.25  # of the device's free memory a `pack: auto` pack may plan to use


class PackSearcher(StudySearcher):
    """``StudySearcher`` with one Ray trial per pack of ``study.tuner.pack`` Optuna trials.

    Args:
        study, ot_study, static, storage: as ``StudySearcher``.
        remaining: the trials left in the budget: the packs together plan exactly that many.
        pruner: the name of the sweep's ``PackPruner`` actor (mo-asha), or None.
    """

    def __init__(
        self,
        study: Study,
        ot_study: optuna.Study,
        static: StaticCosts,
        storage: Any,
        remaining: int,
        pruner: str | None = None,
        store: TrialStore | None = None,
    ):
        super().__init__(study, ot_study, static, storage, store)
        self.left, self.pruner = remaining, pruner
        self.members: dict[str, dict[int, str]] = {}  # Ray trial id -> {Optuna number: member key}
        self.memory_budget = auto_memory_budget(study) if study.tuner.pack == "auto" else None

    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:  # type: ignore[override]
        if self.left <= 0:
            return Searcher.FINISHED
        records: list[dict[str, Any]] = []
        params: dict[str, Any] | None = None
        memory = 0.0
        while self.left > 0 and len(records) < self._most():
            key = f"{trial_id}#{len(records)}"
            planned = self._next_feasible(key)
            if isinstance(planned, str) and not records:
                return planned  # the strategy's screens ended the sweep (Searcher.FINISHED)
            if planned is None or isinstance(planned, str):
                break
            point, number, record = planned
            params = params or point  # Ray shows the first member's params as the trial's
            self.members.setdefault(trial_id, {})[number] = key
            records.append(keys.plain(record.for_worker()))
            self.left -= 1
            memory += planned_memory(record.costs)
            if self.memory_budget is not None and memory >= self.memory_budget:
                break
        if not records:
            return None
        numbers = list(self.members[trial_id])
        for number in numbers:
            self.store.set_attr(number, keys.PACK, numbers)
        pruner = {PRUNER: self.pruner} if self.pruner else {}
        return {**(params or {}), NUMBER: numbers[0], RECORDS: records, **pruner, **self._allowed()}

    def _most(self) -> int:
        return AUTO_MAX if self.study.tuner.pack == "auto" else int(self.study.tuner.pack)

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        """A round of a pack's member reports (``MEMBERS``), each routed to its member's trial."""
        for member in result.get(MEMBERS) or ():
            self._member_result(trial_id, member)

    def _member_result(self, trial_id: str, result: dict[str, Any]) -> None:
        key = self.members.get(trial_id, {}).get(result.get(MEMBER, -1))
        if key is None or key in self.completed:  # a retried pack repeating a member that already ended
            return
        super().on_trial_result(key, result)
        if ENDED in result:
            reason = _unflattened(result, PRUNED)
            if reason:
                self.prune_reasons[key] = reason
            super().on_trial_complete(key, result)
            self.prune_reasons.pop(key, None)

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        """The pack ended: members that sent no end (its worker died, past its retries) end with it."""
        pack_level = {k: v for k, v in (result or {}).items() if k != MEMBERS}
        for key in self.members.pop(trial_id, {}).values():
            if key not in self.completed:
                super().on_trial_complete(key, pack_level if error else None, error or "lwnas_error" in pack_level)

    def record_retry(self, trial_id: str, lost: dict[str, Any]) -> None:
        for key in self.members.get(trial_id, {}).values():
            super().record_retry(key, lost)


def _unflattened(result: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``result[key]`` as the worker sent it: Tune hands searchers results flattened (``key/values/accuracy``)."""
    if isinstance(result.get(key), dict):
        return result[key]
    prefix = f"{key}/"
    out: dict[str, Any] = {}
    for flat, value in result.items():
        if flat.startswith(prefix):
            *path, last = flat[len(prefix) :].split("/")
            node = out
            for part in path:
                node = node.setdefault(part, {})
            node[last] = value
    return out or None


def pack_samples(study: Study, remaining: int) -> int:
    """Ray trials a packed sweep of ``remaining`` trials asks Tune for (the searcher ends it when all are planned)."""
    return remaining if study.tuner.pack == "auto" else math.ceil(remaining / int(study.tuner.pack))


def planned_memory(costs: dict[str, Any]) -> float:
    """Bytes one member is planned to need in training: its measured peak, else the per-parameter estimate."""
    from trainers.cost import TRAINING_BYTES

    measured = costs.get("memory")
    if isinstance(measured, (int, float)) and measured > 0:
        return float(measured)
    return float(costs.get("params") or 0) * TRAINING_BYTES


def auto_memory_budget(study: Study) -> float:
    """Bytes a ``pack: auto`` pack may plan: a share of what this machine has free on the study's device."""
    import os

    import torch

    wants_gpu = study.tuner.gpus_per_trial > 0 or study.training.get("device") == "cuda"
    if wants_gpu and torch.cuda.is_available():
        free = float(torch.cuda.mem_get_info()[0])
    else:
        free = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    return AUTO_SHARE * free
