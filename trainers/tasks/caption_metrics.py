"""Caption metrics with several references per image: BLEU-4 and CIDEr-D as coco-caption computes them.

Sentences are sequences of hashable tokens (words or word ids). Both follow pycocoevalcap's
``bleu_scorer.py`` and ``cider_scorer.py`` (Chen et al. 2015, "Microsoft COCO Captions"), whose
scores ``tests/test_byod_metrics.py`` checks against values computed by hand and against pycocoevalcap's own
scores on a reference set (``tests/reference/coco_caption_scores.json``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

Sentence = Sequence[Hashable]


def ngrams(words: Sentence, n: int) -> Counter[tuple[Hashable, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def bleu4(hypotheses: Sequence[Sentence], references: Sequence[Sequence[Sentence]]) -> float:
    """Corpus BLEU-4 in percent: clipped n-gram precisions summed over the corpus, geometric mean, and a
    brevity penalty against each hypothesis' closest reference length (ties to the shorter), as coco-caption."""
    correct, guessed = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for hyp, refs in zip(hypotheses, references):
        hyp_len += len(hyp)
        ref_len += min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1]
        for n in range(1, 5):
            counts = ngrams(hyp, n)
            most: Counter[tuple[Hashable, ...]] = Counter()
            for r in refs:
                most |= ngrams(r, n)  # per n-gram, the most any one reference holds
            correct[n - 1] += sum(min(c, most[g]) for g, c in counts.items())
            guessed[n - 1] += sum(counts.values())
    if hyp_len == 0 or 0 in correct:
        return 0.0
    log_precision = sum(math.log(c / g) for c, g in zip(correct, guessed)) / 4
    brevity = min(0.0, 1.0 - ref_len / hyp_len)
    return 100.0 * math.exp(log_precision + brevity)


def _tfidf(words: Sentence, df: Counter, log_images: float) -> tuple[list[dict], list[float], int]:
    """Per n (1..4): the n-gram tf-idf vector and its norm; and the length CIDEr-D compares (bigram count)."""
    vec, norm = [], []
    for n in range(1, 5):
        v = {g: c * (log_images - math.log(max(1.0, df[g]))) for g, c in ngrams(words, n).items()}
        vec.append(v)
        norm.append(math.sqrt(sum(x * x for x in v.values())))
    return vec, norm, max(0, len(words) - 1)


def cider_d(hypotheses: Sequence[Sentence], references: Sequence[Sequence[Sentence]], sigma: float = 6.0) -> float:
    """CIDEr-D (Vedantam et al. 2015) as pycocoevalcap's ``Cider`` returns it (x 10 per image, averaged).

    Document frequencies come from the references of the evaluated images; a hypothesis' clipped tf-idf
    similarity to each reference is damped by exp(-(Δlength)² / 2σ²).
    """
    df = Counter(g for refs in references for g in {g for r in refs for n in range(1, 5) for g in ngrams(r, n)})
    log_images = math.log(float(len(references)))
    total = 0.0
    for hyp, refs in zip(hypotheses, references):
        vec, norm, length = _tfidf(hyp, df, log_images)
        score = 0.0
        for ref in refs:
            rvec, rnorm, rlength = _tfidf(ref, df, log_images)
            penalty = math.exp(-((length - rlength) ** 2) / (2 * sigma**2))
            for n in range(4):
                val = sum(min(x, rvec[n].get(g, 0.0)) * rvec[n].get(g, 0.0) for g, x in vec[n].items())
                if norm[n] and rnorm[n]:
                    val /= norm[n] * rnorm[n]
                score += val * penalty / 4
        total += 10.0 * score / len(refs)
    return total / len(references)
