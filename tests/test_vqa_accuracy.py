"""VQA accuracy as the official vqaEval.py computes it: against its own scores on 1,500 questions
(tests/reference/vqa_eval_scores.json, written by tests/reference/vqa_eval_scores.py), against cases
checked by hand, and as the `vqa` task reports it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import byod_data

from searchspace import ArchConfig
from trainers.loop import TrainSettings, train
from trainers.tasks import batches, resolve_task
from trainers.tasks.prepared import load_array
from trainers.tasks.vqa import vqa_accuracy
from trainers.tasks.vqa_eval import leave_one_out_score, normalize_answer

REFERENCE = json.loads((Path(__file__).parent / "reference" / "vqa_eval_scores.json").read_text(encoding="utf-8"))


def test_equals_vqa_eval_py_on_its_reference_questions():
    questions = REFERENCE["questions"]
    assert len(questions) >= 1000
    assert [vqa_accuracy(q["predicted"], q["answers"]) for q in questions] == [q["accuracy"] for q in questions]


@pytest.mark.parametrize(("matching", "official"), [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0), (10, 1.0)])
def test_one_two_three_matching_annotators_of_ten_score_point_three_six_nine(matching, official):
    # mean over the ten leave-one-out subsets of min(#matches among the other nine / 3, 1); e.g. 2 of 10:
    # (2 subsets with 1 match: 1/3, and 8 with 2: 2/3) / 10 = 0.6
    answers = ["yes"] * matching + ["no"] * (10 - matching)
    assert vqa_accuracy("yes", answers) == pytest.approx(official)
    assert leave_one_out_score(matching, 10) == pytest.approx(official)


@pytest.mark.parametrize(
    ("predicted", "answers", "official"),
    [
        # the annotators disagree, so every answer is normalised: number words become digits ...
        ("2", ["two", "two", "two", "2", "three"], 1.0),  # 4 of 5 match: every subset keeps 3 or 4
        ("two", ["2", "2", "3"], 4 / 9),  # 2 of 3 match: subsets keep 1, 1 and 2 matches: (1/3 + 1/3 + 2/3) / 3
        # ... articles go ...
        ("dog", ["a dog", "the dog", "dog", "Dog", "cat"], 1.0),
        # ... contractions written without their apostrophe get it back ...
        ("dont", ["don't", "don't", "don't", "don't", "no"], 1.0),
        # ... a final period goes, and so does punctuation and case ...
        ("yes", ["yes.", "Yes", "yes!", "yes", "no"], 1.0),
        ("yes", ["yes.", "Yes", "yes!", "no"], 0.75),  # 3 of 4 match: subsets keep 2, 2, 2 and 3
        # ... and a comma between digits makes every comma vanish: "1,000" is "1000"
        ("1000", ["1,000", "1,000", "1,000", "1,000", "1 000"], 1.0),
        ("1 000", ["1,000", "1,000", "1,000", "1000"], 0.0),
        # a period followed by a digit stays
        ("1.5", ["1.5", "15", "1.5", "1.5", "1.5."], 1.0),
        # unanimous annotators: vqaEval compares the strings as given, without normalising
        ("yes.", ["yes"] * 10, 0.0),
        ("Yes", ["yes"] * 10, 0.0),
        ("2", ["two"] * 10, 0.0),
        (" yes\t", ["yes"] * 10, 1.0),  # tabs, newlines and outer spaces always go
        # fewer than ten annotators: the mean over however many leave-one-out subsets there are
        ("yes", ["yes"], 0.0),
        ("yes", ["yes", "yes"], 1 / 3),
        ("yes", ["yes", "yes", "yes", "yes"], 1.0),
        ("yes", [], 0.0),
    ],
)
def test_normalisation_and_leave_one_out_by_hand(predicted, answers, official):
    assert vqa_accuracy(predicted, answers) == pytest.approx(official)


def test_normalised_answers():
    assert normalize_answer("Two dogs.") == "2 dogs"
    assert normalize_answer("the red/white car") == "red white car"
    assert normalize_answer("isnt") == "isn't"
    assert normalize_answer("left-handed") == "left handed"
    assert normalize_answer("  None ") == "0"


def test_the_vqa_task_reports_the_official_accuracy(tmp_path):
    """Answers in several spellings: the task's accuracy equals the mean of vqa_accuracy over the test questions."""
    data = byod_data.vqa(tmp_path / "vqa")
    spellings = {"two": ["two", "2", "Two", "two."], "yes": ["yes", "Yes", "yes!"], "no": ["no", "No.", "no"]}
    rng = np.random.default_rng(0)
    raw = []  # every question's answers as written, in the order the task reads them (train, then val)
    for split in ("train", "val"):
        path = data / f"v2_mscoco_{split}2014_annotations.json"
        doc = json.loads(path.read_text())
        for a in doc["annotations"]:
            for answer in a["answers"]:
                answer["answer"] = str(rng.choice(spellings[answer["answer"]]))
            raw.append([answer["answer"] for answer in a["answers"]])
        path.write_text(json.dumps(doc))
    task = resolve_task("vqa", path=str(data))
    assert sorted(task.meta["answers"]) == ["2", "no", "yes"]  # one entry per normalised spelling
    model = train(
        ArchConfig.from_dict({"family": "mcan", "d_model": 16, "heads": 2, "layers": 1}),
        task,
        TrainSettings(epochs=1, batch_size=8, threads=1),
        progress=False,
    ).model.eval()
    test = task.load()["test"]
    with torch.no_grad():
        logits = [model(b["question"], b["regions"], b["region_mask"]) for b in batches(test, 4)]
    predicted = torch.cat(logits).argmax(-1).tolist()
    rows = np.flatnonzero(np.asarray(load_array(task.folder, "split")) == 2)
    want = [vqa_accuracy(task.meta["answers"][p], raw[r]) for p, r in zip(predicted, rows, strict=True)]
    assert task.evaluate(model, test)["vqa_accuracy"] == pytest.approx(100 * np.mean(want), rel=1e-6)


def test_every_answer_of_every_question_is_scored_as_vqa_eval_scores_it(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    # spellings that normalise alike, one that normalises twice over (vqaEval strips at most 32 periods,
    # so 40 leave 8, which a second pass would strip), and every fourth question unanimous in turn
    variants = ["." * 8 + "x", "." * 40 + "x", "two", "2", "Two", "yes", "Yes.", "no", "a no", "none", "0"]
    rng = np.random.default_rng(1)
    raw, question = [], 0
    for split in ("train", "val"):
        path = data / f"v2_mscoco_{split}2014_annotations.json"
        doc = json.loads(path.read_text())
        for a in doc["annotations"]:
            unanimous = variants[question // 4 % len(variants)] if question % 4 == 0 else None
            for answer in a["answers"]:
                answer["answer"] = unanimous or str(rng.choice(variants))
            raw.append([answer["answer"] for answer in a["answers"]])
            question += 1
        path.write_text(json.dumps(doc))
    task = resolve_task("vqa", path=str(data))
    assert {"." * 8 + "x", "x"} <= set(task.meta["answers"])
    ids, scores = np.asarray(load_array(task.folder, "eval_ids")), np.asarray(load_array(task.folder, "eval_scores"))
    for r, answers in enumerate(raw):
        for entry, answer in enumerate(task.meta["answers"]):
            got = scores[r][ids[r] == entry].sum()
            assert got == pytest.approx(vqa_accuracy(answer, answers), abs=1e-6), (answer, answers)
