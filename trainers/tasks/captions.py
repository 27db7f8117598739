"""The caption JSON of the Karpathy split (COCO, Flickr30k, Flickr8k) with per-image region features,
shared by ``captions`` (family ``ort``) and ``caption-retrieval`` (family ``retrieval``).

Layout::

    ROOT/dataset_coco.json     {"images": [{"split": "train|restval|val|test", "filename", "cocoid"?,
                                            "sentences": [{"tokens": [...]} or {"raw": "..."}]}]}
    ROOT/features/<id>.npz     region features and boxes per image (see ``regions``): the id is
                               `cocoid` where the entry has one, else the number in `filename`

`restval` images train (as Karpathy's split is used). Training reads each caption's ``tokens``, or where it
has none its ``raw`` text tokenized as evaluation tokenizes it (``ptb_tokenizer``). The vocabulary holds the
words of the training captions seen at least ``min_word_count`` times (5 by default, as Karpathy's
preprocessing) after <pad>, <bos>, <eos>, <unk>; captions are cut at ``caption_words`` words (16 by default).
Evaluation scores against every reference in full, as coco-caption does: the ``raw`` text (else the tokens)
of each validation and test image's captions, tokenized once here as pycocoevalcap's PTBTokenizer does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Split, Task
from .lazy import ArrayRows
from .prepared import fingerprint, load_array, load_json, needs_path, positive_option, prepared, save_json
from .ptb_tokenizer import ptb_tokenize
from .regions import build_index, feature_source, image_key, load_index, missing_hint, source_files
from .text import PAD, UNK, build_vocab, encode, field, read_json

SPECIALS = (PAD, "<bos>", "<eos>", UNK)
SPLIT_IDS = {"train": 0, "restval": 0, "val": 1, "test": 2}


def _sentences(entry: dict, where: str) -> tuple[list[list[str]], list[str]]:
    """An image's captions: the words training reads and the text evaluation scores against."""
    sentences = field(entry, "sentences", list, where)
    if not sentences:
        raise ValueError(f"{where} has no sentences")
    words, texts = [], []
    for j, s in enumerate(sentences):
        w = f"{where}.sentences[{j}]"
        if isinstance(s, dict) and "tokens" in s:
            tokens = field(s, "tokens", list, w)
            if not all(isinstance(t, str) for t in tokens):
                raise ValueError(f"{w}: `tokens` must be a list of strings")
            text = s["raw"] if isinstance(s.get("raw"), str) else " ".join(tokens)
            tokens = [t.lower() for t in tokens]
        else:
            text = field(s, "raw", str, w)
            tokens = ptb_tokenize([text])[0]
        if not tokens:  # an empty reference would end evaluation after training (CIDEr-D divides by them)
            raise ValueError(f"{w} has no words")
        words.append(tokens)
        texts.append(text)
    return words, texts


