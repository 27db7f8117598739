"""Caption metrics as coco-caption (pycocoevalcap 1.2) computes them: BLEU-1..4 and CIDEr-D.

``score_captions`` takes raw text and tokenizes it as pycocoevalcap's ``PTBTokenizer`` does
(``ptb_tokenizer``); ``bleu`` and ``cider_d`` take sentences already split into tokens (words or word ids)
and follow pycocoevalcap's ``bleu/bleu_scorer.py`` and ``cider/cider_scorer.py`` (Chen et al. 2015,
"Microsoft COCO Captions"), down to BLEU's 1e-15 / 1e-9 guards against log(0) and division by zero.
``tests/test_caption_scores.py`` checks all three against pycocoevalcap's own tokens and scores on a
reference set (``tests/reference/coco_caption_ptb.json``, with the script that produced it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence

from .ptb_tokenizer import ptb_tokenize

Sentence = Sequence[Hashable]


def ngrams(words: Sentence, n: int) -> Counter[tuple[Hashable, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def bleu(hypotheses: Sequence[Sentence], references: Sequence[Sequence[Sentence]], max_n: int = 4) -> list[float]:
    """Corpus BLEU-1..``max_n`` in [0, 1] as pycocoevalcap's ``Bleu(4)`` returns them.

    Clipped n-gram matches and n-gram counts are summed over the corpus; BLEU-n is the geometric mean of the
    precisions up to n, times the brevity penalty against each hypothesis' closest reference length (ties to
    the shorter). Like bleu_scorer.py, 1e-15 is added to each match count and 1e-9 to each n-gram count.
    """
    correct, guessed = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp, refs in zip(hypotheses, references, strict=True):
        hyp_len += len(hyp)
        ref_len += min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1]
        for n in range(1, max_n + 1):
            counts = ngrams(hyp, n)
            most: Counter[tuple[Hashable, ...]] = Counter()
            for r in refs:
                most |= ngrams(r, n)  # per n-gram, the most any one reference holds
            correct[n - 1] += sum(min(c, most[g]) for g, c in counts.items())
            guessed[n - 1] += max(len(hyp) - n + 1, 0)
    scores, product = [], 1.0
    for n in range(max_n):
        product *= (float(correct[n]) + 1e-15) / (guessed[n] + 1e-9)
        scores.append(product ** (1.0 / (n + 1)))
    ratio = (hyp_len + 1e-15) / (ref_len + 1e-9)
    if ratio < 1:
        scores = [s * math.exp(1 - 1 / ratio) for s in scores]
    return scores


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


def corpus_scores(hypotheses: Sequence[Sentence], references: Sequence[Sequence[Sentence]]) -> dict[str, float]:
    """BLEU-1..4 and CIDEr-D of tokenized sentences, on pycocoevalcap's scale."""
    b = bleu(hypotheses, references)
    return {**{f"bleu{n + 1}": b[n] for n in range(4)}, "cider_d": cider_d(hypotheses, references)}


def in_percent(scores: dict[str, float]) -> dict[str, float]:
    """The caption tasks' metrics: BLEU-1..4 and CIDEr-D x 100, as captioning papers print them, CIDEr-D
    under the name ``cider`` (the name studies optimise)."""
    return {("cider" if k == "cider_d" else k): 100.0 * v for k, v in scores.items()}


def score_captions(
    references: Mapping[Hashable, Sequence[str]], candidates: Mapping[Hashable, str]
) -> dict[str, float]:
    """BLEU-1..4 and CIDEr-D of raw candidate captions against raw references, as pycocoevalcap's
    ``COCOEvalCap`` reports them: BLEU in [0, 1], CIDEr-D on its own scale (x 10 per image; a perfect corpus
    reaches 10 at most, COCO models about 1.2).

    Both sides are tokenized as its ``PTBTokenizer`` does (lower-cased, PTB rules, punctuation dropped; see
    ``ptb_tokenizer``), references in the order of ``references``, candidates in the order of ``candidates``.

    Args:
        references: per image id, its reference captions (at least one).
        candidates: per image id, the one caption to score; the same ids as ``references``.

    Returns:
        ``{"bleu1": ..., "bleu2": ..., "bleu3": ..., "bleu4": ..., "cider_d": ...}``
    """
    if set(references) != set(candidates):
        missing, extra = set(references) - set(candidates), set(candidates) - set(references)
        raise ValueError(
            f"score_captions: candidates and references must name the same images; "
            f"{len(missing)} image(s) have no candidate, {len(extra)} candidate(s) have no references"
        )
    if not references:
        raise ValueError("score_captions: no images to score")
    empty = [k for k, refs in references.items() if not refs]
    if empty:
        raise ValueError(f"score_captions: image {empty[0]!r} has no reference captions")
    ids = list(references)
    flat = ptb_tokenize([c for k in ids for c in references[k]])
    refs, start = [], 0
    for k in ids:
        refs.append(flat[start : start + len(references[k])])
        start += len(references[k])
    order = list(candidates)
    tokens = dict(zip(order, ptb_tokenize([candidates[k] for k in order])))
    return corpus_scores([tokens[k] for k in ids], refs)
