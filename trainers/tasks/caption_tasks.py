"""``captions`` (family ``ort``: BLEU-1..4, CIDEr-D as coco-caption computes them) and ``caption-retrieval``
(family ``retrieval``: R@1/5/10 and MRR both ways) over a Karpathy-split caption JSON (see ``captions``)."""

from __future__ import annotations

import functools
from pathlib import Path

import torch
import torch.nn.functional as F

from .base import batches
from .caption_metrics import corpus_scores, in_percent
from .captions import SPECIALS, CaptionData
from .prepared import load_json
from .ptb_tokenizer import ptb_tokenize
from .scene_captions import tokens_to_words

BOS, EOS, UNK = (SPECIALS.index(s) for s in ("<bos>", "<eos>", "<unk>"))
UNK_WORD = SPECIALS[UNK]
SKIPPED = frozenset(SPECIALS.index(s) for s in SPECIALS if s != UNK_WORD)


def sequences(model, words: torch.Tensor) -> torch.Tensor:
    """(B, W) left-aligned word ids (0 = pad) -> (B, L) BOS, words (or their radix digits), EOS, padding."""
    codec = model.codec
    per = codec.digits if codec else 1
    present = words != 0
    body = codec.encode(words) * present.repeat_interleave(per, 1) if codec else words
    b = len(words)
    seq = torch.zeros(b, body.shape[1] + 2, dtype=torch.long, device=words.device)
    seq[:, 0] = codec.bos if codec else BOS
    seq[:, 1:-1] = body
    seq[torch.arange(b, device=words.device), 1 + present.sum(1) * per] = codec.eos if codec else EOS
    return seq


@torch.no_grad()
def greedy(model, batch, max_len: int) -> list[list[int]]:
    """Greedily decoded word ids per image, up to EOS (radix digits decoded by the model's codec)."""
    codec, mask = model.codec, batch["region_mask"]
    memory = model.encode(batch["regions"], batch["boxes"], mask)
    tokens = torch.full((len(memory), 1), codec.bos if codec else BOS, device=memory.device)
    for _ in range(max_len):
        tokens = torch.cat([tokens, model.decode(memory, tokens, mask)[:, -1].argmax(-1, keepdim=True)], 1)
    return tokens_to_words(model, tokens[:, 1:].cpu())


def caption_text(words: list[int], vocab: list[str]) -> str:
    """Generated word ids as the text that is scored: padding, BOS and EOS left out, <unk> (or an id past the
    vocabulary, which radix digits can spell) written UNK, a word no reference holds."""
    return " ".join(vocab[w] if w < len(vocab) and vocab[w] != UNK_WORD else "UNK" for w in words if w not in SKIPPED)


class Captions(CaptionData):
    name, family, metric = "captions", "ort", "cider"
    metrics = {"cider": "maximize", **{f"bleu{n}": "maximize" for n in range(1, 5)}, "loss": "minimize"}

    def __init__(self, path: str | Path | None = None, min_word_count: int = 5, caption_words: int = 16):
        super().__init__(path, min_word_count, caption_words)

    def input_sizes(self):
        # the decoder writes the words and EOS (scene-captions counts the same way)
        return {**super().input_sizes(), "caption_tokens": self.meta["caption_words"] + 1}

    def loss(self, model, batch):
        seq = sequences(model, batch["captions"])
        logits = model(batch["regions"], batch["boxes"], seq[:, :-1], batch["region_mask"])
        return F.cross_entropy(logits.flatten(0, 1), seq[:, 1:].flatten(), ignore_index=0)

    @functools.cached_property
    def reference_tokens(self) -> list[list[list[str]]]:
        """Per image, its references as pycocoevalcap's tokenizer gives them (validation and test images)."""
        return load_json(self.folder, "reference_tokens.json")

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=250):
        device = next(model.parameters()).device
        images, texts, loss, n = [], [], 0.0, 0
        for b in batches(data, batch_size, device=device):
            loss += self.loss(model, b).item() * len(b["captions"])
            n += len(b["captions"])
            words = greedy(model, b, sequences(model, b["captions"]).shape[1] - 1)
            texts += [caption_text(w, self.meta["vocab"]) for w in words]
            images += b["image_index"].tolist()
        # scored as coco-caption scores: the generated text and every reference, PTB-tokenized
        scores = corpus_scores(ptb_tokenize(texts), [self.reference_tokens[i] for i in images])
        return {**in_percent(scores), "loss": loss / n}


def ranks(scores: torch.Tensor, caption_image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(I, C) image-caption scores -> 1-based ranks: per image of its best caption among all captions,
    per caption of its image among all images (the standard protocol with several captions per image)."""
    own = caption_image[None, :] == torch.arange(len(scores))[:, None]  # (I, C)
    best = scores.masked_fill(~own, float("-inf")).max(1).values  # (I,)
    i2t = (scores > best[:, None]).sum(1) + 1
    matching = scores.gather(0, caption_image[None, :]).squeeze(0)  # (C,)
    t2i = (scores > matching[None, :]).sum(0) + 1
    return i2t, t2i


class CaptionRetrieval(CaptionData):
    name, family, metric = "caption-retrieval", "retrieval", "mrr"
    metrics = {
        "mrr": "maximize",
        "rsum": "maximize",
        **{f"{d}_{m}": "maximize" for d in ("i2t", "t2i") for m in ("r@1", "r@5", "r@10", "mrr")},
    }

    def __init__(self, path: str | Path | None = None, min_word_count: int = 5, caption_words: int = 16):
        super().__init__(path, min_word_count, caption_words)

    def loss(self, model, batch):
        # the symmetric contrastive loss of scene-retrieval (two captions of one image in a batch are negatives)
        scores = model.score(
            model.embed_image(batch["regions"], batch["region_mask"]), model.embed_text(batch["captions"])
        )
        target = torch.arange(len(scores), device=scores.device)
        return (F.cross_entropy(scores, target) + F.cross_entropy(scores.T, target)) / 2

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=250):
        device = next(model.parameters()).device
        images, texts, owner, seen = [], [], [], 0
        for b in batches(data, batch_size, device=device):
            images.append(model.embed_image(b["regions"], b["region_mask"]))
            refs = b["references"]  # (B, K, W)
            has = refs[:, :, 0] != 0
            texts.append(model.embed_text(refs[has]))
            owner.append(seen + has.nonzero()[:, 0].cpu())
            seen += len(refs)
        images, texts, owner = torch.cat(images), torch.cat(texts), torch.cat(owner)
        scores = (
            torch.cat([model.score(images[i : i + batch_size], texts) for i in range(0, len(images), batch_size)])
            .float()
            .cpu()
        )
        out = {}
        for direction, r in zip(("i2t", "t2i"), ranks(scores, owner)):
            r = r.float()
            out.update({f"{direction}_r@{k}": 100.0 * (r <= k).float().mean().item() for k in (1, 5, 10)})
            out[f"{direction}_mrr"] = (1.0 / r).mean().item()
        out["mrr"] = (out["i2t_mrr"] + out["t2i_mrr"]) / 2
        out["rsum"] = sum(v for k, v in out.items() if "@" in k)
        return out
