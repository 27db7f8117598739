"""Train one configuration file: the path ``lwnas train`` takes, shared with ``lwnas confirm`` so a
confirmed trial trains with exactly the code a user's own retraining runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainers.loop import TrainResult


def train_config_file(
    config: Path,
    task: str | None = None,
    data: Path | None = None,
    overrides: dict[str, Any] | None = None,
    out: Path | None = None,
    label: str | None = None,
) -> tuple[TrainResult, str]:
    """Train ``config`` (an exported or hand-written file) with ``overrides`` on its training settings;
    the result and the task's name. With ``out``, checkpoint.pt, metrics.json and config.yaml go there; ``label``
    names the run in the progress (``lwnas confirm``: the trial and how many remain).

    Raises ConfigError (a bad file or task), ValueError or TrainingError (training failed).
    """
    from searchspace.files import load_config_file
    from trainers.checkpoint import save_run
    from trainers.cost import TRAINING_BYTES, CostError, check_fits
    from trainers.loop import TrainSettings, resolve_device
    from trainers.loop import train as run_training
    from tuners.export.config_task import file_task, file_task_built

    f = load_config_file(config)
    settings = TrainSettings.from_dict({**(f.metadata.get("training") or {}), **(overrides or {})})
    task_name, task_options = file_task(f, task, data)
    try:  # before the task loads its data: a model beyond this machine is one line, not an allocation failure
        check_fits(f.config, resolve_device(settings.device), TRAINING_BYTES, "training")
    except CostError as exc:
        raise CostError(f"{config}: {exc}") from None
    result = run_training(f.config, file_task_built(f, task_name, task_options), settings, label=label)
    if out is not None:
        save_run(result, out, task_options, f.metadata.get("provenance"), task=task_name)
    return result, task_name
