"""Cutting a ``(..., L, D)`` tensor into h heads of width Dh = D / h and joining them back.

The one reshape every multi-head module shares: ``(B, L, D) <-> (B, H, L, Dh)``, head r holding
features ``r*Dh:(r+1)*Dh``.
"""

from __future__ import annotations

import torch

from attnlib.util._checks import check_positive_int, check_tensor

__all__ = ["split_heads", "merge_heads"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Reshape ``(B, L, D)`` into ``(B, H, L, Dh)``: head r gets features ``r*Dh : (r+1)*Dh``.

    Args:
        x: ``(B, L, D)`` with D divisible by ``num_heads``.
        num_heads: H.

    Returns:
        ``(B, H, L, Dh)``, a view when possible.
    """
    check_tensor("x", x, ndim=3, floating=False)
    check_positive_int("num_heads", num_heads)
    batch, length, width = x.shape
    if width % num_heads:
        raise ValueError(
            f"the width D={width} of x (shape {tuple(x.shape)}) is not divisible by "
            f"num_heads={num_heads}"
        )
    return _split_heads(x, num_heads)


def _split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    batch, length, width = x.shape
    return x.reshape(batch, length, num_heads, width // num_heads).transpose(1, 2)  # (B, H, L, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`split_heads`: ``(B, H, L, Dh)`` -> ``(B, L, H*Dh)`` (the concatenation).

    Args:
        x: ``(B, H, L, Dh)``.

    Returns:
        ``(B, L, D)`` with ``D = H * Dh``; head r occupies features ``r*Dh : (r+1)*Dh``.
    """
    check_tensor("x", x, ndim=4, floating=False)
    return _merge_heads(x)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    batch, heads, length, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * head_dim)  # (B, L, D)
