"""MAdds and attention-map bytes by formula, without tracing: the fast path of ``trainers.cost``.

The traced count (``trainers.madds``: fvcore over ``torch.jit.trace`` on the meta device) runs every
op's meta kernel in Python, twice with the attention-map hooks: about 0.2 s for the 44M MCAN, far
too slow for a sweep that rejects thousands of constrained points (issue 15). Here each family's
forward pass is written out as the layer calls it makes and the tokens each call sees, and each
call's MAdds come from the built layer's own shapes (``in_features``, ``out_features``, ``groups``,
``num_heads``). So knobs that only change shapes (groups, G-MHA/G-FFN/G-IL/G-LML, weight sharing,
Q/K expansion, radix vocabulary, sketch sizes) need no term of their own; only knobs that change
which calls run are mirrored: layer sharing (the stacks are iterated in their pattern), attention
sharing (``qk`` reuses Q as K in self-attention, ``kv`` reuses K as V), the coupled kernel, ORT's
relation term and pooling.

Convention (``trainers.madds``, LW-Transformer Tables II-III): one MAdd per multiply-add of a matrix
multiply; norms, softmax, element-wise ops and embedding lookups cost nothing. Batch 1.
``tests/test_cost_formula.py`` checks every figure equal to the traced count for every registry and
paper configuration, so a forward pass that changes without its formula here fails there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from torch import nn

from searchspace.layers import (
    AttentionPool,
    CoupledAttention,
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    GroupedLinear,
    MeanPool,
    MultiHeadAttention,
    SharedStack,
    SketchPool,
)
from searchspace.models import MCAN, ORT, ArchModel, EncoderClassifier, Retrieval


class FormulaCount:
    """MAdds per top-level child of the model, the attention share and attention-map bytes of one forward."""

    def __init__(self, element_size: int):
        self.by_child: Counter[str] = Counter()
        self.attention = 0
        self.map_bytes = 0
        self.element_size = element_size  # bytes per attention-map element (the model's float dtype)

    def linear(self, child: str, layer: nn.Module, tokens: int) -> None:
        self.by_child[child] += linear_madds(layer, tokens)

    def pool(self, child: str, pool: nn.Module, tokens: int) -> None:
        self.by_child[child] += pool_madds(pool, tokens)

    def stack(self, child: str, stack: SharedStack, tokens: int, memory_tokens: int = 0, relation: bool = False):
        """Every depth of a (possibly shared) stack: sharing reuses weights, never compute."""
        for layer in stack:  # iterates the sharing pattern: a shared layer is counted at every depth
            if isinstance(layer, EncoderLayer):
                self.attention_call(child, layer.attn, tokens, tokens, True, relation)
            elif isinstance(layer, DecoderLayer):
                self.attention_call(child, layer.self_attn, tokens, tokens, True)
                self.attention_call(child, layer.cross_attn, tokens, memory_tokens, False)
            else:
                raise TypeError(f"no MAdds formula for stack layer {type(layer).__name__}")
            self.by_child[child] += ffn_madds(layer.ffn, tokens)

    def attention_call(
        self, child: str, attn: MultiHeadAttention, tq: int, tk: int, self_attention: bool, relation: bool = False
    ) -> None:
        madds, map_numel = attention_costs(attn, tq, tk, self_attention, relation)
        self.by_child[child] += madds
        self.attention += madds
        self.map_bytes += map_numel * self.element_size


def linear_madds(layer: nn.Module, tokens: int) -> int:
    """A (grouped) linear layer over ``tokens`` rows: each of the k groups maps in/k -> out/k features."""
    if isinstance(layer, GroupedLinear):
        return tokens * layer.in_features * layer.out_features // layer.groups
    if isinstance(layer, nn.Linear):
        return tokens * layer.in_features * layer.out_features
    raise TypeError(f"no MAdds formula for layer {type(layer).__name__}")


def ffn_madds(ffn: FeedForward, tokens: int) -> int:
    return linear_madds(ffn.fc1, tokens) + linear_madds(ffn.fc2, tokens)


def pool_madds(pool: nn.Module, tokens: int) -> int:
    """Pooling of ``tokens`` tokens into one vector (``searchspace.layers.pooling``)."""
    if isinstance(pool, MeanPool):
        return 0  # a masked sum: element-wise
    if isinstance(pool, AttentionPool):
        score = linear_madds(pool.score[0], tokens) + linear_madds(pool.score[-1], tokens)
        return score + tokens * pool.out_dim  # the softmax-weighted sum einsum("bt,btd->bd")
    if isinstance(pool, SketchPool):
        return linear_madds(pool.coder.proj, tokens)  # the coder's distances and softmax are element-wise
    raise TypeError(f"no MAdds formula for pooling {type(pool).__name__}")


def attention_costs(
    attn: MultiHeadAttention, tq: int, tk: int, self_attention: bool, relation: bool = False
) -> tuple[int, int]:
    """(MAdds, attention-map elements) of one ``MultiHeadAttention`` call, Q from tq tokens, K/V from tk."""
    sharing = attn.attention_sharing
    if sharing == "qk":  # one projection for Q and K; self-attention reuses Q as K (ACORT Fig. 6)
        q_proj, v_proj = attn.qk_proj, attn.v_proj
        madds = linear_madds(q_proj, tq) + (0 if self_attention else linear_madds(q_proj, tk))
        madds += linear_madds(v_proj, tk)
    elif sharing == "kv":  # the projected key is the value: no V projection
        q_proj, v_proj = attn.q_proj, attn.kv_proj
        madds = linear_madds(q_proj, tq) + linear_madds(v_proj, tk)
    else:
        q_proj, v_proj = attn.q_proj, attn.v_proj
        madds = linear_madds(q_proj, tq) + linear_madds(attn.k_proj, tk) + linear_madds(v_proj, tk)
    madds += linear_madds(attn.out_proj, tq)
    if relation and attn.relation is not None:  # ORT: h x Linear(64, 1) over every (query, key) pair
        madds += linear_madds(attn.relation, tq * tk)
    heads, qk_width, v_width = attn.num_heads, q_proj.out_features, v_proj.out_features
    kernel = attn.kernel
    if isinstance(kernel, CoupledAttention):
        gh, gw = kernel.grid
        c_q, c_v = qk_width // heads, v_width // heads
        maps = gh * gw * c_q * (gh + gw)  # row map A (h x h) and column map B (w x w), each over w*c or h*c
        apply = gh * gw * c_v * (gh + gw)  # softmax(A) . V_c, then . softmax(B)^T
        return madds + heads * (maps + apply), heads * (gh * gh + gw * gw)
    # scaled dot product: QK^T over d_q = qk_width / h per head, AV over d_v = v_width / h
    return madds + tq * tk * (qk_width + v_width), heads * tq * tk


def _encoder(model: EncoderClassifier, n: FormulaCount) -> None:
    c = model.config
    assert c.grid is not None  # every size is filled by the family's defaults or the task
    tokens = c.grid[0] * c.grid[1]
    n.linear("patch_embed", model.patch_embed, tokens)
    n.stack("encoder", model.encoder, tokens)
    n.pool("pool", model.pool, tokens)
    n.linear("head", model.head, 1)


def _mcan(model: MCAN, n: FormulaCount) -> None:
    c = model.config
    words, regions = c.question_tokens, c.image_regions
    assert words is not None and regions is not None
    n.stack("encoder", model.encoder, words)
    n.linear("embed_regions", model.embed_regions, regions)
    n.stack("decoder", model.decoder, regions, memory_tokens=words)  # guided attention: K, V from the question
    n.pool("pool_question", model.pool_question, words)
    n.pool("pool_image", model.pool_image, regions)
    for child in ("proj_question", "proj_image", "classifier"):
        n.linear(child, getattr(model, child), 1)


def _ort(model: ORT, n: FormulaCount) -> None:
    c = model.config
    regions, length = c.image_regions, model.sequence_length
    assert regions is not None
    n.linear("embed_regions", model.embed_regions[0], regions)
    n.stack("encoder", model.encoder, regions, relation=True)  # the box-relation term in every encoder layer
    n.stack("decoder", model.decoder, length, memory_tokens=regions)
    n.linear("generator", model.generator, length)


def _retrieval(model: Retrieval, n: FormulaCount) -> None:
    c = model.config
    regions, words = c.image_regions, c.caption_tokens
    assert regions is not None and words is not None
    n.linear("embed_regions", model.embed_regions, regions)
    n.stack("image_encoder", model.image_encoder, regions)
    n.pool("pool_image", model.pool_image, regions)
    n.stack("text_encoder", model.text_encoder, words)
    n.pool("pool_text", model.pool_text, words)
    for child in ("sim_image", "sim_text", "sim_out"):  # one image, one text: one pair to score
        n.linear(child, getattr(model, child), 1)


# Each formula takes its own family's model class (hence Any): the key is the class it is looked up by.
FAMILY_FORMULAS: dict[type[ArchModel], Callable[[Any, FormulaCount], None]] = {
    EncoderClassifier: _encoder,
    MCAN: _mcan,
    ORT: _ort,
    Retrieval: _retrieval,
}


def formula_count(model: ArchModel) -> FormulaCount:
    """MAdds (per top-level child, attention share) and attention-map bytes of one forward at batch 1."""
    formula = FAMILY_FORMULAS.get(type(model))
    if formula is None:
        raise TypeError(
            f"no MAdds formula for model {type(model).__name__}; add one to FAMILY_FORMULAS in trainers/cost_formula.py"
        )
    count = FormulaCount(element_size=next(model.parameters()).element_size())
    formula(model, count)
    return count
