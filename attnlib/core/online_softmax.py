"""The online softmax that blockwise attention is built on, shared by its autograd Function
(:mod:`attnlib.core.blockwise_function`) and its teaching steps (:mod:`attnlib.core.blockwise`):
the argument checks, each tile's hidden keys, and the block-by-block running max, sum and output.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnlib.core.attention import check_attention_call, check_qkv
from attnlib.core.scoring import scaled_scores
from attnlib.util._checks import check_positive_int, check_valid_lens

__all__ = ["BlockwiseStep", "query_tile"]


_QUERY_TILE = 256  # query rows per tile in blockwise_attention (8 heads x 256 x 128 fits L2)


def query_tile(block_size: int) -> int:
    """Query rows per tile in :func:`blockwise_attention`: ``max(block_size, 256)``.

    Its largest score array is one ``(query_tile(block_size), block_size)`` slice (fewer rows or
    keys at the ends), whatever the sequence length.
    """
    check_positive_int("block_size", block_size)
    return max(block_size, _QUERY_TILE)


@dataclass(frozen=True)
class BlockwiseStep:
    """The online-softmax state after one key block (what notebook readers can inspect).

    Attributes:
        block: index of the block just processed.
        key_start, key_stop: the keys ``key_start:key_stop`` of that block.
        running_max: ``(..., L)`` maximum score seen so far per query (``-inf`` if none visible).
        running_sum: ``(..., L)`` sum of ``exp(score - running_max)`` so far.
        numerator: ``(..., L, Dv)`` sum of ``exp(score - running_max) * value`` so far.
    """

    block: int
    key_start: int
    key_stop: int
    running_max: torch.Tensor
    running_sum: torch.Tensor
    numerator: torch.Tensor

    @property
    def output(self) -> torch.Tensor:
        """``(..., L, Dv)`` attention output over the keys seen so far (0 where none visible)."""
        denom = self.running_sum.unsqueeze(-1)  # (..., L, 1)
        return torch.where(
            denom > 0,
            self.numerator / denom.clamp_min(torch.finfo(denom.dtype).tiny),
            torch.zeros_like(self.numerator),
        )


def _prepare(q, k, v, block_size, attn_mask, valid_lens, is_causal, scale):
    """Check the inputs; return ``(scale as a number, mask, lens)``.

    ``lens`` is ``valid_lens`` shaped to broadcast against the rows ``(*batch, L)``:
    ``(B, 1, ..., 1)`` for ``(B,)`` lengths, ``(B, 1, ..., L)`` for ``(B, L)`` ones (``None``
    without lengths). The lengths are not folded into the mask: :func:`_tile_hidden` builds each
    tile's part of the padding mask from them, so no ``(L, S)`` mask is ever made from them.
    """
    check_positive_int("block_size", block_size)
    check_qkv(q, k, v)  # before reading q.shape: a list must get a named error
    # The mask covers v's batch dimensions too (the output's), and leaves is_causal out: the
    # blocks build their causal part themselves.
    batch = tuple(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]))
    scale, mask, _ = check_attention_call(
        q, k, v, attn_mask, None, is_causal, scale, batch=batch, fold_causal=False
    )
    if valid_lens is None:
        return scale, mask, None
    # The same check (and messages) as checked_attention_mask, after the mask's, as there.
    check_valid_lens(valid_lens, batch, q.shape[-2], k.shape[-2], q.device)
    rows = valid_lens if valid_lens.dim() == 2 else valid_lens.unsqueeze(-1)  # (B, L) or (B, 1)
    middle = len(batch) - 1  # axes between B and L, e.g. heads
    return scale, mask, rows.reshape(rows.shape[0], *([1] * middle), rows.shape[-1])


def _mask_index(mask: torch.Tensor, rows: slice, keys: slice) -> tuple:
    """Index of the part of ``mask`` that covers query ``rows`` and ``keys``: a size-1 (broadcast)
    query or key axis is kept whole (slicing it would leave an empty axis)."""
    r = rows if mask.dim() >= 2 and mask.shape[-2] != 1 else slice(None)
    c = keys if mask.shape[-1] != 1 else slice(None)
    return (..., r, c) if mask.dim() >= 2 else (..., c)


def _tile_hidden(mask, lens, is_causal, rows: slice, keys: slice, device):
    """What the ``(tile, block)`` part of the scores must hide, and the float mask to add.

    Returns ``(hidden, added)``: ``hidden`` a boolean (broadcastable) or None, built from the
    boolean mask's slice, the lengths (keys at or past a row's length) and ``is_causal``
    (keys j > i); ``added`` the float mask's slice or None.
    """
    hidden, added = None, None
    if mask is not None:
        mb = mask[_mask_index(mask, rows, keys)]
        if mb.dtype == torch.bool:
            hidden = ~mb
        else:
            added = mb
    key_ids = torch.arange(keys.start, keys.stop, device=device)  # (blk,)
    if lens is not None:
        lr = lens if lens.shape[-1] == 1 else lens[..., rows]  # (B, 1.., tile or 1)
        padded = key_ids >= lr.unsqueeze(-1)  # (B, 1.., tile or 1, blk)
        hidden = padded if hidden is None else hidden | padded
    if is_causal:
        row_ids = torch.arange(rows.start, rows.stop, device=device).unsqueeze(-1)  # (tile, 1)
        future = key_ids > row_ids  # (tile, blk): j > i
        hidden = future if hidden is None else hidden | future
    return hidden, added


def _online_blocks(
    q, k, v, *, block_size, is_causal, attn_mask, scale, lens=None, query_offset=0
) -> Iterator[BlockwiseStep]:
    """The online softmax of queries ``q`` (rows ``query_offset ..``) over key blocks.

    ``scale`` is already a number and the inputs are checked; ``attn_mask`` and ``lens`` (as
    :func:`_prepare` returns them) cover the whole sequence, so rows and keys are indexed in it.
    Written out of place, as in the module docstring: each step's tensors are new, so the steps
    can be kept in a list.
    """
    # Half precision: keep the running statistics in float32 so the sums stay accurate.
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    qs = q.to(work) * scale  # (..., L, Dk): scale the queries once instead of every block
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    m = torch.full((*lead, num_queries), float("-inf"), dtype=work, device=q.device)  # (..., L)
    l = torch.zeros((*lead, num_queries), dtype=work, device=q.device)  # (..., L)
    acc = torch.zeros((*lead, num_queries, v.shape[-1]), dtype=work, device=q.device)
    rows = slice(query_offset, query_offset + num_queries)
    for block, start in enumerate(range(0, num_keys, block_size)):
        stop = min(start + block_size, num_keys)
        # (..., L, s), never (L, S): q kᵀ · scale, with the scale already in qs
        s = scaled_scores(qs, k[..., start:stop, :].to(work), 1.0)
        hidden, added = _tile_hidden(attn_mask, lens, is_causal, rows, slice(start, stop), q.device)
        if added is not None:
            s = s + added.to(work)
        if hidden is not None:
            s = s.masked_fill(hidden, float("-inf"))
        # The max only keeps exp() in range; the output does not depend on it (detached).
        m_new = torch.maximum(m, s.detach().amax(dim=-1))  # (..., L)
        # Rows with nothing visible yet keep max -inf; shift them by 0: exp gives 0, not NaN.
        shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))  # (..., L)
        p = torch.exp(s - shift.unsqueeze(-1))  # (..., L, s)
        correction = torch.exp(m - shift)  # (..., L): rescales the old sums to the new max
        l = l * correction + p.sum(dim=-1)  # (..., L)
        acc = acc * correction.unsqueeze(-1) + p @ v[..., start:stop, :].to(work)  # (..., L, Dv)
        m = m_new
        yield BlockwiseStep(block, start, stop, m, l, acc)
