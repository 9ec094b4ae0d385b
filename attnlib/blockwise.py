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

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ._checks import check_mask, check_positive_int, check_scale
from .attention import check_qkv

__all__ = ["BlockwiseStep", "blockwise_attention", "blockwise_attention_steps"]

_QUERY_TILE = 256  # query rows per tile in blockwise_attention (8 heads x 256 x 128 fits L2)


@dataclass
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
        return torch.where(denom > 0, self.numerator / denom.clamp_min(torch.finfo(
            denom.dtype).tiny), torch.zeros_like(self.numerator))


def _prepare(q, k, v, block_size, attn_mask, scale) -> float:
    check_qkv(q, k, v)
    check_positive_int("block_size", block_size)
    check_scale(scale)
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if attn_mask is not None:
        check_mask("attn_mask", attn_mask, (*lead, q.shape[-2], k.shape[-2]), q.device)
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _online_blocks(q, k, v, *, block_size, is_causal, attn_mask, scale, keep_states,
                   query_offset=0) -> Iterator[BlockwiseStep]:
    """The online softmax of queries ``q`` (rows ``query_offset ..``) over key blocks.

    ``scale`` is already a number and the inputs are checked. ``keep_states=False`` lets it
    update its running sums in place (each yielded step is then overwritten by the next).
    """
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    # Half precision: keep the running statistics in float32 so the sums stay accurate.
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    qs = q.to(work) * scale  # (..., L, Dk): scale once instead of once per block
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    m = torch.full((*lead, num_queries), float("-inf"), dtype=work, device=q.device)  # (..., L)
    l = torch.zeros((*lead, num_queries), dtype=work, device=q.device)  # (..., L)
    acc = torch.zeros((*lead, num_queries, v.shape[-1]), dtype=work, device=q.device)
    rows = query_offset + torch.arange(num_queries, device=q.device).unsqueeze(-1)  # (L, 1)
    inplace = not (torch.is_grad_enabled() and any(
        t.requires_grad for t in (q, k, v, attn_mask) if isinstance(t, torch.Tensor)))
    for block, start in enumerate(range(0, num_keys, block_size)):
        stop = min(start + block_size, num_keys)
        kb = k[..., start:stop, :].to(work)  # (..., s, Dk)
        vb = v[..., start:stop, :].to(work)  # (..., s, Dv)
        # One block of scores, never (L, S). Without autograd it is a temporary nobody else
        # sees, so the masking and the exponential work in place: fewer (L, s) copies alive.
        s = qs @ kb.transpose(-2, -1)  # (..., L, s)
        hidden = None
        if attn_mask is not None:
            mb = attn_mask[..., start:stop]
            if mb.dtype == torch.bool:
                hidden = ~mb
            else:
                s = s + mb.to(work)  # broadcasting may enlarge s: not in place
        if is_causal:
            future = torch.arange(start, stop, device=q.device) > rows  # (L, s): j > i
            hidden = future if hidden is None else hidden | future
        if hidden is not None:
            if inplace and torch.broadcast_shapes(hidden.shape, s.shape) == s.shape:
                s = s.masked_fill_(hidden, float("-inf"))
            else:  # a mask with more batch axes than q and k: the result is larger
                s = s.masked_fill(hidden, float("-inf"))
        # The max only keeps exp() in range; the output does not depend on it, so it carries
        # no gradient (detached).
        m_new = torch.maximum(m, s.detach().amax(dim=-1))  # (..., L)
        if attn_mask is None:
            # Without a mask every row sees a key in its first block (causal rows see key 0),
            # so the running max is finite from the first block on.
            shift = m_new
        else:
            # Rows with nothing visible yet keep max -inf; shift them by 0: exp gives 0, not NaN.
            shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        if inplace and s.shape[:-1] == shift.shape:
            p = s.sub_(shift.unsqueeze(-1)).exp_()  # (..., L, s), exp(score - running max)
        else:
            p = torch.exp(s - shift.unsqueeze(-1))  # (..., L, s)
        correction = torch.exp(m - shift)  # (..., L): rescales the old sums to the new max
        if inplace and not keep_states and p.shape[:-2] == acc.shape[:-2]:
            # acc <- acc * correction + p @ vb, fused into one batched GEMM, no new tensors.
            l.mul_(correction).add_(p.sum(dim=-1))
            acc.mul_(correction.unsqueeze(-1))
            width = stop - start
            acc.view(-1, num_queries, acc.shape[-1]).baddbmm_(
                p.reshape(-1, num_queries, width),
                vb.expand(*lead, width, vb.shape[-1]).reshape(-1, width, vb.shape[-1]))
        else:
            l = l * correction + p.sum(dim=-1)
            acc = acc * correction.unsqueeze(-1) + p @ vb  # (..., L, Dv)
        m = m_new
        yield BlockwiseStep(block, start, stop, m, l, acc)


