"""VQA accuracy as the official evaluation code computes it.

The official code is ``PythonEvaluationTools/vqaEvaluation/vqaEval.py`` in GT-Vision-Lab/VQA (as of its
last change, commit a013f00 of March 2021, "Fixed processing answers bug"). Per question:

1. the predicted and the annotators' answers lose tabs, newlines and surrounding spaces;
2. only where the annotators disagree (more than one distinct answer) are all of them, and the prediction,
   normalised: ``process_punctuation`` then ``process_digit_article`` below (number words to digits,
   articles dropped, apostrophe-less contractions restored, punctuation removed or made a space);
3. the accuracy is the mean over the annotators of min(#matches among the *other* annotators / 3, 1), so
   1, 2, 3 matching annotators of 10 score 0.3, 0.6, 0.9 and 4 or more score 1.

The tables are vqaEval.py's (BSD-2-Clause, (c) 2014 Aishwarya Agrawal), quirks included: the period rule's
look-behind is written as a look-ahead, so a period is dropped unless a digit follows it, and at most 32 of
them (``re.UNICODE`` is passed where ``sub`` takes its count); ``\\d`` matches ASCII digits as in Python 2.
``tests/reference/vqa_eval_scores.json`` holds vqaEval.py's own scores, which ``tests/test_vqa_accuracy.py``
checks this module against.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

# fmt: off
CONTRACTIONS = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've", "couldnt": "couldn't",
    "couldn'tve": "couldn't've", "couldnt've": "couldn't've", "didnt": "didn't", "doesnt": "doesn't",
    "dont": "don't", "hadnt": "hadn't", "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't",
    "havent": "haven't", "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm", "Ive": "I've",
    "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've", "itll": "it'll", "let's": "let's",
    "maam": "ma'am", "mightnt": "mightn't", "mightnt've": "mightn't've", "mightn'tve": "mightn't've",
    "mightve": "might've", "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at", "'ow'sat": "'ow's'at",
    "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've", "she's": "she's", "shouldve": "should've",
    "shouldnt": "shouldn't", "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've",
    "somebody'd": "somebodyd", "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd", "someoned've": "someone'd've",
    "someone'dve": "someone'd've", "someonell": "someone'll", "someones": "someone's", "somethingd": "something'd",
    "somethingd've": "something'd've", "something'dve": "something'd've", "somethingll": "something'll",
    "thats": "that's", "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've", "they'dve": "they'd've",
    "theyll": "they'll", "theyre": "they're", "theyve": "they've", "twas": "'twas", "wasnt": "wasn't",
    "wed've": "we'd've", "we'dve": "we'd've", "weve": "we've", "werent": "weren't", "whatll": "what'll",
    "whatre": "what're", "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've", "who'dve": "who'd've",
    "wholl": "who'll", "whos": "who's", "whove": "who've", "whyll": "why'll", "whyre": "why're", "whys": "why's",
    "wont": "won't", "wouldve": "would've", "wouldnt": "wouldn't", "wouldnt've": "wouldn't've",
    "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll",
    "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've", "youd": "you'd",
    "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll", "youre": "you're", "youve": "you've",
}
MANUAL_MAP = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}
# fmt: on
ARTICLES = ("a", "an", "the")
PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)", re.ASCII)
COMMA_STRIP = re.compile(r"(\d)(\,)(\d)", re.ASCII)
PUNCT = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
PERIODS_STRIPPED = re.UNICODE.value  # vqaEval.py passes re.UNICODE (32) as `sub`'s count


def process_punctuation(text: str) -> str:
    """vqaEval's processPunctuation: each mark is removed where it touches a space (or the text holds a
    digit-comma-digit), else made a space; then periods not followed by a digit are removed."""
    out = text
    for p in PUNCT:
        if p + " " in text or " " + p in text or COMMA_STRIP.search(text) is not None:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return PERIOD_STRIP.sub("", out, count=PERIODS_STRIPPED)


def process_digit_article(text: str) -> str:
    """vqaEval's processDigitArticle: lower-cased words, number words as digits, articles dropped, contractions."""
    words = [MANUAL_MAP.get(w, w) for w in text.lower().split()]
    return " ".join(CONTRACTIONS.get(w, w) for w in words if w not in ARTICLES)


def _clean(answer: str) -> str:
    return answer.replace("\n", " ").replace("\t", " ").strip()


@functools.lru_cache(maxsize=1 << 18)  # answers repeat ("yes", "2"): a data set's normalisation is mostly lookups
def normalize_answer(answer: str) -> str:
    """An answer in the form vqaEval compares where annotators disagree (MCAN's ``prep_ans`` builds its
    answer list the same way)."""
    return process_digit_article(process_punctuation(_clean(answer)))


def vqa_accuracy(predicted: str, answers: Sequence[str]) -> float:
    """The VQA accuracy of one predicted answer against the annotators' ``answers``, in [0, 1].

    Exactly vqaEval.py's per-question accuracy (see the module docstring). Each entry of ``answers`` is one
    annotator: with n of them the mean runs over the n leave-one-out subsets, so with fewer than ten answers
    a perfect match scores min((n - 1) / 3, 1) (one answer: 0; two: 1/3; three: 2/3; four or more: 1).
    No answers score 0.

    Args:
        predicted: the model's answer, as text.
        answers: every annotator's answer (VQA v2 has ten per question), raw as the annotation file gives them.
    """
    given = [_clean(a) for a in answers]
    guess = _clean(predicted)
    if len(set(given)) > 1:
        given = [normalize_answer(a) for a in given]  # process_digit_article(process_punctuation(a))
        guess = normalize_answer(guess)
    matches = [a == guess for a in given]
    total = sum(matches)
    per_subset = [min(1.0, float(total - m) / 3) for m in matches]  # the others' matches, in annotator order
    return float(sum(per_subset)) / len(per_subset) if per_subset else 0.0


def leave_one_out_score(matches: int, annotators: int) -> float:
    """``vqa_accuracy`` of an answer that ``matches`` of ``annotators`` gave (after normalisation), in closed
    form: 0.3, 0.6, 0.9, 1.0 for 1, 2, 3, 4+ of ten, as MCAN's ``get_score`` trains with."""
    if annotators == 0:
        return 0.0
    hit, miss = min(1.0, (matches - 1) / 3), min(1.0, matches / 3)
    return (matches * hit + (annotators - matches) * miss) / annotators
