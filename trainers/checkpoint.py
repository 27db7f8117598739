"""Checkpoints of full training: everything needed to rebuild and re-evaluate the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from searchspace import ArchConfig, build_model
from searchspace.errors import LwnasError, shorten, shown
from searchspace.files import dump_config

from .cost import WEIGHT_BYTES, CostError, check_fits
from .loop import TrainResult, TrainSettings, resolve_device
from .tasks import Task, resolve_task
from .tasks.base import DATA_SEED


def save_run(
    result: TrainResult,
    out: Path,
    task_options: dict[str, Any],
    provenance: dict | None = None,
    task: str | None = None,
) -> dict:
    """Write ``checkpoint.pt``, ``metrics.json`` and ``config.yaml`` (the exact configuration used).

    ``task`` is the reference the task was resolved from (a plugin's ``package.module:Class``), which
    `lwnas evaluate` resolves again; a plugin's display name would not resolve.
    """
    out.mkdir(parents=True, exist_ok=True)
    metrics = {**result.summary(), "history": result.history}
    torch.save(
        {
            "config": result.config.to_dict(),
            "task": task or result.task,
            "task_options": task_options,
            "settings": result.settings.to_dict(),
            "state_dict": result.model.state_dict(),
            "metrics": metrics,
        },
        out / "checkpoint.pt",
    )
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    metadata = {"training": result.settings.to_dict()}
    if provenance:
        metadata["provenance"] = provenance
    (out / "config.yaml").write_text(dump_config(result.config, metadata))
    return metrics


class CheckpointError(LwnasError, ValueError):
    """A checkpoint that cannot be read, rebuilt or evaluated as asked."""


SPLITS = ("train", "val", "test")


def load_run(path: Path, device: str = "auto", data: Path | None = None) -> tuple[torch.nn.Module, Task, dict]:
    """Rebuild the model of a checkpoint (weights loaded, eval mode) and its task.

    ``data`` replaces the data path the checkpoint recorded (a `features` run evaluated elsewhere).
    """
    model, ckpt = load_model(path)
    dev = resolve_device(TrainSettings(device=device).device)
    options = {**ckpt["task_options"], **({"path": str(data)} if data else {})}
    try:
        task = resolve_task(ckpt["task"], **options)
    except (OSError, ValueError) as exc:
        if isinstance(exc, LwnasError):
            raise
        raise CheckpointError(
            f"cannot load the data of task {ckpt['task']!r} for {path}: {exc}; pass "
            f"--data with the data file (the checkpoint keeps the absolute path `lwnas train` "
            f"read it from)"
        ) from None
    return model.to(dev).eval(), task, ckpt


def load_model(path: Path) -> tuple[torch.nn.Module, dict]:
    """The model of a checkpoint with its trained weights (on the CPU, eval mode), and the checkpoint."""
    ckpt = _read_checkpoint(path)
    config = ArchConfig.from_dict(ckpt["config"])
    try:
        check_fits(config, torch.device("cpu"), WEIGHT_BYTES, "building the model of")
    except CostError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    model = build_model(config)
    try:
        model.load_state_dict(ckpt["state_dict"])
    except RuntimeError as exc:  # missing, unexpected or mis-shaped weights
        detail = " ".join(str(exc).split())
        raise CheckpointError(
            f"{path}: its weights do not match its configuration ({shorten(detail, 300)}); "
            f"was the file edited? Train the configuration again with `lwnas train`"
        ) from None
    return model.eval(), ckpt


def _read_checkpoint(path: Path) -> dict[str, Any]:
    """The checkpoint's contents, or a CheckpointError saying the file is not one."""
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint: {path} (`lwnas train` writes OUT/checkpoint.pt)")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - empty, truncated, random bytes: torch, zipfile and pickle all differ
        reason = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"{path} is not a readable checkpoint ({shorten(reason, 200)}); is it truncated "
            f"or another file? Point at the checkpoint.pt that `lwnas train` wrote"
        ) from None
    missing = [
        k
        for k in ("config", "task", "task_options", "settings", "state_dict")
        if not isinstance(ckpt, dict) or k not in ckpt
    ]
    if missing:
        raise CheckpointError(f"{path} is not a checkpoint written by `lwnas train` (it lacks {', '.join(missing)})")
    wrong = [
        f"`{key}` is {_a(ckpt[key])}, not {kind}"
        for key, types, kind in (
            ("config", dict, "a mapping"),
            ("task", str, "a task name"),
            ("task_options", dict, "a mapping"),
            ("settings", dict, "a mapping"),
            ("state_dict", dict, "a mapping of weights"),
        )
        if not isinstance(ckpt[key], types)
    ]
    if wrong:
        raise CheckpointError(f"{path} is not a checkpoint written by `lwnas train`: {'; '.join(wrong)}")
    return ckpt


def _a(value: Any) -> str:
    """``a list``, ``an int``: what a value is, for messages (never its repr: it may be huge)."""
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def evaluate_checkpoint(
    path: Path, split: str = "test", device: str = "auto", data: Path | None = None
) -> dict[str, float]:
    """The metrics of a checkpoint's model on one split of its task's data."""
    if split not in SPLITS:
        raise CheckpointError(f"--split must be one of {', '.join(SPLITS)}, got {shown(split)}")
    model, task, ckpt = load_run(path, device, data)
    loaded = task.load(seed=DATA_SEED)  # the split training saw, whatever its training seed
    return task.evaluate(model, loaded[split])
