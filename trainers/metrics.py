"""Metrics with hand-checkable definitions (tests compare them with values computed by hand)."""

from __future__ import annotations

import torch


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return (logits.argmax(-1) == labels).float().mean().item()


def retrieval_ranks(scores: torch.Tensor) -> torch.Tensor:
    """(Q, C) scores where candidate i is the match of query i -> (Q,) 1-based rank of the match."""
    target = scores.diagonal().unsqueeze(1)
    return (scores > target).sum(1) + 1


def retrieval_metrics(scores: torch.Tensor, prefix: str) -> dict[str, float]:
    """R@1, R@5, R@10 (percent) and MRR of the matching candidate, as in T-EMDE's evaluation."""
    ranks = retrieval_ranks(scores).float()
    out = {f"{prefix}_r@{k}": 100.0 * (ranks <= k).float().mean().item() for k in (1, 5, 10)}
    out[f"{prefix}_mrr"] = (1.0 / ranks).mean().item()
    return out
