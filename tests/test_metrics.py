"""Metrics against values computed by hand (and BLEU with one reference against sacrebleu)."""

import math

import pytest
import torch

from trainers.metrics import accuracy, retrieval_metrics, retrieval_ranks
from trainers.tasks.caption_metrics import bleu


def test_accuracy():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]])
    assert accuracy(logits, torch.tensor([0, 1, 1, 1])) == pytest.approx(0.75)


def test_retrieval_ranks_recall_and_mrr():
    scores = torch.tensor([[0.9, 0.1, 0.5], [0.8, 0.2, 0.7], [0.1, 0.3, 0.4]])
    assert retrieval_ranks(scores).tolist() == [1, 3, 1]
    m = retrieval_metrics(scores, "i2t")
    assert m["i2t_r@1"] == pytest.approx(200 / 3)
    assert m["i2t_r@5"] == m["i2t_r@10"] == pytest.approx(100.0)
    assert m["i2t_mrr"] == pytest.approx((1 + 1 / 3 + 1) / 3)


def bleu4(hypotheses, references):
    """Corpus BLEU-4 in percent with one reference per hypothesis (coco-caption's form)."""
    return 100 * bleu(hypotheses, [[r] for r in references])[3]


def test_bleu_by_hand():
    # p1..p4 = 4/5, 3/4, 2/3, 1/2; equal lengths, so no brevity penalty
    expected = 100 * (0.8 * 0.75 * (2 / 3) * 0.5) ** 0.25
    assert bleu4([[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 6]]) == pytest.approx(expected)
    # a short hypothesis is penalised by exp(1 - r/c)
    short = bleu4([[1, 2, 3, 4]], [[1, 2, 3, 4, 5, 6]])
    assert short == pytest.approx(100 * math.exp(1 - 6 / 4))
    # no matching bigram: coco-caption's 1e-15 guard leaves a score indistinguishable from 0
    assert bleu4([[7, 8]], [[1, 2, 3]]) == pytest.approx(0.0, abs=1e-6)


def test_bleu_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu", reason="sacrebleu is a test extra")
    gen = torch.Generator().manual_seed(0)
    refs = [torch.randint(1, 8, (int(n),), generator=gen).tolist() for n in torch.randint(5, 12, (50,), generator=gen)]
    hyps = [r[:-1] + [1] if i % 3 else r for i, r in enumerate(refs)]
    theirs = sacrebleu.corpus_bleu(
        [" ".join(map(str, h)) for h in hyps], [[" ".join(map(str, r)) for r in refs]], tokenize="none"
    ).score
    assert bleu4(hyps, refs) == pytest.approx(theirs, abs=1e-9)
