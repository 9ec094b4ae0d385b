"""Masked softmax and its Jacobian."""

from __future__ import annotations

import torch

from attnlib.core.masks import padding_mask
from attnlib.util._checks import check_has_keys, check_mask, check_tensor, check_valid_lens

__all__ = ["masked_softmax", "softmax_jacobian", "valid_lens_mask"]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def valid_lens_mask(valid_lens: torch.Tensor, scores_shape: torch.Size) -> torch.Tensor:
    """Turn ``valid_lens`` into a boolean mask that broadcasts to ``scores_shape``
    ``(B, ..., L, S)``.

    ``(B,)`` lengths give ``(B, 1, ..., 1, S)``; ``(B, L)`` lengths give ``(B, 1, ..., L, S)``.
    """
    *batch, num_queries, num_keys = scores_shape
    mask = padding_mask(valid_lens, num_keys)  # (B, S) or (B, L, S)
    if valid_lens.dim() == 1:
        mask = mask.unsqueeze(-2)  # (B, 1, S)
    middle = len(batch) - 1  # axes between B and L, e.g. heads
    return mask.reshape(mask.shape[0], *([1] * middle), *mask.shape[1:])


def masked_softmax(
    scores: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Softmax over the last axis that hides masked positions.

    Hidden positions get weight exactly 0, and a row with nothing visible gets all-zero weights
    (not NaN, not a uniform row), in every float dtype. The row max is subtracted first, so
    logits of any size are safe; float16/bfloat16 inputs are computed in float32 and cast back.
    The input is never modified.

    Args:
        scores: ``(..., L, S)`` floating-point logits.
        attn_mask: optional mask broadcastable to ``(..., L, S)``: boolean (True = may attend)
            or floating (added to the scores; ``-inf`` hides).
        valid_lens: optional integer ``(B,)`` or ``(B, L)``: keys at positions ``>= valid_len``
            are hidden (scores must then be ``(B, ..., L, S)``).

    Returns:
        Weights ``(..., L, S)`` of the scores' dtype; visible entries of each row sum to 1,
        fully hidden rows are 0.

    Raises:
        ValueError: ``scores`` with an empty last axis (S = 0: there is no key to weight).

    NaN: a NaN score at a position a *boolean* mask or ``valid_lens`` hides is ignored; a NaN
    score anywhere else (or under a float mask, since ``NaN + (-inf)`` is NaN) makes its whole
    row NaN. NaNs are never replaced by zeros, so bad inputs show up instead of vanishing.
    """
    check_tensor("scores", scores, ndim_min=1)
    check_has_keys("scores", scores, dim=-1)
    shape = scores.shape
    visible = None
    z = scores.float() if scores.dtype in _LOW_PRECISION else scores
    if attn_mask is not None:
        check_mask("attn_mask", attn_mask, shape, scores.device)
        if attn_mask.dtype == torch.bool:
            visible = attn_mask
        else:
            z = z + attn_mask.to(z.dtype)  # a new tensor: the input is untouched
    if valid_lens is not None:
        if scores.dim() < 2:
            raise ValueError(f"valid_lens needs scores of shape (B, ..., L, S), got {tuple(shape)}")
        check_valid_lens(valid_lens, tuple(shape[:-2]), shape[-2], shape[-1], scores.device)
        lens_visible = valid_lens_mask(valid_lens, shape)
        visible = lens_visible if visible is None else visible & lens_visible
    if visible is not None:
        z = z.masked_fill(~visible, float("-inf"))
    row_max = z.detach().amax(dim=-1, keepdim=True)  # (..., L, 1)
    # A fully hidden row has max -inf; shift it by 0 so exp gives zeros instead of NaN.
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(z - row_max)  # hidden entries are exp(-inf) = 0
    total = e.sum(dim=-1, keepdim=True)
    weights = e / total.clamp_min(torch.finfo(e.dtype).tiny)  # 0 / tiny = 0 for empty rows
    return weights.to(scores.dtype)


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """Jacobian of a softmax row with respect to its logits, from the weights a.

    ``J[j, r] = d a_j / d z_r = a_j (delta_jr - a_r)``, i.e. ``J = diag(a) - a a^T``.

    Args:
        weights: ``(..., n)`` softmax outputs.

    Returns:
        ``(..., n, n)``, symmetric; each row (and column) sums to 0.
    """
    check_tensor("weights", weights, ndim_min=1)
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)
