"""Metrics against values computed by hand (and BLEU against sacrebleu)."""

import math

import pytest
import torch

from trainers.metrics import accuracy, corpus_bleu, retrieval_metrics, retrieval_ranks


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


def test_bleu_by_hand():
    # p1..p4 = 4/5, 3/4, 2/3, 1/2; equal lengths, so no brevity penalty
    expected = 100 * (0.8 * 0.75 * (2 / 3) * 0.5) ** 0.25
    assert corpus_bleu([[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 6]]) == pytest.approx(expected)
    # a short hypothesis is penalised by exp(1 - r/c)
    short = corpus_bleu([[1, 2, 3, 4]], [[1, 2, 3, 4, 5, 6]])
    assert short == pytest.approx(100 * math.exp(1 - 6 / 4))
    assert corpus_bleu([[7, 8]], [[1, 2, 3]]) == 0.0


def test_bleu_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu", reason="sacrebleu is a test extra")
    gen = torch.Generator().manual_seed(0)
    refs = [torch.randint(1, 8, (int(n),), generator=gen).tolist() for n in torch.randint(5, 12, (50,), generator=gen)]
    hyps = [r[:-1] + [1] if i % 3 else r for i, r in enumerate(refs)]
    theirs = sacrebleu.corpus_bleu(
        [" ".join(map(str, h)) for h in hyps], [[" ".join(map(str, r)) for r in refs]], tokenize="none"
    ).score
    assert corpus_bleu(hyps, refs) == pytest.approx(theirs, abs=1e-9)
