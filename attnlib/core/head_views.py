"""Views of multi-head attention that teach: one head's slice of a projection, the heads run
one by one (C16), one head of the full width (C17) and each head's weight map.

They read a :class:`~attnlib.core.multihead.MultiHeadAttention`'s layers but are not part of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from attnlib.core.attention import dot_product_attention
from attnlib.core.heads import split_heads
from attnlib.core.scoring import default_scale
from attnlib.util._checks import (
    check_int,
    check_positive_int,
    check_same_device,
    check_same_dtype,
    check_tensor,
)

if TYPE_CHECKING:
    from attnlib.core.multihead import MultiHeadAttention

__all__ = ["head_projection", "multihead_by_separate_heads", "one_wide_head", "head_weight_maps"]


def head_projection(
    linear: nn.Linear,
    head: int,
    num_heads: int,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Head r's own projection cut out of a full ``(D, D)`` projection.

    Args:
        linear: ``nn.Linear(D, D)`` (e.g. ``mha.w_q``).
        head: r in ``[0, num_heads)``.
        num_heads: H.

    Returns:
        ``(weight (Dh, D), bias (Dh,) or None)``: ``F.linear(x, weight, bias)`` is head r's
        ``x W^(r)``.
    """
    if not isinstance(linear, nn.Linear):
        raise TypeError(f"linear must be an nn.Linear (e.g. mha.w_q), got {type(linear).__name__}")
    check_positive_int("num_heads", num_heads)
    check_int("head", head, min=0, max=num_heads - 1)
    width = linear.out_features
    if width % num_heads:
        raise ValueError(f"out_features={width} is not divisible by num_heads={num_heads}")
    head_dim = width // num_heads
    rows = slice(head * head_dim, (head + 1) * head_dim)
    bias = None if linear.bias is None else linear.bias[rows]
    return linear.weight[rows], bias


def multihead_by_separate_heads(
    mha: MultiHeadAttention,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-head attention computed head by head with h separate small projections (C16).

    Each head r projects with its own ``(D, Dh)`` matrices, attends on its own, and the h
    outputs are concatenated and mixed by W_O. Equal to ``mha(query, key, value, attn_mask)``,
    which uses one big projection reshaped into heads.

    Args:
        mha: the module whose weights to use.
        query: ``(B, L, D)``; key, value: ``(B, S, D)``.
        attn_mask: optional, broadcastable to ``(B, L, S)`` (boolean True = may attend, or float).

    Returns:
        ``(out (B, L, D), weights (B, H, L, S))``.
    """
    mha._check_inputs(query, key, value)
    outs, weights = [], []
    for r in range(mha.num_heads):
        q = F.linear(query, *head_projection(mha.w_q, r, mha.num_heads))  # (B, L, Dh)
        k = F.linear(key, *head_projection(mha.w_k, r, mha.num_heads))  # (B, S, Dh)
        v = F.linear(value, *head_projection(mha.w_v, r, mha.num_heads))  # (B, S, Dh)
        out_r, w_r = dot_product_attention(q, k, v, attn_mask)  # (B, L, Dh), (B, L, S)
        outs.append(out_r)
        weights.append(w_r)
    concat = torch.cat(outs, dim=-1)  # (B, L, D)
    return mha.w_o(concat), torch.stack(weights, dim=1)  # (B, L, D), (B, H, L, S)


def one_wide_head(
    mha: MultiHeadAttention,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same projections used as ONE head of width D instead of H heads of width D/H (C17).

    Same parameter count, but each query gets a single row of weights (scale ``1/sqrt(D)``)
    where H heads give it H rows, each computed from its own slice of the features.

    Args:
        mha: the module whose weights to use.
        query: ``(B, L, D)``; key, value: ``(B, S, D)``.
        attn_mask: optional, broadcastable to ``(B, L, S)``.

    Returns:
        ``(out (B, L, D), weights (B, L, S))``.
    """
    mha._check_inputs(query, key, value)
    q, k, v = mha.w_q(query), mha.w_k(key), mha.w_v(value)  # (B, L, D), (B, S, D), (B, S, D)
    out, weights = dot_product_attention(q, k, v, attn_mask, scale=default_scale(mha.d_model))
    return mha.w_o(out), weights  # (B, L, D), (B, L, S)


def head_weight_maps(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    num_heads: int,
) -> torch.Tensor:
    """Each head's self-attention weights when x W_Q and x W_K are cut into heads (C16, C17).

    Args:
        x: ``(1, L, D)`` input.
        w_q, w_k: ``(D, D)`` projections in ``nn.Linear`` layout (``F.linear(x, w)`` = x Wᵀ).
        num_heads: H, dividing D.

    Returns:
        ``(H, L, L)`` weights, head r from features ``r*Dh:(r+1)*Dh`` (scale ``1/sqrt(Dh)``).
    """
    check_tensor("x", x, ndim=3)
    if x.shape[0] != 1:
        raise ValueError(f"x must be (1, L, D), one sequence, got {tuple(x.shape)}")
    check_positive_int("num_heads", num_heads)
    d_model = x.shape[-1]
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        check_tensor(name, w, ndim=2)
        if tuple(w.shape) != (d_model, d_model):
            raise ValueError(
                f"{name} must be (D, D) = ({d_model}, {d_model}) for x {tuple(x.shape)}, "
                f"got {tuple(w.shape)}"
            )
    check_same_dtype(x=x, w_q=w_q, w_k=w_k)
    check_same_device(x=x, w_q=w_q, w_k=w_k)
    q = split_heads(F.linear(x, w_q), num_heads)  # (1, H, L, Dh)
    k = split_heads(F.linear(x, w_k), num_heads)  # (1, H, S, Dh)
    _, w = dot_product_attention(q, k, k)  # values do not change the weights
    return w[0]  # (H, L, S)
