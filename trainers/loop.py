"""The training loop shared by sweeps and full training.

AdamW with warm-up and a choice of schedules (cosine; LW-Transformer's step decay with the
lr x sqrt(k) option; ORT's Noam), gradient clipping, seeds, CPU thread control, CUDA with bf16
autocast when present. Validation metrics are reported after every epoch through a callback; any
failure (non-finite loss, out of memory, divergence) raises ``TrainingError`` with the epoch and
the reason, so nothing unmeasured is ever reported as a result.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from searchspace import ArchConfig, ConfigError, build_model
from searchspace.errors import LwnasError
from searchspace.training import TrainSettings  # defined torch-free (the study checker reads it); re-exported

from .cost import TRAINING_BYTES, CostError, check_fits, cost, count_params
from .tasks import Task, adapt_config, batches, split_size
from .tasks.base import DATA_SEED


class TrainingError(LwnasError, RuntimeError):
    """A run failed; ``epoch`` (1-based) and ``reason`` say where and why."""

    def __init__(self, epoch: int, reason: str):
        self.epoch, self.reason = epoch, reason
        super().__init__(f"training failed in epoch {epoch}: {reason}")


class StopTraining(Exception):
    """Raised by an epoch callback to end training early (e.g. a scheduler stopped the trial)."""


@dataclass
class TrainResult:
    config: ArchConfig
    settings: TrainSettings
    task: str
    history: list[dict[str, Any]]
    val: dict[str, float]
    test: dict[str, float]
    params: int
    madds: int | None
    wall_time: float
    model: torch.nn.Module = field(repr=False)

    def summary(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "params": self.params,
            "madds": self.madds,
            "wall_time": round(self.wall_time, 2),
            "epochs_run": len(self.history),
            "val": self.val,
            "test": self.test,
        }


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError([("device", "cuda was asked for but torch sees no CUDA device")])
    return torch.device(name)


def lr_lambda(settings: TrainSettings, steps_per_epoch: int) -> Callable[[int], float]:
    """Multiplier of the base lr at optimizer step ``step`` (0-based)."""
    total = settings.epochs * steps_per_epoch
    warm = max(1, int(settings.warmup_epochs * steps_per_epoch))

    def factor(step: int) -> float:
        s = step + 1
        if settings.schedule == "noam":  # Vaswani et al.: rises linearly, then decays as 1/sqrt(step);
            return min(s / warm, math.sqrt(warm / s))  # normalised so the peak is the base lr
        if s <= warm:
            return s / warm
        if settings.schedule == "cosine":
            return 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total - warm)))
        if settings.schedule == "step":  # LW-Transformer: x0.2 at epochs 10 and 12 of 13, scaled to any length
            epoch = step / steps_per_epoch
            return 0.2 ** ((epoch >= settings.epochs * 10 / 13) + (epoch >= settings.epochs * 12 / 13))
        return 1.0

    return factor


def train(
    config: ArchConfig,
    task: Task,
    settings: TrainSettings | None = None,
    callback: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = True,
    data: dict | None = None,
    label: str | None = None,
) -> TrainResult:
    """Train ``config`` on ``task`` after fitting it to the task's input sizes (``lwnas train``).

    Args:
        config: the architecture; the task's input sizes are applied (``adapt_config``).
        task: a built-in or plugin task.
        settings: training hyperparameters (defaults if None).
        callback: called with each epoch's report; may raise ``StopTraining`` to end early.
        progress: a progress bar on a terminal, one log line per epoch otherwise.
        data: preloaded ``task.load()`` output.
        label: what the progress names before the task (``lwnas confirm``: the trial and how many remain).

    Raises:
        TrainingError: non-finite loss, out of memory or divergence, with the epoch and reason.
    """
    config = adapt_config(config, task)
    madds = cost(config, memory=False).madds
    return fit(config, task, settings, callback, progress, data, madds=madds, label=label)


def fit(
    config: ArchConfig,
    task: Task,
    settings: TrainSettings | None = None,
    callback: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = True,
    data: dict | None = None,
    madds: int | None = None,
    label: str | None = None,
) -> TrainResult:
    """Train exactly ``config`` (already fitted to ``task``): a sweep's worker trains its trial record so.

    Each epoch's report carries ``params``, counted on the model this call built, ``madds`` as given
    (the caller's static cost; nothing is costed here) and ``device``, the device it trained on.
    Arguments and errors as ``train``.
    """
    settings = settings or TrainSettings()
    if settings.threads:
        torch.set_num_threads(settings.threads)
    device = resolve_device(settings.device)
    run = ModelRun(config, task, settings, data or _loaded(config, task, device), madds, device)
    bar = _EpochProgress(enabled=progress, total_steps=run.steps, task=f"{label}: {task.name}" if label else task.name)
    try:
        for epoch in range(1, settings.epochs + 1):
            bar.start(epoch, settings.epochs)
            report = run.epoch(bar.step)
            bar.end(report, task.metric)
            if callback:
                callback(report)
    except StopTraining:
        pass
    finally:
        bar.close()
    return run.result()


def _loaded(config: ArchConfig, task: Task, device: torch.device) -> dict:
    """The task's data, loaded once the configuration is known to fit the device."""
    fits(config, device)
    return task.load(seed=DATA_SEED)


def fits(config: ArchConfig, device: torch.device) -> None:
    """Refuse, before any data loads or model is built, a model beyond the device: one line, not a crash."""
    try:
        check_fits(config, device, TRAINING_BYTES, "training")
    except CostError as exc:
        raise TrainingError(1, str(exc)) from None


class ModelRun:
    """One model's training state, advanced an epoch at a time: ``fit`` trains one, ``trainers.pack`` several.

    Everything a run draws from is its own: the model (built right after ``torch.manual_seed(seed)``), its
    AdamW and schedule, and the data-order generator seeded with the same seed. Dropout draws from torch's
    global generator, which ``trainers.pack`` swaps per run so that each member sees the stream it would alone.
    """

    def __init__(
        self,
        config: ArchConfig,
        task: Task,
        settings: TrainSettings,
        data: dict,
        madds: int | None,
        device: torch.device,
    ):
        fits(config, device)
        self.config, self.task, self.settings, self.data, self.madds, self.device = (
            config,
            task,
            settings,
            data,
            madds,
            device,
        )
        torch.manual_seed(settings.seed)
        self.model = build_model(config).to(device)
        self.params = count_params(self.model)[0]
        lr = settings.lr * (math.sqrt(config.groups) if settings.lr_sqrt_groups else 1.0)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=settings.weight_decay)
        self.steps = math.ceil(split_size(data["train"]) / settings.batch_size)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda(settings, self.steps))
        self.autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda" and settings.amp)
        self.shuffle = torch.Generator().manual_seed(settings.seed)
        self.history: list[dict[str, Any]] = []
        self.first_loss: float | None = None
        self.elapsed = 0.0  # this run's own time: in a pack the members' epochs interleave
        self.started = time.perf_counter()

    def epoch(self, on_step: Callable[[float], None] | None = None) -> dict[str, Any]:
        """Train one epoch and validate; the epoch's report. Raises TrainingError on a failure."""
        t0 = time.perf_counter()
        epoch = len(self.history) + 1
        settings, model = self.settings, self.model
        model.train()
        total, seen = 0.0, 0
        for batch in batches(self.data["train"], settings.batch_size, self.shuffle, self.device):
            n = split_size(batch)
            try:
                with self.autocast:
                    loss = self.task.loss(model, batch)
                if not torch.isfinite(loss):
                    raise TrainingError(
                        epoch, f"non-finite loss ({loss.item()}) at step {seen // settings.batch_size + 1}"
                    )
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if settings.grad_clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
                self.optimizer.step()
                self.scheduler.step()
            except torch.OutOfMemoryError as exc:
                raise TrainingError(epoch, f"out of memory: {str(exc).splitlines()[0]}") from None
            total += loss.item() * n
            seen += n
            if on_step is not None:
                on_step(loss.item())
        train_loss = total / seen
        self.first_loss = self.first_loss or train_loss
        if train_loss > settings.divergence_factor * self.first_loss:
            raise TrainingError(
                epoch,
                f"diverging: train loss {train_loss:.4g} is over "
                f"{settings.divergence_factor:g}x the first epoch's {self.first_loss:.4g}",
            )
        model.eval()
        val = self.task.evaluate(model, self.data["val"])
        elapsed = time.perf_counter() - t0
        self.elapsed += elapsed
        report = {
            "epoch": epoch,
            "train_loss": train_loss,
            **{f"val_{k}": v for k, v in val.items()},
            "lr": self.scheduler.get_last_lr()[0],
            "epoch_time": elapsed,
            "samples_per_s": seen / elapsed,
            "wall_time": self.elapsed,
            "params": self.params,
            "madds": self.madds,
            "device": str(self.device),
        }
        self.history.append(report)
        return report

    def result(self) -> TrainResult:
        """The run's result: its epochs, last validation and a test evaluation."""
        if not self.history:
            raise TrainingError(1, "stopped before the first epoch finished; nothing was measured")
        self.model.eval()
        test = self.task.evaluate(self.model, self.data["test"])
        val = {k[4:]: v for k, v in self.history[-1].items() if k.startswith("val_")}
        return TrainResult(
            self.config,
            self.settings,
            self.task.name,
            self.history,
            val,
            test,
            self.params,
            self.madds,
            time.perf_counter() - self.started,
            self.model,
        )


