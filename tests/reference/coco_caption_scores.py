# Produces coco_caption_scores.json: pycocoevalcap's Bleu(4) and Cider (CIDEr-D) on a fixed random caption set,
# pre-tokenized so the Java tokenizer is not needed. Run in a venv with `pip install --no-deps pycocoevalcap numpy`:
#     python tests/reference/coco_caption_scores.py > tests/reference/coco_caption_scores.json
# (pycocoevalcap 1.2; lwnas does not depend on it: tests/test_byod_metrics.py compares against the stored scores.)
import json
import random

from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider

rng = random.Random(0)
vocab = "a man woman dog cat sits on the red blue bench grass runs with ball in park near two people".split()
gts, res = {}, {}
for i in range(12):
    refs = [" ".join(rng.choice(vocab) for _ in range(rng.randint(5, 11))) for _ in range(rng.randint(2, 5))]
    base = rng.choice(refs).split()
    hyp = [w if rng.random() < 0.7 else rng.choice(vocab) for w in base][: rng.randint(4, len(base))]
    gts[i], res[i] = refs, [" ".join(hyp)]
b, _ = Bleu(4).compute_score(gts, res, verbose=0)
c, _ = Cider().compute_score(gts, res)
print(json.dumps({"gts": gts, "res": res, "bleu4": b[3], "cider": c}))
