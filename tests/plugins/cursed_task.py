"""A digits task that fails on purpose for identifiable configurations (a task plugin for the sweep
tests, which copy this file next to their study and load it as ``task: cursed_task:CursedDigits``).

A model whose ``d_model`` is ``raise_d_model`` raises ``RuntimeError`` in its loss (an ordinary
exception: Ray may retry it); one whose ``d_model`` is ``nan_d_model`` gets a NaN loss, which the
training loop turns into a deterministic ``TrainingError`` (never retried).
"""

from __future__ import annotations

import torch

from trainers.tasks.digits import Digits

BOOM = "cursed plugin: d_model {} raises"


def d_model_of(model: torch.nn.Module) -> int:
    config = getattr(model, "config", None)
    if config is not None:
        return int(config.d_model)
    return int(model.patch_embed.out_features)  # the encoder's first layer maps patches to d_model


class CursedDigits(Digits):
    name = "cursed-digits"
    family = "encoder"

    def __init__(self, raise_d_model: int | None = None, nan_d_model: int | None = None):
        self.raise_d_model, self.nan_d_model = raise_d_model, nan_d_model

    def loss(self, model, batch):
        d_model = d_model_of(model)
        if d_model == self.raise_d_model:
            raise RuntimeError(BOOM.format(d_model))
        loss = super().loss(model, batch)
        return loss * float("nan") if d_model == self.nan_d_model else loss