class _EpochProgress:
    """A rich progress bar on a terminal; a single line per epoch on logs and pipes."""

    def __init__(self, enabled: bool, total_steps: int, task: str):
        self.tty = enabled and sys.stderr.isatty()
        self.enabled, self.total, self.task = enabled, total_steps, task
        self.epochs = 0  # the run's epochs, known at the first start
        self.progress = None
        if self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("loss {task.fields[loss]:.4f}"),
                transient=True,
            )
            self.progress.start()

    def start(self, epoch: int, epochs: int) -> None:
        self.epochs = epochs
        if self.progress:
            self.bar = self.progress.add_task(f"{self.task} epoch {epoch}/{epochs}", total=self.total, loss=0.0)

    def step(self, loss: float) -> None:
        if self.progress:
            self.progress.update(self.bar, advance=1, loss=loss)

    def end(self, report: dict[str, Any], metric: str) -> None:
        if self.progress:
            self.progress.remove_task(self.bar)
        if self.enabled:
            line = (
                f"{self.task} epoch {report['epoch']}/{self.epochs}: train_loss {report['train_loss']:.4f}  "
                f"val_{metric} {report.get('val_' + metric, float('nan')):.4f}  {report['epoch_time']:.1f}s  "
                f"{report['samples_per_s']:.0f} samples/s"
            )
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.progress:
            self.progress.stop()
