"""Blockwise attention with an online softmax: exact, without the (L, S) score matrix.

The keys and values are read in blocks of ``block_size``. For every query we keep three
running quantities over the blocks seen so far:

- ``m``: the running maximum score,
- ``l``: the running sum of ``exp(score - m)``,
- ``acc``: the running sum of ``exp(score - m) * value``.

When a new block raises the maximum from m to m', the old sums are rescaled by
``exp(m - m')``, so at the end ``acc / l`` is exactly ``softmax(scores) @ V``. At most an
``(..., L, block_size)`` slice of scores exists at any time (:func:`blockwise_attention`
also cuts the queries into tiles), so the extra memory grows linearly in the sequence
length instead of quadratically.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnlib.core.attention import check_attention_call
from attnlib.core.scoring import scaled_scores
from attnlib.util._checks import check_positive_int

__all__ = [
    "BlockwiseStep",
    "OnlineSoftmaxTrace",
    "blockwise_attention",
    "blockwise_attention_steps",
    "online_softmax_trace",
    "query_tile",
]

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
    """Check the inputs; return the scale as a number and one mask with valid_lens folded in."""
    check_positive_int("block_size", block_size)
    # The mask covers v's batch dimensions too (the output's), and leaves is_causal out: the
    # blocks build their causal part themselves.
    batch = tuple(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]))
    scale, mask, _ = check_attention_call(
        q, k, v, attn_mask, valid_lens, is_causal, scale, batch=batch, fold_causal=False
    )
    return scale, mask


def _online_blocks(
    q, k, v, *, block_size, is_causal, attn_mask, scale, query_offset=0
) -> Iterator[BlockwiseStep]:
    """The online softmax of queries ``q`` (rows ``query_offset ..``) over key blocks.

    ``scale`` is already a number and the inputs are checked. Written out of place, as in the
    module docstring: each step's tensors are new, so the steps can be kept in a list.
    """
    # Half precision: keep the running statistics in float32 so the sums stay accurate.
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    qs = q.to(work) * scale  # (..., L, Dk): scale the queries once instead of every block
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    m = torch.full((*lead, num_queries), float("-inf"), dtype=work, device=q.device)  # (..., L)
    l = torch.zeros((*lead, num_queries), dtype=work, device=q.device)  # (..., L)
    acc = torch.zeros((*lead, num_queries, v.shape[-1]), dtype=work, device=q.device)
    rows = query_offset + torch.arange(num_queries, device=q.device).unsqueeze(-1)  # (L, 1)
    for block, start in enumerate(range(0, num_keys, block_size)):
        stop = min(start + block_size, num_keys)
        # (..., L, s), never (L, S): q kᵀ · scale, with the scale already in qs
        s = scaled_scores(qs, k[..., start:stop, :].to(work), 1.0)
        hidden = None
        if attn_mask is not None:
            mb = attn_mask[..., start:stop]
            if mb.dtype == torch.bool:
                hidden = ~mb
            else:
                s = s + mb.to(work)
        if is_causal:
            future = torch.arange(start, stop, device=q.device) > rows  # (L, s): j > i
            hidden = future if hidden is None else hidden | future
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


def blockwise_attention_steps(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int = 128,
) -> Iterator[BlockwiseStep]:
    """Run blockwise attention one key block at a time, yielding the online-softmax state.

    Use it to watch the running maximum and running sum of every query change block by block;
    the last step's ``output`` equals :func:`blockwise_attention`.

    Args: as :func:`blockwise_attention`.

    Yields:
        A :class:`BlockwiseStep` after each block of keys. The tensors of a step are not
        modified by later steps, so steps can be collected in a list.
    """
    scale, attn_mask = _prepare(q, k, v, block_size, attn_mask, valid_lens, is_causal, scale)
    yield from _online_blocks(
        q, k, v, block_size=block_size, is_causal=is_causal, attn_mask=attn_mask, scale=scale
    )


@dataclass(frozen=True)
class OnlineSoftmaxTrace:
    """The running statistics of blockwise attention after every block, stacked (N blocks)."""

    block_end: torch.Tensor  # (N,) keys seen after each block
    running_max: torch.Tensor  # (N, ..., L) running max per query after each block
    running_sum: torch.Tensor  # (N, ..., L) running sum per query after each block
    output: torch.Tensor  # (..., L, Dv) the output after the last block


def online_softmax_trace(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, block_size: int, is_causal: bool = False
) -> OnlineSoftmaxTrace:
    """The online-softmax state of :func:`blockwise_attention_steps` after every block, stacked.

    Args:
        q: ``(..., L, Dk)`` queries; k: ``(..., S, Dk)`` keys; v: ``(..., S, Dv)`` values.
        block_size: keys per block.
        is_causal: hide keys j > i.

    Returns:
        An :class:`OnlineSoftmaxTrace`.
    """
    steps = list(blockwise_attention_steps(q, k, v, block_size=block_size, is_causal=is_causal))
    return OnlineSoftmaxTrace(
        block_end=torch.tensor([s.key_stop for s in steps]),  # (N,)
        running_max=torch.stack([s.running_max for s in steps]),  # (N, ..., L)
        running_sum=torch.stack([s.running_sum for s in steps]),  # (N, ..., L)
        output=steps[-1].output,  # (..., L, Dv)
    )


def blockwise_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int = 128,
) -> torch.Tensor:
    """softmax(q kᵀ · scale + mask) v computed over key blocks with an online softmax.

    Gives the same output as full attention (:func:`attnlib.dot_product_attention`, with the
    same masking arguments) without ever forming the ``(L, S)`` score matrix. The queries are
    processed in tiles of ``max(block_size, 256)`` rows (so a tile's scores stay in the CPU
    cache), each tile running over the key blocks; with ``is_causal`` the blocks entirely in a
    tile's future are skipped. Extra memory: the output plus a few ``(tile, block_size)`` score
    blocks, linear in the sequence length. The weights are never formed, so none are returned.

    Args:
        q: ``(..., L, Dk)``.
        k: ``(..., S, Dk)``, S >= 1.
        v: ``(..., S, Dv)``.
        attn_mask: optional, broadcastable to ``(..., L, S)``: boolean (True = may attend) or
            float (added to the scores). A broadcast (expanded) mask costs no memory.
        valid_lens: optional integer ``(B,)`` or ``(B, L)``: keys past the length are padding.
        is_causal: hide keys j > i (top-left aligned, as ``F.scaled_dot_product_attention``).
        scale: multiplies the scores; ``None`` means ``1/sqrt(Dk)``.
        block_size: keys per block (>= 1).

    Returns:
        ``(..., L, Dv)`` in q's dtype; a query that sees no key gets a zero output.
    """
    scale, attn_mask = _prepare(q, k, v, block_size, attn_mask, valid_lens, is_causal, scale)
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = q.new_zeros((*lead, num_queries, v.shape[-1]))  # (..., L, Dv)
    tile = query_tile(block_size)
    for row in range(0, num_queries, tile):
        rows = slice(row, min(row + tile, num_queries))
        # Causal: keys past the tile's last query are hidden from all of its rows.
        key_stop = min(num_keys, rows.stop) if is_causal else num_keys
        mask = attn_mask
        if mask is not None:
            if mask.dim() >= 2 and mask.shape[-2] != 1:
                mask = mask[..., rows, :]
            mask = mask[..., :key_stop]
        last = None
        for last in _online_blocks(  # noqa: B007  (only the last state is kept)
            q[..., rows, :],
            k[..., :key_stop, :],
            v[..., :key_stop, :],
            block_size=block_size,
            is_causal=is_causal,
            attn_mask=mask,
            scale=scale,
            query_offset=row,
        ):
            pass
        if last is not None:
            out[..., rows, :] = last.output.to(q.dtype)
    return out
