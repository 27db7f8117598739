# Produces vqa_eval_scores.json: the per-question accuracies of the official VQA evaluation code on a fixed,
# seeded set of questions whose answers exercise its normalisation (number words, articles, contractions,
# punctuation, commas in numbers, case, unanimous and split annotators, fewer than ten annotators).
# The official code is not on PyPI: take PythonEvaluationTools/vqaEvaluation/vqaEval.py from
# https://github.com/GT-Vision-Lab/VQA (commit a013f0043c1e2cdc995922dfe257f7149aa9af06) and run
#     python tests/reference/vqa_eval_scores.py path/to/vqaEval.py > tests/reference/vqa_eval_scores.json
# vqaEval.py is Python 2; its `print "..."` statements are turned into calls, nothing else is changed.
# lwnas does not use vqaEval.py: tests/test_vqa_accuracy.py compares trainers.tasks.vqa.vqa_accuracy with these.
import contextlib
import json
import random
import re
import sys

source = open(sys.argv[1]).read()
source = re.sub(r'^(\s*)print (".*")\s*$', r"\1print(\2)", source, flags=re.M)
namespace: dict = {}
exec(compile(source, "vqaEval.py", "exec"), namespace)


class Recording(namespace["VQAEval"]):
    """VQAEval keeping each question's accuracy unrounded (setEvalQA is handed it before rounding)."""

    def setEvalQA(self, quesId, acc):
        self.raw[quesId] = acc


class Store:
    def __init__(self, qa):
        self.qa = qa

    def getQuesIds(self):
        return list(self.qa)


rng = random.Random(0)
SAME_MEANING = [
    ["two", "2", "Two", "two.", "2.", " 2", "TWO"],
    ["1,000", "1000", "1 000", "one thousand", "1,000."],
    ["1.5", "1.50", "one and half", "1 1/2"],
    ["a dog", "dog", "the dog", "Dog", "dogs", "A dog.", "an dog"],
    ["dont", "don't", "do not", "Dont", "dont."],
    ["cant tell", "can't tell", "cannot tell", "cant tell.", "not sure"],
    ["yes", "yes.", "Yes", "yes!", "yes?", "YES", "yes\n", "\tyes", "yeah"],
    ["no", "no.", "No", "nope", "no!"],
    ["red, white", "red white", "red/white", "red and white", "red,white", "red-white", "red & white"],
    ["t-shirt", "tshirt", "t shirt", "T-shirt", "tee shirt"],
    ["3:00", "3.00", "3 00", "three", "3"],
    ["10:30", "10:30 am", "1030", "10.30"],
    ["$5", "5 dollars", "5", "five", "$5.00"],
    ["50%", "50 %", "50", "fifty percent"],
    ["(yes)", "[no]", '"no"', "yes", "no"],
    ["left-handed", "left handed", "lefthanded", "left"],
    ["its", "it's", "it is", "its."],
    ["none", "0", "zero", "nothing", "no one"],
    ["a.m.", "am", "a.m", "morning"],
    ["mr. smith", "mr smith", "Mr. Smith", "smith"],
    ["." * 40 + "x", "x", "." * 10 + "x"],  # vqaEval strips at most 32 periods
    ["@home", "home", "at home"],
    ["ten", "10", "10.", "ten."],
]


def question():
    group = rng.choice(SAME_MEANING)
    annotators = rng.choice([10] * 8 + [1, 2, 3, 5])
    if rng.random() < 0.15:  # unanimous: vqaEval then compares without normalising
        answers = [rng.choice(group)] * annotators
    else:
        other = rng.choice(SAME_MEANING)
        answers = [rng.choice(group if rng.random() < 0.7 else other) for _ in range(annotators)]
    predicted = rng.choice(answers) if rng.random() < 0.5 else rng.choice(group)
    return predicted, answers


cases = [question() for _ in range(1500)]
gts = {
    i: {
        "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": j + 1} for j, a in enumerate(answers)],
        "question_type": "what",
        "answer_type": "other",
    }
    for i, (_, answers) in enumerate(cases)
}
res = {i: {"answer": p} for i, (p, _) in enumerate(cases)}
evaluator = Recording(Store(gts), Store(res))
evaluator.raw = {}
with contextlib.redirect_stdout(sys.stderr):  # its progress bar
    evaluator.evaluate()
rows = [json.dumps({"predicted": p, "answers": a, "accuracy": evaluator.raw[i]}) for i, (p, a) in enumerate(cases)]
print('{"source": "GT-Vision-Lab/VQA vqaEval.py a013f00", "questions": [\n' + ",\n".join(rows) + "\n]}")
