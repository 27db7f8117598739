"""``scene-captions`` (family ``ort``): caption procedural scenes; BLEU-1..4 and CIDEr-D as coco-caption
computes them (x 100), and exact match.

Teacher-forced cross-entropy for training; greedy decoding for evaluation. With ``radix_base`` the
model reads and writes radix digits, which are decoded back to words before scoring. Each scene has one
reference; its words are single tokens to coco-caption's tokenizer, so the word ids are scored directly.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from searchspace.radix import RadixCodec

from . import scenes
from .base import batches
from .caption_metrics import corpus_scores, in_percent

BOS, EOS = 1, 2  # word-level specials (scenes.SPECIALS)


def _targets(model, captions: torch.Tensor) -> torch.Tensor:
    """(B, W) word ids -> (B, L) token sequence BOS, words (or digits), EOS in the model's vocabulary."""
    codec: RadixCodec | None = model.codec
    body = codec.encode(captions) if codec else captions
    bos, eos = (codec.bos, codec.eos) if codec else (BOS, EOS)
    b = captions.shape[0]
    return torch.cat(
        [torch.full((b, 1), bos, device=captions.device), body, torch.full((b, 1), eos, device=captions.device)], dim=1
    )


def tokens_to_words(model, tokens: torch.Tensor) -> list[list[int]]:
    """Generated tokens (after BOS) -> word ids, stopping at EOS; radix digits decoded by the codec."""
    codec: RadixCodec | None = model.codec
    eos = codec.eos if codec else EOS
    out = []
    for row in tokens.tolist():
        row = row[: row.index(eos)] if eos in row else row
        if codec:
            row = row[: len(row) - len(row) % codec.digits]
            row = codec.decode(torch.tensor(row, dtype=torch.long)).tolist() if row else []
        out.append(row)
    return out


@torch.no_grad()
def greedy_decode(model, regions: torch.Tensor, boxes: torch.Tensor, max_len: int) -> torch.Tensor:
    """(B, max_len) greedily generated tokens (BOS excluded)."""
    codec = model.codec
    memory = model.encode(regions, boxes)
    tokens = torch.full((regions.shape[0], 1), codec.bos if codec else BOS, device=regions.device)
    for _ in range(max_len):
        logits = model.decode(memory, tokens)[:, -1]
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
    return tokens[:, 1:]


class SceneCaptions(scenes.SceneTask):
    name, family, metric = "scene-captions", "ort", "bleu4"
    metrics = {
        **{f"bleu{n}": "maximize" for n in range(1, 5)},
        "cider": "maximize",
        "exact_match": "maximize",
        "loss": "minimize",
    }
    caption_tokens = scenes.CAPTION_WORDS + 1  # the words plus EOS

    def loss(self, model, batch):
        seq = _targets(model, batch["captions"])
        logits = model(batch["regions"], batch["boxes"], seq[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), seq[:, 1:].flatten(), ignore_index=0)

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=250):
        device = next(model.parameters()).device
        hyps, refs, losses = [], [], []
        for b in batches(data, batch_size, device=device):
            losses.append(self.loss(model, b).item() * len(b["captions"]))
            max_len = _targets(model, b["captions"]).shape[1] - 1
            hyps += tokens_to_words(model, greedy_decode(model, b["regions"], b["boxes"], max_len).cpu())
            refs += b["captions"].cpu().tolist()
        exact = sum(h == r for h, r in zip(hyps, refs)) / len(refs)
        scores = in_percent(corpus_scores(hyps, [[r] for r in refs]))
        return {**scores, "exact_match": exact, "loss": sum(losses) / len(refs)}