def blockwise_attention_steps(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                              block_size: int = 128, is_causal: bool = False,
                              attn_mask: torch.Tensor | None = None,
                              scale: float | None = None) -> Iterator[BlockwiseStep]:
    """Run blockwise attention one key block at a time, yielding the online-softmax state.

    Use it to watch the running maximum and running sum of every query change block by block;
    the last step's ``output`` equals :func:`blockwise_attention`.

    Args: as :func:`blockwise_attention`.

    Yields:
        A :class:`BlockwiseStep` after each block of keys. The tensors of a step are not
        modified by later steps, so steps can be collected in a list.
    """
    scale = _prepare(q, k, v, block_size, attn_mask, scale)
    yield from _online_blocks(q, k, v, block_size=block_size, is_causal=is_causal,
                              attn_mask=attn_mask, scale=scale, keep_states=True)


def blockwise_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                        block_size: int = 128, is_causal: bool = False,
                        attn_mask: torch.Tensor | None = None,
                        scale: float | None = None) -> torch.Tensor:
    """softmax(q kᵀ · scale + mask) v computed over key blocks with an online softmax.

    Gives the same output as full attention (:func:`attnlib.dot_product_attention`) without
    ever forming the ``(L, S)`` score matrix. The queries are processed in tiles of
    ``max(block_size, 256)`` rows (so a tile's scores stay in the CPU cache), each tile
    running over the key blocks; with ``is_causal`` the blocks entirely in a tile's future
    are skipped. Extra memory: the output plus a few ``(tile, block_size)`` score blocks,
    linear in the sequence length. The weights are never formed, so none are returned.

    Args:
        q: ``(..., L, Dk)``.
        k: ``(..., S, Dk)``.
        v: ``(..., S, Dv)``.
        block_size: keys per block (>= 1).
        is_causal: hide keys j > i (top-left aligned, as ``F.scaled_dot_product_attention``).
        attn_mask: optional, broadcastable to ``(..., L, S)``: boolean (True = may attend) or
            float (added to the scores). A broadcast (expanded) mask costs no memory.
        scale: multiplies the scores; ``None`` means ``1/sqrt(Dk)``.

    Returns:
        ``(..., L, Dv)`` in q's dtype; a query that sees no key gets a zero output.
    """
    scale = _prepare(q, k, v, block_size, attn_mask, scale)
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = q.new_zeros((*lead, num_queries, v.shape[-1]))  # (..., L, Dv)
    tile = max(block_size, _QUERY_TILE)
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
        for last in _online_blocks(q[..., rows, :], k[..., :key_stop, :], v[..., :key_stop, :],
                                   block_size=block_size, is_causal=is_causal, attn_mask=mask,
                                   scale=scale, keep_states=False, query_offset=row):
            pass
        if last is not None:  # no keys at all: the output stays zero
            out[..., rows, :] = last.output.to(q.dtype)
    return out
