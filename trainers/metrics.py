"""Metrics with hand-checkable definitions (tests compare them with values computed by hand)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return (logits.argmax(-1) == labels).float().mean().item()


def _ngrams(seq: Sequence[int], n: int) -> Counter:
    return Counter(tuple(seq[i : i + n]) for i in range(len(seq) - n + 1))


def corpus_bleu(hypotheses: Sequence[Sequence[int]], references: Sequence[Sequence[int]], max_n: int = 4) -> float:
    """Corpus BLEU-4 (Papineni et al. 2002) with one reference per hypothesis, in percent, as sacrebleu
    computes it with no smoothing: clipped n-gram precisions over the corpus, geometric mean,
    brevity penalty exp(1 - r/c) when the hypotheses are shorter than the references."""
    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        hyp_len += len(hyp)
        ref_len += len(ref)
        for n in range(1, max_n + 1):
            h, r = _ngrams(hyp, n), _ngrams(ref, n)
            matches[n - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_n
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / max(hyp_len, 1))
    return 100.0 * brevity * math.exp(log_precision)


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
