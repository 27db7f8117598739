"""``scene-retrieval`` (family ``retrieval``): image-to-text and text-to-image retrieval over
procedural scenes, with T-EMDE's metrics (R@1, R@5, R@10, MRR). Trained with a symmetric
contrastive loss over the batch's score matrix, so sketch and attention pooling are compared on
the same objective."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..metrics import retrieval_metrics
from . import scenes
from .base import batches


class SceneRetrieval(scenes.SceneTask):
    name, family, metric = "scene-retrieval", "retrieval", "mrr"
    metrics = {
        "mrr": "maximize",
        "rsum": "maximize",
        **{f"{d}_{m}": "maximize" for d in ("i2t", "t2i") for m in ("r@1", "r@5", "r@10", "mrr")},
    }

    def loss(self, model, batch):
        scores = model(batch["regions"], batch["captions"])  # (B, B), matches on the diagonal
        target = torch.arange(len(scores), device=scores.device)
        return (F.cross_entropy(scores, target) + F.cross_entropy(scores.T, target)) / 2

    @torch.no_grad()
    def evaluate(self, model, data, batch_size=250):
        device = next(model.parameters()).device
        images = torch.cat([model.embed_image(b["regions"]) for b in batches(data, batch_size, device=device)])
        texts = torch.cat([model.embed_text(b["captions"]) for b in batches(data, batch_size, device=device)])
        # the pairwise head holds (rows, N, d) activations: score in row chunks
        scores = (
            torch.cat([model.score(images[i : i + batch_size], texts) for i in range(0, len(images), batch_size)])
            .float()
            .cpu()
        )
        out = {**retrieval_metrics(scores, "i2t"), **retrieval_metrics(scores.T, "t2i")}
        out["mrr"] = (out["i2t_mrr"] + out["t2i_mrr"]) / 2
        out["rsum"] = sum(v for k, v in out.items() if "@" in k)
        return out
