"""Boolean attention masks. One convention everywhere: True = "may attend".

:func:`padding_mask` is the one place ``valid_lens`` becomes a mask; :func:`checked_attention_mask`
is the one place an attention call's ``attn_mask``, ``valid_lens`` and ``is_causal`` are checked
and folded into a single mask, so the math below it runs unchecked.
"""

from __future__ import annotations

import torch

from attnlib.util._checks import check_mask, check_positive_int, check_valid_lens
from attnlib.util.device import check_device

__all__ = ["padding_mask", "causal_mask"]


def padding_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """Mask that hides the padded keys past each valid length.

    Args:
        valid_lens: integer tensor, ``(B,)`` (one length per batch row) or ``(B, L)`` (one
            length per query). Each length lies in ``[0, num_keys]``.
        num_keys: S, the number of keys (padded length).

    Returns:
        Boolean ``(B, S)`` or ``(B, L, S)``; True = a real token that may be attended to.
    """
    check_positive_int("num_keys", num_keys)
    check_valid_lens(valid_lens, None, None, num_keys, None, keys="num_keys")
    return _padding_mask(valid_lens, num_keys)


def _padding_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """:func:`padding_mask` unchecked: ``arange(S) < valid_lens[..., None]``."""
    positions = torch.arange(num_keys, device=valid_lens.device)  # (S,)
    return positions < valid_lens.unsqueeze(-1)  # (B, S) or (B, L, S)


def valid_lens_mask(valid_lens: torch.Tensor, scores_shape: torch.Size | tuple) -> torch.Tensor:
    """:func:`padding_mask` shaped to broadcast to ``scores_shape`` ``(B, ..., L, S)``; unchecked
    (check ``valid_lens`` first with ``check_valid_lens``).

    ``(B,)`` lengths give ``(B, 1, ..., 1, S)``; ``(B, L)`` lengths give ``(B, 1, ..., L, S)``.
    """
    *batch, _, num_keys = scores_shape
    mask = _padding_mask(valid_lens, num_keys)  # (B, S) or (B, L, S)
    if valid_lens.dim() == 1:
        mask = mask.unsqueeze(-2)  # (B, 1, S)
    middle = len(batch) - 1  # axes between B and L, e.g. heads
    return mask.reshape(mask.shape[0], *([1] * middle), *mask.shape[1:])


def and_mask(mask: torch.Tensor | None, visible: torch.Tensor) -> torch.Tensor:
    """Also hide where the boolean ``visible`` is False: ``mask`` is None, boolean (True = may
    attend) or float (added to the scores; hidden entries become ``-inf``)."""
    if mask is None:
        return visible
    if mask.dtype == torch.bool:
        return mask & visible
    return mask.masked_fill(~visible, float("-inf"))


def checked_attention_mask(
    scores_shape: tuple,
    device: torch.device,
    attn_mask: torch.Tensor | None = None,
    valid_lens: torch.Tensor | None = None,
    is_causal: bool = False,
) -> tuple[torch.Tensor | None, bool]:
    """Check an attention call's masking arguments and fold them into one mask.

    Args:
        scores_shape: ``(..., L, S)``, the shape the mask must broadcast to.
        device: where the scores are.
        attn_mask, valid_lens, is_causal: as in :func:`attnlib.dot_product_attention`.

    Returns:
        ``(mask, rows_may_be_empty)``: the mask (None, boolean or float) and whether some query
        may see no key at all (a user mask, or a length of 0); without one, every row has a
        visible key and the softmax needs no guard against 0 / 0.
    """
    mask, may_be_empty = None, False
    if attn_mask is not None:
        mask = check_mask("attn_mask", attn_mask, scores_shape, device)
        may_be_empty = True
    if valid_lens is None and not is_causal:
        return mask, may_be_empty
    num_queries, num_keys = scores_shape[-2], scores_shape[-1]  # masked_softmax: scores >= 2-D
    if valid_lens is not None:
        lo, _ = check_valid_lens(
            valid_lens, tuple(scores_shape[:-2]), num_queries, num_keys, device
        )
        mask = and_mask(mask, valid_lens_mask(valid_lens, scores_shape))
        may_be_empty = may_be_empty or lo == 0
    if is_causal:  # query i sees key 0 at least, so no row becomes empty
        mask = and_mask(mask, _causal_mask(num_queries, num_keys, device))
    return mask, may_be_empty


def causal_mask(
    num_queries: int, num_keys: int | None = None, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Mask that lets query i see keys j <= i only (no peeking at the future).

    Aligned at the top-left like ``F.scaled_dot_product_attention(is_causal=True)``.

    Args:
        num_queries: L.
        num_keys: S (defaults to L).
        device: where to build the mask.

    Returns:
        Boolean ``(L, S)``; True where ``j <= i``.
    """
    check_positive_int("num_queries", num_queries)
    num_keys = num_queries if num_keys is None else check_positive_int("num_keys", num_keys)
    if device is not None:
        device = check_device("device", device)
    return _causal_mask(num_queries, num_keys, device)


def _causal_mask(num_queries: int, num_keys: int, device) -> torch.Tensor:
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril()  # (L, S)
