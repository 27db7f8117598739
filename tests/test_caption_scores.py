"""Caption scores as coco-caption computes them from raw text: pycocoevalcap's PTBTokenizer rules in Python,
BLEU-1..4 and CIDEr-D, against pycocoevalcap's own tokens and scores on a reference set of 1,200 captions
(tests/reference/coco_caption_ptb.json, written by tests/reference/coco_caption_ptb.py with Java)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import byod_data

from searchspace import ArchConfig
from trainers.loop import TrainSettings, train
from trainers.tasks import batches, resolve_task
from trainers.tasks.caption_metrics import score_captions
from trainers.tasks.caption_tasks import caption_text, greedy
from trainers.tasks.ptb_tokenizer import ptb_tokenize, scan

REFERENCE = json.loads((Path(__file__).parent / "reference" / "coco_caption_ptb.json").read_text(encoding="utf-8"))


def test_the_reference_set_exercises_what_the_tokenizer_decides():
    references = [c for refs in REFERENCE["references"].values() for c in refs]
    assert len(references) + len(REFERENCE["candidates"]) >= 500
    text = " ".join(references)
    for case in ("man's", "it's", "n't", "t-shirt", "1,000", "3.5", '"', "'keep", "(", "Mr.", "U.S.", "a.m.", "..."):
        assert case in text, case


def test_tokens_equal_pycocoevalcap_token_for_token():
    ids = list(REFERENCE["references"])
    references = [c for i in ids for c in REFERENCE["references"][i]]
    want = [t.split() for i in ids for t in REFERENCE["reference_tokens"][i]]
    assert ptb_tokenize(references) == want
    assert ptb_tokenize([REFERENCE["candidates"][i] for i in ids]) == [
        REFERENCE["candidate_tokens"][i].split() for i in ids
    ]


def test_the_fast_paths_give_what_the_rules_give():
    text = "\n".join(c for refs in REFERENCE["references"].values() for c in refs)
    assert scan(text) == scan(text, fast=False)


def test_score_captions_equals_pycocoevalcap():
    got = score_captions(REFERENCE["references"], REFERENCE["candidates"])
    for n in range(4):
        assert got[f"bleu{n + 1}"] == pytest.approx(REFERENCE["bleu"][n], abs=1e-9)
    assert got["cider_d"] == pytest.approx(REFERENCE["cider_d"], abs=1e-9)
    # the order of the images does not change the scores
    backwards = {i: REFERENCE["references"][i] for i in reversed(list(REFERENCE["references"]))}
    assert score_captions(backwards, REFERENCE["candidates"])["cider_d"] == pytest.approx(got["cider_d"], abs=1e-12)


@pytest.mark.parametrize(
    ("caption", "tokens"),
    [
        # checked against pycocoevalcap 1.2's PTBTokenizer (stanford-corenlp-3.4.1.jar)
        ("A man's dog.", ["a", "man", "'s", "dog"]),
        ("It's a dog", ["it", "'s", "a", "dog"]),
        ("I don't know", ["i", "do", "n't", "know"]),
        ("They can't go", ["they", "ca", "n't", "go"]),
        ("a t-shirt and a well-dressed man", ["a", "t-shirt", "and", "a", "well-dressed", "man"]),
        ("1,000 people and 3.5 inches", ["1,000", "people", "and", "3.5", "inches"]),
        ('A sign that says "stop"', ["a", "sign", "that", "says", "stop"]),
        ("a 'keep out' sign", ["a", "keep", "out", "sign"]),
        ("Mr. Smith at 10:30 a.m. in the U.S.", ["mr.", "smith", "at", "10:30", "a.m.", "in", "the", "u.s."]),
        # brackets become -lrb- and the like, which pycocoevalcap's list (upper-case) does not remove
        ("the dogs' toys (two)", ["the", "dogs", "toys", "-lrb-", "two", "-rrb-"]),
        ("Hello... world -- it's 50% off, $5!", ["hello", "world", "it", "'s", "50", "%", "off", "$", "5"]),
        ("a cannot b gonna c", ["a", "can", "not", "b", "gon", "na", "c"]),
        ("the children's toys; etc.", ["the", "children", "'s", "toys", "etc."]),
        ("o'clock rock-n-roll 2 1/2 feet", ["o'clock", "rock-n-roll", "2", "1/2", "feet"]),
    ],
)
def test_tokens_of_single_captions(caption, tokens):
    assert ptb_tokenize([caption]) == [tokens]


def test_a_caption_s_last_word_may_depend_on_how_the_next_caption_starts():
    # as in pycocoevalcap, which tokenizes every caption in one file: a one-letter acronym before a line
    # that starts a sentence loses its period ("b" then "."), otherwise it keeps it ("b.")
    assert ptb_tokenize(["a letter b.", "The end"]) == [["a", "letter", "b"], ["the", "end"]]
    assert ptb_tokenize(["a letter b.", "the end"]) == [["a", "letter", "b."], ["the", "end"]]


def test_empty_and_blank_captions_have_no_tokens():
    assert ptb_tokenize([]) == []
    assert ptb_tokenize(["", " . ", "a dog"]) == [[], [], ["a", "dog"]]
    # a line break inside a caption is a space (pycocoevalcap would start a new line there)
    assert ptb_tokenize(["a\ndog", "a\r\ncat"]) == [["a", "dog"], ["a", "cat"]]


def test_score_captions_by_hand_and_its_errors():
    perfect = score_captions(
        {1: ["A dog runs.", "a dog runs"], 2: ["Two cats sleep."]}, {1: "a dog runs", 2: "two cats sleep"}
    )
    # every n-gram matches; no 4-gram exists, so BLEU-4 is coco-caption's guard value (1e-15 / 1e-9)^(1/4)
    assert perfect["bleu1"] == pytest.approx(1.0) and perfect["bleu3"] == pytest.approx(1.0)
    assert perfect["bleu4"] == pytest.approx((1e-15 / 1e-9) ** 0.25, rel=1e-6)
    # CIDEr-D: n = 1..3 give cosine 1 per image and n = 4 gives 0 -> 10 * 3/4
    assert perfect["cider_d"] == pytest.approx(7.5)
    with pytest.raises(ValueError, match="same images; 1 image"):
        score_captions({1: ["a dog"], 2: ["a cat"]}, {1: "a dog"})
    with pytest.raises(ValueError, match="image 1 has no reference captions"):
        score_captions({1: []}, {1: "a dog"})


def test_the_captions_task_scores_its_generated_text_as_score_captions_does(tmp_path):
    data = byod_data.captions(tmp_path / "caps")
    task = resolve_task("captions", path=str(data), min_word_count=2)
    config = ArchConfig.from_dict({"family": "ort", "d_model": 16, "heads": 2, "layers": 1})
    settings = TrainSettings(epochs=2, batch_size=8, lr=3e-3, threads=1)
    model = train(config, task, settings, progress=False).model.eval()
    test = task.load()["test"]
    got = task.evaluate(model, test)
    # independently: each test image's generated words as text, against all of its raw references
    images = json.loads((data / "dataset_coco.json").read_text())["images"]
    references, candidates = {}, {}
    for b in batches(test, 2):
        for image, words in zip(b["image_index"].tolist(), greedy(model, b, task.meta["caption_words"] + 1)):
            candidates[image] = caption_text(words, task.meta["vocab"])
            references[image] = [s["raw"] for s in images[image]["sentences"]]
    want = score_captions(references, candidates)
    assert want["bleu1"] > 0  # the model says something the references say
    for n in range(1, 5):
        assert got[f"bleu{n}"] == pytest.approx(100 * want[f"bleu{n}"], abs=1e-9)
    assert got["cider"] == pytest.approx(100 * want["cider_d"], abs=1e-9)
    assert set(task.metrics) == set(got)
