# Produces coco_caption_ptb.json: pycocoevalcap's own PTBTokenizer tokens and its Bleu(4) and Cider (CIDEr-D)
# scores for a fixed, seeded set of raw captions (200 images, 5 references and 1 candidate each) written from
# templates that exercise what the tokenizer decides: possessives, contractions, hyphens, numbers with commas
# and decimals, quotes, brackets, abbreviations and acronyms (also at the end of a caption), punctuation, case.
# Needs Java (PTBTokenizer runs Stanford CoreNLP 3.4.1's jar, which the pycocoevalcap wheel ships). Run in a
# venv with `pip install --no-deps pycocoevalcap==1.2 numpy`:
#     python tests/reference/coco_caption_ptb.py > tests/reference/coco_caption_ptb.json
# lwnas does not depend on pycocoevalcap or Java: tests/test_caption_scores.py compares against these values.
import json
import random
import sys

from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

rng = random.Random(2024)
SUBJECTS = {
    "man": ["a man", "the man", "a young man", "an old man", "a well-dressed man", "Mr. Smith", "a 30-year-old man"],
    "woman": ["a woman", "the woman", "a young woman", "a middle-aged woman", "Dr. Jones", "a woman (in red)"],
    "dog": ["a dog", "the dog", "a brown dog", "a black-and-white dog", "a 3-year-old dog", "the family's dog"],
    "cat": ["a cat", "the cat", "a gray cat", "a grey tabby cat", "someone's cat", 'a cat named "Tom"'],
    "kids": ["two kids", "the children", "3 boys", "a group of kids", "1,000 people", "the U.S. team", "kids"],
}
POSSESSORS = ["man's", "woman's", "dog's", "children's", "people's", "James'", "boys'", "its", "it's", "someone's"]
VERBS = [
    "is holding",
    "holds",
    "is wearing",
    "isn't wearing",
    "doesn't have",
    "can't reach",
    "won't eat",
    "is sitting on",
    "sits next to",
    "is looking at",
    "looks at",
    "plays with",
    "has",
    "is riding",
]
THINGS = [
    "a t-shirt",
    "a T-shirt",
    "an x-ray",
    "a frisbee",
    "a red-and-white umbrella",
    "a cell phone",
    "a hot dog",
    "a 2-liter bottle",
    "a 12-inch pizza",
    "a $5 bill",
    "a #1 jersey",
    "a 50% off sign",
    'a sign that says "stop"',
    "a 'keep out' sign",
    "a ``quoted'' word",
    "a bench (wooden)",
    "a [broken] chair",
    "a skate-board",
    "an e-mail",
    "the U.K. flag",
    "a 3.5 inch screen",
    "2 1/2 slices of pizza",
    "a ½ eaten apple",
    "the sign \u201cSTOP\u201d",
    "a dog\u2019s bowl",
    "a cup of coffee",
    "a laptop computer",
    "a teddy bear",
    "a kite",
    "a surfboard",
]
PLACES = [
    "in a park",
    "on the street",
    "at 10:30 a.m.",
    "on St. Patrick's day",
    "on Main St.",
    "near 5th Ave.",
    "in the U.S.",
    "at the beach",
    "by the lake",
    "in front of a building",
    "at home",
    "on a sunny day",
    "in a kitchen",
    "on the grass",
    "at the corner of 1st and Main",
    "in the rain",
    "vs. a wall",
    "etc.",
    "in Washington, D.C.",
    "on a 4-lane road",
]
CLAUSES = [
    "and it's raining",
    "while they're laughing",
    "but he's not happy",
    "and there's a car",
    "-- it's a sunny day",
    "; the sky is blue",
    ", which is nice",
    "... and smiles",
    "and can't stop",
    "and we've seen it",
    "and I'm sure",
    "and they'll leave",
    "and she'd like it",
    "cannot move",
    "and gonna jump",
    "and wanna play",
    "o'clock",
    "-- wow!",
    "?!",
    "(maybe)",
    ": a snack",
]
ENDINGS = [".", ".", ".", "", "", " .", "!", "?", "...", " . ", ".."]


def caption(topic: str) -> str:
    words = [rng.choice(SUBJECTS[topic])]
    if rng.random() < 0.3:
        words.append("with the " + rng.choice(POSSESSORS) + " " + rng.choice(THINGS).split(" ", 1)[-1])
    words += [rng.choice(VERBS), rng.choice(THINGS)]
    if rng.random() < 0.7:
        words.append(rng.choice(PLACES))
    if rng.random() < 0.4:
        words.append(rng.choice(CLAUSES))
    text = " ".join(words) + rng.choice(ENDINGS)
    style = rng.random()
    if style < 0.6:
        text = text[0].upper() + text[1:]
    elif style < 0.65:
        text = text.upper()
    return text


gts, res = {}, {}
for image in range(200):
    topic = rng.choice(list(SUBJECTS))
    gts[str(image)] = [caption(topic) for _ in range(5)]
    res[str(image)] = [caption(topic if rng.random() < 0.8 else rng.choice(list(SUBJECTS)))]
tokenizer = PTBTokenizer()
gts_tokens = tokenizer.tokenize({k: [{"caption": c} for c in v] for k, v in gts.items()})
res_tokens = tokenizer.tokenize({k: [{"caption": c} for c in v] for k, v in res.items()})
bleu, bleu_per_image = Bleu(4).compute_score(gts_tokens, res_tokens, verbose=0)
cider, cider_per_image = Cider().compute_score(gts_tokens, res_tokens)
json.dump(
    {
        "source": "pycocoevalcap 1.2 (PTBTokenizer: stanford-corenlp-3.4.1.jar), Bleu(4), Cider",
        "references": gts,
        "candidates": {k: v[0] for k, v in res.items()},
        "reference_tokens": gts_tokens,
        "candidate_tokens": {k: v[0] for k, v in res_tokens.items()},
        "bleu": bleu,
        "cider_d": cider,
        "cider_d_per_image": list(cider_per_image),
    },
    sys.stdout,
    indent=0,
    ensure_ascii=False,
)
print()
