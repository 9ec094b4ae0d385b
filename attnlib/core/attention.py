"""Scaled dot-product attention, written out so every intermediate can be looked at."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlib.core.masks import checked_attention_mask
from attnlib.core.scoring import checked_scale, scaled_scores
from attnlib.core.softmax import _masked_softmax
from attnlib.util._checks import (
    check_bool,
    check_has_keys,
    check_last_dim_match,
    check_probability,
    check_same_device,
    check_same_dtype,
    check_tensor,
)

__all__ = ["dot_product_attention", "check_qkv", "check_attention_call"]


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Validate the shapes, dtypes and devices of an attention call's q, k and v."""
    check_tensor("q", q, ndim_min=2)
    check_tensor("k", k, ndim_min=2)
    check_tensor("v", v, ndim_min=2)
    check_same_device(q=q, k=k, v=v)
    check_same_dtype(q=q, k=k, v=v)
    check_last_dim_match("q", q, "k", k, "d_k")
    if q.shape[-1] == 0:
        # The default scale 1/sqrt(d_k) would divide by zero; a query with no features is a bug.
        raise ValueError(f"q and k must have d_k >= 1 features, got q {tuple(q.shape)}")
    check_last_dim_match("k", k, "v", v, "S (number of keys)", dim_a=-2, dim_b=-2)
    check_has_keys("k", k, q=q, v=v)
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch) dimensions of q {tuple(q.shape[:-2])}, k {tuple(k.shape[:-2])} "
            f"and v {tuple(v.shape[:-2])} do not broadcast"
        ) from None


def dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ · scale + mask) v, returning the output and the weights.

    Args:
        q: ``(..., L, Dk)`` queries.
        k: ``(..., S, Dk)`` keys.
        v: ``(..., S, Dv)`` values.
        attn_mask: optional, broadcastable to ``(..., L, S)``: boolean (True = may attend) or
            float (added to the scores).
        valid_lens: optional integer ``(B,)`` or ``(B, L)``: keys past the length are padding.
        is_causal: hide keys j > i (top-left aligned, as ``F.scaled_dot_product_attention``).
            Combined with ``attn_mask`` (both hide), where SDPA refuses the pair; a float mask
            of another float dtype is also accepted, which SDPA rejects.
        scale: multiplies the scores; ``None`` means ``1/sqrt(Dk)``; any number is used as given
            (``scale=1.0`` is the unscaled dot product).
        dropout_p: dropout probability applied to the weights before they mix the values.

    Returns:
        ``(out, weights)``: ``out (..., L, Dv)``; ``weights (..., L, S)`` (before dropout).
        A query that sees no key gets zero weights and a zero output.

    Raises:
        ValueError: an empty key set (S = 0), naming the shapes; and the other shape checks.

    NaN inputs are not hidden or repaired (see :func:`masked_softmax`): a NaN in a visible
    score makes that query's weights and output all NaN; a NaN in ``v`` reaches every query's
    output, even where its weight is 0 (``0 · NaN = NaN``).
    """
    dropout_p = check_probability("dropout_p", dropout_p)
    scale, mask, may_be_empty = check_attention_call(
        q, k, v, attn_mask, valid_lens, is_causal, scale
    )
    return _attention(q, k, v, mask, scale, dropout_p, rows_may_be_empty=may_be_empty)


def check_attention_call(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None,
    valid_lens: torch.Tensor | None,
    is_causal: bool,
    scale: float | None,
    *,
    batch: tuple[int, ...] | None = None,
    fold_causal: bool = True,
) -> tuple[float, torch.Tensor | None, bool]:
    """The one prologue of the q/k/v attention functions (:func:`dot_product_attention`,
    :func:`~attnlib.core.blockwise.blockwise_attention` and its steps): check q, k, v, ``scale``
    and ``is_causal``, then fold the masking arguments into one mask for the scores
    ``(*batch, L, S)`` (``batch``: the broadcast of q's and k's batch dimensions unless given).

    ``fold_causal=False`` leaves ``is_causal`` out of the mask, for a caller that builds the
    causal part itself (the blockwise loop, block by block).

    Returns:
        ``(scale as a number, mask or None, rows_may_be_empty)`` (see
        :func:`attnlib.core.masks.checked_attention_mask`).
    """
    check_qkv(q, k, v)
    scale = checked_scale(scale, q.shape[-1])
    check_bool("is_causal", is_causal)
    if batch is None:
        batch = tuple(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]))
    shape = (*batch, q.shape[-2], k.shape[-2])
    causal = is_causal and fold_causal
    mask, may_be_empty = checked_attention_mask(shape, q.device, attn_mask, valid_lens, causal)
    return scale, mask, may_be_empty


def _attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    dropout_p: float = 0.0,
    *,
    rows_may_be_empty: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`dot_product_attention` unchecked, with the masks folded into one (see
    :func:`attnlib.core.masks.checked_attention_mask`) and ``scale`` a number."""
    # Half precision: accumulate scores in float32 so large logits stay finite and exact enough.
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    scores = scaled_scores(q.to(work), k.to(work), scale)  # (..., L, S)
    weights = _masked_softmax(scores, mask, rows_may_be_empty=rows_may_be_empty)  # (..., L, S)
    mixing = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    out = mixing @ v.to(work)  # (..., L, Dv)
    return out.to(q.dtype), weights.to(q.dtype)