class CaptionData(Task):
    """What both caption tasks read: the JSON, its vocabulary and the feature index, prepared once."""

    path_options = ("path",)

    def __init__(self, path, min_word_count: int, caption_words: int):
        if path is None:
            raise ValueError(needs_path(self.name))
        self.path = Path(path)
        if not self.path.is_dir():
            raise ValueError(f"{self.name}: no such folder: {self.path}")
        self.options = {
            "min_word_count": positive_option("min_word_count", min_word_count, self.name),
            "caption_words": positive_option("caption_words", caption_words, self.name),
        }
        found = sorted(self.path.glob("*.json"))
        if len(found) != 1:
            raise ValueError(
                f"{self.name}: {self.path} needs one caption JSON file (as dataset_coco.json), found {len(found)}"
            )
        self.json = found[0]
        self.features = feature_source(self.path, self.name)
        inputs = [self.json, *source_files(self.features)]
        # both caption tasks share one preparation of the same data
        self.folder = prepared(self.path, f"captions-{fingerprint('captions', self.options, inputs)}", self._build)
        self.meta = load_json(self.folder, "meta.json")
        self.regions = load_index(self.folder)

    def _read(self) -> tuple[list[str], list[int], list[list[list[str]]], list[list[str]]]:
        """Per image: its feature key, its split id, its captions' words and their texts."""
        data = read_json(self.json, self.name)
        images = field(data, "images", list, f"{self.name}: {self.json}")
        keys, splits, sentences, texts = [], [], [], []
        for i, entry in enumerate(images):
            where = f"{self.name}: {self.json}: images[{i}]"
            if isinstance(entry, dict) and "split" not in entry:
                raise ValueError(
                    f"{where} has no `split` (train, restval, val or test): the file is not a "
                    f"Karpathy-split caption JSON"
                )
            split = field(entry, "split", str, where)
            if split not in SPLIT_IDS:
                raise ValueError(f"{where}: `split` must be train, restval, val or test, got {split!r}")
            keys.append(
                str(field(entry, "cocoid", int, where))
                if "cocoid" in entry
                else image_key(field(entry, "filename", str, where))
            )
            splits.append(SPLIT_IDS[split])
            words, text = _sentences(entry, where)
            sentences.append(words)
            texts.append(text)
        missing = sorted(set(range(3)) - set(splits))
        if missing:
            raise ValueError(
                f"{self.name}: {self.json} has no {' or '.join(('train', 'val', 'test')[m] for m in missing)} "
                f"images (each needs at least one)"
            )
        return keys, splits, sentences, texts

    def _build(self, out: Path) -> None:
        keys, splits, sentences, texts = self._read()
        build_index(self.features, out, set(keys))
        position = load_index(out).position()
        for i, key in enumerate(keys):
            if key not in position:
                raise ValueError(
                    f"{self.name}: {self.json}: images[{i}] (image {key}) has no features in "
                    f"{self.features}{missing_hint(self.features, key)}"
                )
        if not load_index(out).has_boxes:
            raise ValueError(f"{self.name}: the features in {self.features} hold no boxes (`bbox` or `boxes`)")
        o = self.options
        vocab = build_vocab(
            (s for sents, sp in zip(sentences, splits) if sp == 0 for s in sents), o["min_word_count"], SPECIALS
        )
        words = min(o["caption_words"], max(len(s) for sents in sentences for s in sents))
        per_image = max(len(s) for s in sentences)
        refs = np.zeros((len(keys), per_image, words), dtype=np.int32)
        for i, sents in enumerate(sentences):
            refs[i, : len(sents)] = encode(sents, vocab, words)
        np.save(out / "references.npy", refs)
        # the references evaluation scores against (validation and test images), tokenized in file order
        scored = [i for i, sp in enumerate(splits) if sp != 0]
        tokens = iter(ptb_tokenize([t for i in scored for t in texts[i]]))
        reference_tokens: list[list[list[str]]] = [[] for _ in keys]
        for i in scored:
            reference_tokens[i] = [next(tokens) for _ in texts[i]]
        save_json(out, "reference_tokens.json", reference_tokens)
        np.save(out / "image.npy", np.array([position[k] for k in keys], dtype=np.int64))
        np.save(out / "split.npy", np.array(splits, dtype=np.int8))
        save_json(out, "meta.json", {"vocab": vocab, "caption_words": words})

    def load(self, seed: int = 0) -> dict[str, Split]:
        """Training rows are (image, caption) pairs; validation and test rows are images with all their captions."""
        refs, image, split = (load_array(self.folder, n) for n in ("references", "image", "split"))
        out = {}
        for i, name in enumerate(("train", "val", "test")):
            images = np.flatnonzero(np.asarray(split) == i)
            if name == "train":
                img, k = np.nonzero(np.asarray(refs[images, :, 0]) != 0)  # the captions each image has
                rows = refs.reshape(-1, refs.shape[2])  # (images x captions, words)
                out[name] = {
                    "captions": ArrayRows(rows, images[img] * refs.shape[1] + k),
                    **self.regions.columns(np.asarray(image)[images[img]]),
                }
            else:
                out[name] = {
                    "image_index": ArrayRows(np.arange(len(refs)), images),  # the row's image, for its references
                    "references": ArrayRows(refs, images),
                    "captions": ArrayRows(refs[:, 0], images),
                    **self.regions.columns(np.asarray(image)[images]),
                }
        return out

    def input_sizes(self):
        return {
            "image_regions": self.regions.regions,
            "region_features": self.regions.features,
            "caption_tokens": self.meta["caption_words"],
            "vocab_size": len(self.meta["vocab"]),
        }
