"""The caption and retrieval metrics of the bring-your-own-data tasks against values computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.tasks.caption_metrics import bleu, cider_d
from trainers.tasks.caption_tasks import caption_text, ranks, sequences

# Two images whose references share no word: every n-gram has document frequency 1 of N = 2 images, so
# each tf-idf weight is log(2) - log(1) = log 2.
REFS = [[["a", "b"]], [["c", "d"]]]


def test_cider_d_of_perfect_captions():
    # per image: the unigram and bigram vectors equal the reference's (cosine 1); no 3- or 4-grams (0);
    # mean over n = (1 + 1 + 0 + 0) / 4, times 10
    assert cider_d([["a", "b"], ["c", "d"]], REFS) == pytest.approx(5.0)


def test_cider_d_clips_and_penalises_length():
    # image 1 says only "a": unigram cosine = log2·log2 / (log2 · sqrt(2)·log2) = 1/sqrt(2); no bigram;
    # lengths (bigram counts) 0 vs 1: penalty exp(-1 / (2·6²)); score 10 · (1/sqrt(2)) · e^(-1/72) / 4
    first = 10 * (1 / math.sqrt(2)) * math.exp(-1 / 72) / 4
    assert cider_d([["a"], ["c", "d"]], REFS) == pytest.approx((first + 5.0) / 2)
    # repeating a word does not raise its match beyond the reference's weight (the clipping of CIDEr-D)
    assert cider_d([["a", "a"], ["c", "d"]], REFS) < cider_d([["a", "b"], ["c", "d"]], REFS)


def test_cider_d_averages_over_references():
    # a second, unrelated reference for image 1 ("e f") scores 0 against the hypothesis: its 5.0 halves
    refs = [[["a", "b"], ["e", "f"]], [["c", "d"]]]
    assert cider_d([["a", "b"], ["c", "d"]], refs) == pytest.approx((2.5 + 5.0) / 2)


def bleu4(hypotheses, references):
    return 100 * bleu(hypotheses, references)[3]


def test_bleu4_by_hand():
    assert bleu4([list("abcd")], [[list("abcd")]]) == pytest.approx(100.0)
    # all n-grams match, 5 words against 6: brevity penalty exp(1 - 6/5)
    assert bleu4([list("abcde")], [[list("abcdef")]]) == pytest.approx(100 * math.exp(-0.2))
    # the closest reference length (5) is used, so no penalty
    assert bleu4([list("abcde")], [[list("abcdefgh"), list("abcde")]]) == pytest.approx(100.0)
    # clipped: "a a a a a" against "a b c d e" matches one unigram and no bigram (coco-caption's 1e-15
    # guard leaves a score indistinguishable from 0)
    assert bleu4([list("aaaaa")], [[list("abcde")]]) == pytest.approx(0.0, abs=1e-6)
    # corpus level: counts summed over both sentences ("abcde" all match; "xyz" vs "xyw": x, y and xy match,
    # xyz does not, no 4-gram): p1 = (5+2)/(5+3), p2 = (4+1)/(4+2), p3 = (3+0)/(3+1), p4 = 2/2; lengths equal
    hyps, refs = [list("abcde"), list("xyz")], [[list("abcde")], [list("xyw")]]
    want = 100 * (7 / 8 * 5 / 6 * 3 / 4 * 1) ** 0.25
    assert bleu4(hyps, refs) == pytest.approx(want)


def test_retrieval_ranks_with_several_captions_per_image():
    # 2 images, 3 captions: captions 0 and 1 belong to image 0, caption 2 to image 1
    scores = torch.tensor([[0.1, 0.9, 0.5], [0.8, 0.2, 0.3]])
    i2t, t2i = ranks(scores, torch.tensor([0, 0, 1]))
    # image 0: its best caption (1, 0.9) ranks first; image 1: caption 2 (0.3) is behind 0.8 -> 2
    assert i2t.tolist() == [1, 2]
    # caption 0: image 1 scores 0.8 > 0.1 -> 2; caption 1: image 0 first -> 1; caption 2: 0.5 > 0.3 -> 2
    assert t2i.tolist() == [2, 1, 2]


def test_sequences_put_eos_after_each_caption_s_last_word():
    words = torch.tensor([[5, 6, 0], [7, 0, 0]])
    word_model = type("M", (), {"codec": None})()
    assert sequences(word_model, words).tolist() == [[1, 5, 6, 2, 0], [1, 7, 2, 0, 0]]
    from searchspace.radix import RadixCodec

    radix_model = type("M", (), {"codec": RadixCodec(2, 4)})()  # 2 digits per word, BOS 3, EOS 4
    # words 1 and 3 -> digits (0,1) and (1,1) -> tokens (1,2) and (2,2); padding words stay 0
    assert sequences(radix_model, torch.tensor([[1, 3, 0]])).tolist() == [[3, 1, 2, 2, 2, 4, 0, 0]]


def test_generated_words_become_the_text_that_is_scored():
    vocab = ["<pad>", "<bos>", "<eos>", "<unk>", "a", "dog"]
    # padding, BOS and EOS are not words; <unk>, and an id past the vocabulary, are a word no reference holds
    assert caption_text([1, 4, 3, 5, 0, 2, 99], vocab) == "a UNK dog UNK"


def test_bleu4_and_cider_d_equal_pycocoevalcap_on_a_reference_set():
    """Scores pycocoevalcap (the coco-caption code) gave on a fixed set of 12 images with 2-5 references each,
    stored with the script that produced them (tests/reference/coco_caption_scores.py)."""
    import json
    from pathlib import Path

    ref = json.loads((Path(__file__).parent / "reference" / "coco_caption_scores.json").read_text())
    images = sorted(ref["gts"], key=int)
    hypotheses = [ref["res"][i][0].split() for i in images]
    references = [[r.split() for r in ref["gts"][i]] for i in images]
    # coco-caption's 1e-15 / 1e-9 guards against log(0) are reproduced, so BLEU agrees to rounding
    assert bleu(hypotheses, references)[3] == pytest.approx(ref["bleu4"], rel=1e-12)
    assert cider_d(hypotheses, references) == pytest.approx(ref["cider"], rel=1e-12)
