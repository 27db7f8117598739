"""Train a pack of candidates in one process from one loaded data set, each as it would train alone.

A sweep's trial costs more to dispatch and report than a small candidate costs to train (about 0.8 s of
Ray against 0.5 s of training for a quickstart trial on two cores), so a worker that trains P candidates
pays that once for P. Each member is a ``trainers.loop.ModelRun``: its own model, seed, AdamW, schedule
and data-order generator, all as ``fit`` makes them. What the members share is the task, its data (loaded
once; each member's batches are gathered from it in that member's own order and moved to the device as
``fit`` moves them) and the process. The code is device-agnostic: on CUDA each member's GPU generator is
swapped too, and every report names the device the member trained on.

Faithfulness: members advance an epoch at a time, one after another, and torch's global generator
(dropout draws from it) is swapped per member, so each member sees exactly the random stream, batches and
arithmetic it would see trained alone with the same seed: its losses equal solo training's (the tests
compare them per family and per shape-changing knob). Members are not fused into batched operations:
different widths, group counts and sharing patterns change shapes, and fusing them with dropout would
change each member's random stream.

A member that fails (non-finite loss, divergence, out of memory, any error) or that its callback stops
(``StopTraining``: a scheduler pruned it) drops out; the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from searchspace import ArchConfig

from .loop import ModelRun, StopTraining, TrainingError, TrainResult, TrainSettings, resolve_device
from .tasks import Task
from .tasks.base import DATA_SEED


@dataclass(frozen=True)
class Member:
    """One candidate of a pack: its configuration (fitted to the task), settings and static MAdds."""

    config: ArchConfig
    settings: TrainSettings
    madds: int | None = None


@dataclass
class MemberOutcome:
    """How one member ended: ``result`` once it trained (a full budget, or stopped after some epochs),
    ``failure`` (a TrainingError) when it failed; ``stopped`` when its callback ended it early."""

    history: list[dict[str, Any]] = field(default_factory=list)
    result: TrainResult | None = None
    failure: TrainingError | None = None
    stopped: bool = False


class _RandomStream:
    """Torch's global generator state of one member, swapped in around each of its epochs."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.saved()

    def saved(self) -> None:
        self.cpu = torch.get_rng_state()
        self.gpu = torch.cuda.get_rng_state() if self.cuda else None

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.gpu is not None:
            torch.cuda.set_rng_state(self.gpu)


def fit_pack(
    members: Sequence[Member],
    task: Task,
    callback: Callable[[int, dict[str, Any]], None] | None = None,
    data: dict | None = None,
    on_end: Callable[[int, MemberOutcome], None] | None = None,
    on_round: Callable[[], None] | None = None,
) -> list[MemberOutcome]:
    """Train every member on ``task``; one outcome per member, in order.

    Args:
        members: the candidates; their settings may differ (batch size, lr, epochs), but not their device.
        task: the task every member trains on.
        callback: ``callback(index, report)`` after each of member ``index``'s epochs; raising
            ``StopTraining`` ends that member (its outcome keeps the epochs it trained).
        data: preloaded ``task.load()`` output (loaded once here otherwise).
        on_end: ``on_end(index, outcome)`` as soon as member ``index`` ends (trained, failed or stopped).
        on_round: called after each round, in which every live member trained one epoch (a sweep's worker
            reports the round's epochs to Ray Tune at once).
    """
    if not members:
        return []
    devices = {m.settings.device for m in members}
    if len(devices) > 1:
        raise ValueError(f"a pack trains on one device, but its members ask for {sorted(devices)}")
    device = resolve_device(members[0].settings.device)
    if members[0].settings.threads:
        torch.set_num_threads(members[0].settings.threads)
    data = data or task.load(seed=DATA_SEED)  # once, for every member
    outcomes = [MemberOutcome() for _ in members]
    runs: dict[int, tuple[ModelRun, _RandomStream]] = {}
    for i, member in enumerate(members):
        try:
            run = ModelRun(member.config, task, member.settings, data, member.madds, device)
        except TrainingError as exc:  # beyond the device: this member fails, the others train
            outcomes[i].failure = exc
            if on_end is not None:
                on_end(i, outcomes[i])
            continue
        runs[i] = (run, _RandomStream(device))  # the stream right after this member's model was built
    _train(runs, outcomes, callback, on_end, on_round)
    return outcomes


def _train(
    runs: dict[int, tuple[ModelRun, _RandomStream]],
    outcomes: list[MemberOutcome],
    callback: Callable[[int, dict[str, Any]], None] | None,
    on_end: Callable[[int, MemberOutcome], None] | None,
    on_round: Callable[[], None] | None,
) -> None:
    """Advance every live member an epoch at a time until each has trained, failed or been stopped."""
    live = dict(runs)
    while live:
        for i in list(live):
            run, stream = live[i]
            outcome = outcomes[i]
            stream.restore()
            try:
                report = run.epoch()
            except TrainingError as exc:
                outcome.failure = exc
            except torch.OutOfMemoryError as exc:  # outside a step (evaluation)
                outcome.failure = TrainingError(len(run.history) + 1, f"out of memory: {str(exc).splitlines()[0]}")
            except Exception as exc:  # noqa: BLE001 - one member's error is its own; the others go on
                outcome.failure = TrainingError(len(run.history) + 1, f"{type(exc).__name__}: {exc}")
            else:
                outcome.history.append(report)
            finally:
                stream.saved()
            if outcome.failure is None and callback is not None:
                try:
                    callback(i, report)
                except StopTraining:
                    outcome.stopped = True
            if outcome.failure is not None or outcome.stopped or len(run.history) >= run.settings.epochs:
                if outcome.failure is None:
                    outcome.result = run.result()
                del live[i]
                if on_end is not None:
                    on_end(i, outcome)
        if on_round is not None:
            on_round()
