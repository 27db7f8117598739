"""Checkpoints of full training: everything needed to rebuild and re-evaluate the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from searchspace import ArchConfig, build_model
from searchspace.files import dump_config

from .loop import TrainResult, TrainSettings, resolve_device
from .tasks import Task, resolve_task


def save_run(result: TrainResult, out: Path, task_options: dict[str, Any], provenance: dict | None = None) -> dict:
    """Write ``checkpoint.pt``, ``metrics.json`` and ``config.yaml`` (the exact configuration used)."""
    out.mkdir(parents=True, exist_ok=True)
    metrics = {**result.summary(), "history": result.history}
    torch.save({"config": result.config.to_dict(), "task": result.task, "task_options": task_options,
                "settings": result.settings.to_dict(), "state_dict": result.model.state_dict(),
                "metrics": metrics}, out / "checkpoint.pt")
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    metadata = {"training": result.settings.to_dict()}
    if provenance:
        metadata["provenance"] = provenance
    (out / "config.yaml").write_text(dump_config(result.config, metadata))
    return metrics


def load_run(path: Path, device: str = "auto") -> tuple[torch.nn.Module, Task, dict]:
    """Rebuild the model of a checkpoint (weights loaded, eval mode) and its task."""
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    config = ArchConfig.from_dict(ckpt["config"])
    model = build_model(config)
    model.load_state_dict(ckpt["state_dict"])
    dev = resolve_device(TrainSettings(device=device).device)
    return model.to(dev).eval(), resolve_task(ckpt["task"], **ckpt["task_options"]), ckpt


def evaluate_checkpoint(path: Path, split: str = "test", device: str = "auto") -> dict[str, float]:
    model, task, ckpt = load_run(path, device)
    data = task.load(seed=ckpt["settings"]["seed"])
    return task.evaluate(model, data[split])
