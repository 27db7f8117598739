"""Training-free scores of an architecture at initialisation, from one batch: the zero-cost proxies of the
NAS literature, to rank points before (or instead of) training them.

* ``synflow`` (Tanaka et al. 2020, "Pruning neural networks without any data by iteratively conserving
  synaptic flow"; as a NAS proxy: Abdelfattah et al. 2021, "Zero-Cost Proxies for Lightweight NAS"):
  every weight replaced by its absolute value, an all-ones input (token ids kept), R = the sum of the
  outputs; score = sum over weights of |theta * dR/dtheta|. Computed in float64 (products of many weights).
* ``grad_norm`` (Abdelfattah et al. 2021): the sum over parameter tensors of the L2 norm of the task loss's
  gradient on the batch.
* ``snip`` (Lee et al. 2019, "SNIP: single-shot network pruning"; summed as in Abdelfattah et al. 2021):
  sum over weights of |theta * dL/dtheta|.
* ``naswot`` (Mellor et al. 2021, "Neural Architecture Search without Training", Eq. 2): the binary codes of
  every ReLU's output per example; K[i, j] = units where examples i and j agree; score = log|det K|.

Each is computed once per architecture on the model ``build_model`` makes after ``torch.manual_seed(seed)``
and on the first batch of the training split shuffled by a generator seeded with ``seed``, so the same
seed gives the same scores. A score that is not finite (an overflow, a model without a ReLU) is None.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from searchspace import ArchConfig, ArchModel, build_model

from .tasks.base import Task, batches

PROXIES = ("synflow", "grad_norm", "snip", "naswot")
PROXY_BATCH = 64  # examples in the one batch the data-dependent scores see


def proxy_scores(
    config: ArchConfig, task: Task, data: Mapping[str, Any], seed: int, batch_size: int = PROXY_BATCH
) -> dict[str, float | None]:
    """Every score of ``PROXIES`` for ``config`` (already adapted to ``task``) at its ``seed``'s initialisation.

    Args:
        config: the architecture, with the task's input sizes.
        task: the task whose loss the data-dependent scores differentiate.
        data: the task's splits (``task.load()``); the first shuffled batch of ``train`` is used.
        seed: seeds the initialisation and the batch.
        batch_size: examples in that batch.
    """
    with torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
        scores = _loss_scores(config, task, data, seed, batch_size)
        scores["synflow"] = _synflow(config, seed)
    return {name: _finite(scores[name]) for name in PROXIES}


def _model(config: ArchConfig, seed: int) -> ArchModel:
    torch.manual_seed(seed)
    return build_model(config)


def _loss_scores(config: ArchConfig, task: Task, data: Mapping[str, Any], seed: int, batch_size: int) -> dict:
    """grad_norm, snip and naswot from one forward and backward of the task loss."""
    model = _model(config, seed).train()
    batch = next(iter(batches(data["train"], batch_size, torch.Generator().manual_seed(seed))))
    n = len(next(iter(batch.values())))
    codes: list[torch.Tensor] = []

    def record(_module: nn.Module, _inputs: Any, output: torch.Tensor) -> None:
        if output.dim() >= 2 and output.shape[0] == n:  # (B, ...): one code per example
            codes.append((output.detach() > 0).flatten(1).double())

    hooks = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, nn.ReLU)]
    try:
        loss = task.loss(model, batch)
    finally:
        for hook in hooks:
            hook.remove()
    loss.backward()
    grads = [(p, p.grad) for p in model.parameters() if p.grad is not None]
    grad_norm = sum(float(g.norm()) for _, g in grads)
    snip = sum(float((p.detach() * g).abs().sum()) for p, g in grads)
    return {"grad_norm": grad_norm, "snip": snip, "naswot": _naswot(codes)}


def _naswot(codes: list[torch.Tensor]) -> float:
    """log|det K| of the examples' agreement counts over every ReLU unit (Mellor et al. 2021, Eq. 2)."""
    if not codes:
        return math.nan
    c = torch.cat(codes, dim=1)  # (B, units) of 0/1
    k = c @ c.T + (1 - c) @ (1 - c).T  # (B, B): units where examples i and j are both on or both off
    sign, logdet = torch.linalg.slogdet(k)
    return float(logdet) if float(sign) != 0 else -math.inf


def _synflow(config: ArchConfig, seed: int) -> float:
    """sum |theta * dR/dtheta| with every weight made positive and an all-ones input (Tanaka et al. 2020)."""
    model = _model(config, seed).double().eval()  # eval: dropout off, BatchNorm on its (initial) statistics
    with torch.no_grad():
        for p in model.parameters():
            p.abs_()
    inputs = [
        torch.ones_like(x, dtype=torch.float64) if x.is_floating_point() else x
        for x in model.example_inputs(batch=1)  # token ids stay ids: a vocabulary has no "all ones"
    ]
    output = model(*inputs)
    total = sum(o.sum() for o in output) if isinstance(output, (tuple, list)) else output.sum()
    total.backward()
    return sum(float((p.detach() * p.grad).abs().sum()) for p in model.parameters() if p.grad is not None)


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
