"""``vqa`` (family ``mcan``): VQA v2 questions and annotations with per-image region features.

Layout (the files as the VQA site ships them; any names containing these parts are found)::

    ROOT/v2_OpenEnded_mscoco_train2014_questions.json   {"questions": [{"question_id", "image_id", "question"}]}
    ROOT/v2_mscoco_train2014_annotations.json           {"annotations": [{"question_id", "answers": [{"answer"}]}]}
    ROOT/v2_OpenEnded_mscoco_val2014_questions.json     (and its annotations: the val and test splits,
    ROOT/v2_mscoco_val2014_annotations.json              half of the images each, by a fixed seed)
    ROOT/features/<image id>.npz                        region features (see ``regions``)

Answers are normalised as the official evaluation normalises them (``vqa_eval.normalize_answer``: number
words to digits, articles dropped, punctuation and contractions); the answer list is the ``answers`` most
frequent normalised answers in the training split, and training questions none of whose answers is in it
are left out of training (as MCAN does). Loss: cross-entropy against each listed answer's soft score, the
official accuracy it would get, 0.3 / 0.6 / 0.9 / 1 for 1 / 2 / 3 / 4+ of ten annotators (MCAN's
``get_score``), normalised to sum 1. Metric ``vqa_accuracy``: the official VQA accuracy of the predicted
answer against the annotators' raw answers (``vqa_eval.vqa_accuracy``, as vqaEval.py computes it), averaged
over the questions, in percent.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .base import Batch, Split, Task, batches
from .lazy import ArrayRows
from .prepared import fingerprint, load_array, load_json, needs_path, positive_option, prepared, save_json
from .regions import build_index, feature_source, load_index, missing_hint, source_files
from .text import PAD, UNK, build_vocab, encode, field, read_json, tokenize
from .vqa_eval import leave_one_out_score, normalize_answer, vqa_accuracy

ANSWERS_PER_QUESTION = 10


def official_scores(answers: list[str], answer_list: list[str], by_form: dict[str, list[int]]) -> dict[int, float]:
    """``vqa_accuracy`` of each answer-list entry that scores above 0 against a question's raw ``answers``.

    ``by_form`` maps a string to the entries that normalise to it or are it. Where the annotators disagree
    vqaEval compares normalised forms; where they agree, the strings as given (an entry is already clean).
    """
    given = {a.replace("\n", " ").replace("\t", " ").strip() for a in answers}
    if len(given) > 1:
        candidates = {i for a in given for i in by_form.get(normalize_answer(a), ())}
    else:
        candidates = {i for a in given for i in by_form.get(a, ()) if answer_list[i] == a}
    scores = {i: vqa_accuracy(answer_list[i], answers) for i in sorted(candidates)}
    return {i: s for i, s in scores.items() if s > 0}


class VQA(Task):
    name, family, metric = "vqa", "mcan", "vqa_accuracy"
    metrics = {"vqa_accuracy": "maximize", "loss": "minimize"}
    path_options = ("path",)

    def __init__(
        self, path: str | Path | None = None, answers: int = 3129, question_tokens: int = 14, min_word_count: int = 1
    ):
        if path is None:
            raise ValueError(needs_path(self.name))
        self.path = Path(path)
        if not self.path.is_dir():
            raise ValueError(f"vqa: no such folder: {self.path}")
        self.options = {
            k: positive_option(k, v, self.name)
            for k, v in dict(answers=answers, question_tokens=question_tokens, min_word_count=min_word_count).items()
        }
        files = self._files()
        self.features = feature_source(self.path, self.name)
        inputs = [*files.values(), *source_files(self.features)]
        key = f"vqa-{fingerprint(self.name, self.options, inputs)}"
        self.folder = prepared(self.path, key, lambda out: self._build(out, files))
        self.meta = load_json(self.folder, "meta.json")
        self.regions = load_index(self.folder)

    def _files(self) -> dict[str, Path]:
        out = {}
        for split in ("train", "val"):
            for kind in ("questions", "annotations"):
                found = sorted(self.path.glob(f"*{split}*{kind}*.json"))
                if len(found) != 1:
                    raise ValueError(
                        f"vqa: {self.path} needs one *{split}*{kind}*.json file (as "
                        f"v2_OpenEnded_mscoco_{split}2014_questions.json, "
                        f"v2_mscoco_{split}2014_annotations.json), "
                        f"found {len(found)}"
                    )
                out[f"{split}_{kind}"] = found[0]
        return out

    def _read_split(self, questions: Path, annotations: Path) -> list[tuple[int, str, list[str], list[str]]]:
        """(question id, image key, question words, the annotators' answers as given) of one split's files."""
        qs = field(read_json(questions, "vqa"), "questions", list, f"vqa: {questions}")
        anns = field(read_json(annotations, "vqa"), "annotations", list, f"vqa: {annotations}")
        answers: dict[int, list[str]] = {}
        annotated_at: dict[int, int] = {}  # question id -> its index in `annotations`
        for i, a in enumerate(anns):
            where = f"vqa: {annotations}: annotations[{i}]"
            given = field(a, "answers", list, where)
            qid = field(a, "question_id", int, where)
            if qid in annotated_at:  # two answer sets for one question: neither can be the truth
                raise ValueError(
                    f"{where}: question {qid} is annotated twice (first at annotations[{annotated_at[qid]}])"
                )
            annotated_at[qid] = i
            answers[qid] = [field(g, "answer", str, f"{where}.answers[{j}]") for j, g in enumerate(given)]
        out = []
        asked_at: dict[int, int] = {}  # question id -> its index in `questions`
        for i, q in enumerate(qs):
            where = f"vqa: {questions}: questions[{i}]"
            qid = field(q, "question_id", int, where)
            if qid in asked_at:  # question ids key predictions and scores: a repeat would silently merge two
                raise ValueError(f"{where}: question id {qid} is used twice (first at questions[{asked_at[qid]}])")
            asked_at[qid] = i
            if qid not in answers:
                raise ValueError(f"{where}: question {qid} has no annotation in {annotations}")
            words = tokenize(field(q, "question", str, where))
            if not words:
                raise ValueError(f"{where}: question {qid} has no words")
            out.append((qid, str(field(q, "image_id", int, where)), words, answers[qid]))
        return out

    def _build(self, out: Path, files: dict[str, Path]) -> None:
        parts = {s: self._read_split(files[f"{s}_questions"], files[f"{s}_annotations"]) for s in ("train", "val")}
        images = {img for rows in parts.values() for _, img, _, _ in rows}
        build_index(self.features, out, images)
        position = load_index(out).position()
        for s, rows in parts.items():
            for qid, img, _, _ in rows:
                if img not in position:
                    raise ValueError(
                        f"vqa: {files[f'{s}_questions']}: question {qid} names image {img}, which has no "
                        f"features in {self.features}{missing_hint(self.features, img)}"
                    )
        o = self.options
        vocab = build_vocab((w for _, _, w, _ in parts["train"]), o["min_word_count"], (PAD, UNK))
        rows = parts["train"] + parts["val"]
        normalised = [[normalize_answer(a) for a in given] for _, _, _, given in rows]
        counts = Counter(a for given in normalised[: len(parts["train"])] for a in given)
        answer_list = sorted(counts, key=lambda a: (-counts[a], a))[: o["answers"]]
        answer_index = {a: i for i, a in enumerate(answer_list)}
        # training target: each listed answer's official score from its share of the normalised answers
        ids = np.full((len(rows), ANSWERS_PER_QUESTION), -1, dtype=np.int32)
        targets = np.zeros((len(rows), ANSWERS_PER_QUESTION), dtype=np.float32)
        for r, given in enumerate(normalised):
            listed = Counter(a for a in given if a in answer_index).most_common(ANSWERS_PER_QUESTION)
            for k, (a, c) in enumerate(listed):
                ids[r, k], targets[r, k] = answer_index[a], leave_one_out_score(c, len(given))
        # metric: vqaEval's accuracy of every listed answer that scores above 0 against the raw answers
        by_form: dict[str, list[int]] = {}  # each entry under its normalised form and under itself
        for i, a in enumerate(answer_list):
            for form in {normalize_answer(a), a}:
                by_form.setdefault(form, []).append(i)
        official = [official_scores(given, answer_list, by_form) for _, _, _, given in rows]
        width = max(1, max(len(o) for o in official))
        eval_ids = np.full((len(rows), width), -1, dtype=np.int32)
        eval_scores = np.zeros((len(rows), width), dtype=np.float32)
        for r, scored in enumerate(official):
            eval_ids[r, : len(scored)], eval_scores[r, : len(scored)] = list(scored), list(scored.values())
        # val images are halved by a fixed seed into the val and test splits (no image in both)
        val_images = sorted({img for _, img, _, _ in parts["val"]})
        if len(val_images) < 2:
            raise ValueError(
                f"vqa: {files['val_questions']} names {len(val_images)} image(s); its images are halved "
                f"into the validation and test splits, so it needs at least 2"
            )
        test_images = set(np.random.default_rng(0).permutation(val_images)[len(val_images) // 2 :].tolist())
        split = np.array([0] * len(parts["train"]) + [2 if img in test_images else 1 for _, img, _, _ in parts["val"]])
        length = min(o["question_tokens"], max(len(w) for _, _, w, _ in rows))
        np.save(out / "tokens.npy", encode([w for _, _, w, _ in rows], vocab, length))
        np.save(out / "image.npy", np.array([position[img] for _, img, _, _ in rows], dtype=np.int64))
        np.save(out / "answer_ids.npy", ids)
        np.save(out / "answer_targets.npy", targets)
        np.save(out / "eval_ids.npy", eval_ids)
        np.save(out / "eval_scores.npy", eval_scores)
        np.save(out / "split.npy", split.astype(np.int8))
        save_json(out, "meta.json", {"vocab": vocab, "answers": answer_list, "question_tokens": length})

    def input_sizes(self):
        return {
            "question_tokens": self.meta["question_tokens"],
            "image_regions": self.regions.regions,
            "region_features": self.regions.features,
            "vocab_size": len(self.meta["vocab"]),
            "num_answers": len(self.meta["answers"]),
        }

    def load(self, seed: int = 0) -> dict[str, Split]:
        split, ids, image = (load_array(self.folder, n) for n in ("split", "answer_ids", "image"))
        out = {}
        for i, name in enumerate(("train", "val", "test")):
            index = np.flatnonzero((np.asarray(split) == i) & ((np.asarray(ids)[:, 0] >= 0) if i == 0 else True))
            out[name] = {
                "question": ArrayRows(load_array(self.folder, "tokens"), index),
                "answer_ids": ArrayRows(ids, index),
                "answer_targets": ArrayRows(load_array(self.folder, "answer_targets"), index, torch.float32),
                "eval_ids": ArrayRows(load_array(self.folder, "eval_ids"), index),
                "eval_scores": ArrayRows(load_array(self.folder, "eval_scores"), index, torch.float32),
                **self.regions.columns(np.asarray(image)[index]),
            }
            del out[name]["boxes"]  # MCAN reads no boxes
        return out

    def _target(self, batch: Batch) -> torch.Tensor:
        """(B, answers) each answer's soft score (0.3 / 0.6 / 0.9 / 1 of ten annotators), normalised to sum 1."""
        ids, scores = batch["answer_ids"].long(), batch["answer_targets"]
        target = torch.zeros(len(ids), len(self.meta["answers"]) + 1, device=ids.device)  # last column: -1 ids
        target.scatter_add_(1, ids.where(ids >= 0, target.shape[1] - 1), scores)
        target = target[:, :-1]
        return target / target.sum(1, keepdim=True).clamp(min=1e-6)

    def _logits(self, model, batch):
        return model(batch["question"], batch["regions"], batch["region_mask"])

    def loss(self, model, batch):
        return F.cross_entropy(self._logits(model, batch), self._target(batch))

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=256):
        device = next(model.parameters()).device
        got, losses, n = 0.0, 0.0, 0
        for b in batches(data, batch_size, device=device):
            logits = self._logits(model, b).float()
            predicted = logits.argmax(-1, keepdim=True)  # (B, 1) answer-list index
            got += (b["eval_scores"] * (b["eval_ids"] == predicted)).sum().double().item()
            losses += F.cross_entropy(logits, self._target(b), reduction="sum").item()
            n += len(logits)
        return {"vqa_accuracy": 100.0 * got / n, "loss": losses / n}
