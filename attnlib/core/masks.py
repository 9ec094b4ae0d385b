"""Boolean attention masks. One convention everywhere: True = "may attend"."""

from __future__ import annotations

import torch

from attnlib.util._checks import check_positive_int

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
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(f"valid_lens must be a torch.Tensor, got {type(valid_lens).__name__}")
    if valid_lens.is_floating_point() or valid_lens.is_complex() or valid_lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integers, got dtype {valid_lens.dtype}")
    if valid_lens.dim() not in (1, 2):
        raise ValueError(
            f"valid_lens must be 1-D (B,) or 2-D (B, L), got shape {tuple(valid_lens.shape)}"
        )
    if valid_lens.numel():
        lo, hi = int(valid_lens.min()), int(valid_lens.max())
        if lo < 0:
            raise ValueError(f"valid_lens must be >= 0, got {lo}")
        if hi > num_keys:
            raise ValueError(f"valid_lens must be <= num_keys={num_keys}, got {hi}")
    positions = torch.arange(num_keys, device=valid_lens.device)  # (S,)
    return positions < valid_lens.unsqueeze(-1)  # (B, S) or (B, L, S)


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
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril()  # (L, S)
