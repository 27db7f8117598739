"""MAdds counting with fvcore: multiply-adds of every matrix multiply, nothing else.

fvcore traces the model with ``torch.jit.trace`` (on the meta device, so nothing is allocated)
and sums per-op handlers. We register one handler per matrix-multiply op the blocks use; norms,
softmax and element-wise ops are deliberately not counted, matching the convention of the
LW-Transformer paper's MAdds column (Tables II, III: "multiplication-addition", [60]).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import torch
from fvcore.nn.jit_analysis import JitModelAnalysis
from fvcore.nn.jit_handles import get_shape


def _shapes(inputs: list[Any], count: int) -> list[list[int]]:
    return [get_shape(v) for v in inputs[:count]]


def _matmul(inputs, outputs) -> int:
    """aten::matmul / bmm / mm: prod(output) * contracted dim (batch dims broadcast)."""
    a, b = _shapes(inputs, 2)
    out = get_shape(outputs[0])
    return math.prod(out) * a[-1]


def _linear(inputs, outputs) -> int:
    """aten::linear / addmm: each output element costs in_features multiply-adds."""
    x = get_shape(inputs[0]) if len(get_shape(inputs[0])) else None
    out = get_shape(outputs[0])
    return math.prod(out) * (x[-1] if x else get_shape(inputs[1])[-1])


def _addmm(inputs, outputs) -> int:
    # addmm(bias, x, w): x (N, in)
    return math.prod(get_shape(outputs[0])) * get_shape(inputs[1])[-1]


def _einsum(inputs, outputs) -> int:
    """Two-operand einsum: the product of the sizes of every distinct index (exact for one contraction)."""
    equation = inputs[0].toIValue().replace(" ", "")
    operands = inputs[1].node().inputs()
    lhs = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for letters, operand in zip(lhs, operands):
        for letter, size in zip(letters, get_shape(operand)):
            sizes[letter] = size
    return math.prod(sizes.values())


def _sdpa(inputs, outputs) -> int:
    """aten::scaled_dot_product_attention: QK^T (Tq*Tk*d_q) plus AV (Tq*Tk*d_v) per head."""
    q, k, v = _shapes(inputs, 3)
    batch_heads = math.prod(q[:-2])
    return batch_heads * q[-2] * k[-2] * (q[-1] + v[-1])


HANDLERS = {
    "aten::linear": _linear,
    "aten::addmm": _addmm,
    "aten::matmul": _matmul,
    "aten::mm": _matmul,
    "aten::bmm": _matmul,
    "aten::einsum": _einsum,
    "aten::scaled_dot_product_attention": _sdpa,
}


def count_madds(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[int, Counter]:
    """Total MAdds of one forward pass and the per-module counts (fvcore's ``by_module``)."""
    analysis = JitModelAnalysis(model, inputs).set_op_handle(**HANDLERS)
    analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False).tracer_warnings("none")
    return int(analysis.total()), Counter(analysis.by_module())
