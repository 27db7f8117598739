"""Radix encoding of word ids (ACORT §4.1, Algorithm 1, Fig. 3).

Each word id is written in base ``v`` with a fixed number of digits, most-significant first,
zero-padded. Token ids follow the authors' code: pad=0, digit ``d`` -> ``d + 1`` (1..v),
BOS = v+1, EOS = v+2, so the model's vocabulary is ``v + 3`` entries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

PAD = 0


def digits_for(num_words: int, base: int) -> int:
    """Digits per word: the smallest D with base**D >= num_words (ACORT Eq. 1)."""
    digits = 1
    while base**digits < num_words:
        digits += 1
    return digits


class RadixCodec:
    """Reversible word-id <-> digit-token codec for a vocabulary of ``num_words`` words."""

    def __init__(self, base: int, num_words: int):
        if base < 2:
            raise ValueError(f"`radix_base` must be >= 2, got {base}")
        if num_words < 1:
            raise ValueError(f"`num_words` must be >= 1, got {num_words}")
        self.base = base
        self.num_words = num_words
        self.digits = digits = digits_for(num_words, base)
        self.bos = base + 1
        self.eos = base + 2
        self.vocab_size = base + 3
        import torch  # here, so the study language (which needs digits_for) never imports torch

        # place values, most-significant first: (v^(D-1), ..., v, 1)
        self._places = torch.tensor([base ** (digits - 1 - i) for i in range(digits)], dtype=torch.long)

    def encode(self, words: torch.Tensor) -> torch.Tensor:
        """(..., W) word ids -> (..., W * digits) digit tokens in 1..v."""
        if words.numel() and (words.min() < 0 or words.max() >= self.num_words):
            raise ValueError(
                f"word ids must lie in [0, {self.num_words}), got range [{int(words.min())}, {int(words.max())}]"
            )
        digits = (words.unsqueeze(-1) // self._places.to(words.device)) % self.base  # (..., W, D)
        return (digits + 1).flatten(-2)

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """(..., W * digits) digit tokens -> (..., W) word ids; a group holding a non-digit token
        (pad, BOS, EOS) or an id past the vocabulary decodes to -1."""
        if tokens.shape[-1] % self.digits:
            raise ValueError(f"expected a multiple of {self.digits} tokens per sequence, got {tokens.shape[-1]}")
        groups = tokens.unflatten(-1, (-1, self.digits))  # (..., W, D)
        valid = ((groups >= 1) & (groups <= self.base)).all(-1)
        words = ((groups - 1).clamp(min=0) * self._places.to(groups.device)).sum(-1)
        valid &= words < self.num_words
        return words.where(valid, -1)

    def __repr__(self) -> str:
        return f"RadixCodec(base={self.base}, num_words={self.num_words}, digits={self.digits})"
