"""Group-wise linear projection (LW-Transformer §III-B, Eq. 5).

The input's last dimension is split into ``groups`` chunks; each chunk gets its own
``Linear(in/groups, out/groups)`` (or, with ``weight_sharing``, one set of weights serves every
group). All groups run as one batched einsum over a group axis, never a Python loop.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class GroupedLinear(nn.Module):
    """``[tau(X_1), ..., tau(X_k)]`` with ``tau`` linear; ``groups=1`` is a plain ``nn.Linear``."""

    def __init__(
        self, in_features: int, out_features: int, groups: int = 1, weight_sharing: bool = False, bias: bool = True
    ):
        super().__init__()
        if in_features % groups or out_features % groups:
            raise ValueError(
                f"in_features ({in_features}) and out_features ({out_features}) must be divisible by groups ({groups})"
            )
        self.in_features, self.out_features, self.groups = in_features, out_features, groups
        self.weight_sharing = weight_sharing and groups > 1
        gi, go = in_features // groups, out_features // groups
        if groups == 1:
            self.weight = nn.Parameter(torch.empty(out_features, in_features))
            self.bias = nn.Parameter(torch.empty(out_features)) if bias else None
        else:
            stored = 1 if self.weight_sharing else groups
            self.weight = nn.Parameter(torch.empty(stored, gi, go))  # (G, in/k, out/k)
            self.bias = nn.Parameter(torch.empty(stored, go)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # nn.Linear's init, with each group's fan-in (in/k).
        fan_in = self.in_features // self.groups
        bound = 1 / math.sqrt(fan_in)
        if self.groups == 1:
            nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        else:
            nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.groups == 1:
            return F.linear(x, self.weight, self.bias)
        lead = x.shape[:-1]
        xg = x.reshape(-1, self.groups, self.in_features // self.groups)  # (N, k, in/k)
        if self.weight_sharing:
            y = torch.matmul(xg, self.weight[0])  # (N, k, out/k): one weight for every group
        else:
            y = torch.einsum("ngi,gio->ngo", xg, self.weight)  # (N, k, out/k)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, groups={self.groups}, "
            f"weight_sharing={self.weight_sharing}, bias={self.bias is not None}"
        )
