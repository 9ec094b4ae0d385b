"""Masked softmax and its Jacobian."""

from __future__ import annotations

from typing import NamedTuple

import torch

from attnlib.core.masks import checked_attention_mask, valid_lens_mask
from attnlib.util._checks import check_has_keys, check_tensor

__all__ = [
    "MaskedSoftmaxSteps",
    "masked_softmax",
    "masked_softmax_steps",
    "softmax_jacobian",
    "valid_lens_mask",
]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def masked_softmax(
    scores: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Softmax over the last axis that hides masked positions.

    Hidden positions get weight exactly 0, and a row with nothing visible gets all-zero weights
    (not NaN, not a uniform row), in every float dtype. The row max is subtracted first, so
    any finite logits are safe (a +inf logit gives a NaN row, as torch.softmax); float16 and
    bfloat16 inputs are computed in float32 and cast back.
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
    return _masked_softmax(scores, _checked_scores_mask(scores, attn_mask, valid_lens))


def _checked_scores_mask(scores, attn_mask, valid_lens) -> torch.Tensor | None:
    """The checks of :func:`masked_softmax` and its mask folded into one (None, bool or float)."""
    check_tensor("scores", scores, ndim_min=1)
    check_has_keys("scores", scores, dim=-1)
    if valid_lens is not None and scores.dim() < 2:
        raise ValueError(
            f"valid_lens needs scores of shape (B, ..., L, S), got {tuple(scores.shape)}"
        )
    mask, _ = checked_attention_mask(scores.shape, scores.device, attn_mask, valid_lens)
    return mask


def _masked_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None = None, *, rows_may_be_empty: bool = True
) -> torch.Tensor:
    """:func:`masked_softmax` with the mask already checked and folded into one (None, boolean
    or float); unchecked. ``rows_may_be_empty=False`` is the caller's promise that every row has
    a visible key (no user mask, lengths >= 1): then no guard against 0 / 0 is needed.
    """
    z = _hide(scores, mask)
    if not rows_may_be_empty:
        return torch.softmax(z, dim=-1).to(scores.dtype)  # subtracts the row max first
    return _guarded_softmax(z)[3].to(scores.dtype)


def _hide(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The scores (float16/bfloat16 in float32) with the hidden entries -inf, or the float mask
    added; a new tensor: the input is untouched."""
    z = scores.float() if scores.dtype in _LOW_PRECISION else scores
    if mask is not None:
        if mask.dtype == torch.bool:
            z = z.masked_fill(~mask, float("-inf"))
        else:
            z = z + mask.to(z.dtype)
    return z


def _guarded_softmax(z: torch.Tensor):
    """softmax over the last axis where a fully hidden row gives 0s, not 0 / 0 = NaN: such a row
    (max -inf) gets the scores 0 (finite, so no NaN reaches the gradient either), then zero
    weights. Returns ``(empty, guarded, softmax, weights)``, which ``masked_softmax_steps`` shows.
    """
    empty = torch.isneginf(z.detach().amax(dim=-1, keepdim=True))  # (..., L, 1)
    guarded = z.masked_fill(empty, 0.0)  # (..., L, S)
    plain = torch.softmax(guarded, dim=-1)  # (..., L, S)
    return empty, guarded, plain, plain.masked_fill(empty, 0.0)


class MaskedSoftmaxSteps(NamedTuple):
    """The intermediate tensors of :func:`masked_softmax`, as :func:`masked_softmax_steps` returns.

    Attributes:
        hidden: ``(..., L, S)`` the scores with every hidden entry ``-inf`` (float16/bfloat16
            scores already in float32).
        empty: ``(..., L, 1)`` boolean, True for a row whose maximum is ``-inf`` (nothing visible).
        guarded: ``(..., L, S)`` ``hidden`` with every score of an empty row set to 0.
        softmax: ``(..., L, S)`` the plain ``torch.softmax`` of ``guarded`` (uniform on empty rows).
        weights: ``(..., L, S)`` ``softmax`` with the empty rows set to 0, in the scores' dtype:
            exactly what :func:`masked_softmax` returns.
    """

    hidden: torch.Tensor
    empty: torch.Tensor
    guarded: torch.Tensor
    softmax: torch.Tensor
    weights: torch.Tensor


def masked_softmax_steps(
    scores: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
) -> MaskedSoftmaxSteps:
    """:func:`masked_softmax` one step at a time, for teaching: the same arguments and checks, and
    the same functions (``_hide``, ``_guarded_softmax``), so ``steps.weights`` equals
    ``masked_softmax(...)`` bit for bit (the unit tests check it).

    Args:
        scores, attn_mask, valid_lens: as for :func:`masked_softmax`.

    Returns:
        A :class:`MaskedSoftmaxSteps`.
    """
    z = _hide(scores, _checked_scores_mask(scores, attn_mask, valid_lens))
    empty, guarded, plain, weights = _guarded_softmax(z)
    return MaskedSoftmaxSteps(z, empty, guarded, plain, weights.to(scores.dtype))


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
