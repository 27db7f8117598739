"""A digits task whose validation metrics never change (a task plugin for the front-stopping tests,
which copy this file next to their study and load it as ``task: constant_task:ConstantDigits``):
the models train for real, but no trial can move the front past the first one."""

from __future__ import annotations

from trainers.tasks.digits import Digits


class ConstantDigits(Digits):
    name = "constant-digits"
    family = "encoder"

    def evaluate(self, model, data, batch_size=256):
        super().evaluate(model, data, batch_size)  # the real forward pass still runs
        return {"accuracy": 0.5, "loss": 1.0}
