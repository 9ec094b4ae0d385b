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

Under autograd the saving would be lost if PyTorch differentiated the loop: it would keep every
block's exponentials for the backward pass, (L, S) numbers in all. :func:`blockwise_attention`
is therefore a ``torch.autograd.Function`` with its own backward pass, as in FlashAttention
(Dao et al. 2022): the forward saves only its inputs, the output and one log-sum-exp per query,
``lse = m + log(l)``, and the backward recomputes each block's scores and weights
``exp(s - lse)`` and accumulates the gradients block by block. (Rabe and Staats 2021 get the
same recomputation without writing a backward: they wrap the per-chunk function in gradient
checkpointing, ``jax.checkpoint``.) :func:`blockwise_attention_lse` returns what the forward
saves.

Padding lengths ``valid_lens``, ``(B,)`` or per query ``(B, L)``, are never turned into an
``(L, S)`` mask: each tile builds its ``(tile, block)`` part from the lengths, so they cost
``B·L`` integers. A full ``attn_mask`` is the caller's own ``(L, S)`` tensor; it is read one
slice at a time, and if it is a float mask that requires a gradient, that gradient is ``(L, S)``
too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnlib.core.attention import check_attention_call, check_qkv
from attnlib.core.scoring import scaled_scores
from attnlib.util._checks import check_positive_int, check_valid_lens

__all__ = [
    "BlockwiseStep",
    "OnlineSoftmaxTrace",
    "blockwise_attention",
    "blockwise_attention_lse",
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
    # A plain function that returns the generator, so bad arguments raise at the call, not at
    # the first next() (possibly far away).
    scale, attn_mask, lens = _prepare(q, k, v, block_size, attn_mask, valid_lens, is_causal, scale)
    return _online_blocks(
        q,
        k,
        v,
        block_size=block_size,
        is_causal=is_causal,
        attn_mask=attn_mask,
        scale=scale,
        lens=lens,
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


def _mask_index(mask: torch.Tensor, rows: slice, keys: slice) -> tuple:
    """Index of the part of ``mask`` that covers query ``rows`` and ``keys``: a size-1 (broadcast)
    query or key axis is kept whole (slicing it would leave an empty axis)."""
    r = rows if mask.dim() >= 2 and mask.shape[-2] != 1 else slice(None)
    c = keys if mask.shape[-1] != 1 else slice(None)
    return (..., r, c) if mask.dim() >= 2 else (..., c)


def _tiles(num_queries: int, num_keys: int, block_size: int, is_causal: bool):
    """The query tiles ``(rows, key_stop)``; causal: keys past a tile's last query are hidden
    from all of its rows, so its key loop stops there."""
    tile = query_tile(block_size)
    for row in range(0, num_queries, tile):
        rows = slice(row, min(row + tile, num_queries))
        yield rows, (min(num_keys, rows.stop) if is_causal else num_keys)


def _forward(q, k, v, mask, lens, scale, is_causal, block_size, with_lse=True):
    """The online softmax over query tiles: ``(out (..., L, Dv) in q's dtype, lse (..., L))``.

    ``lse = m + log(l)`` is each query's log-sum-exp of its visible scores, ``+inf`` for a query
    that sees no key (so that the backward's ``exp(s - lse)`` gives 0 there, not NaN); ``None``
    when ``with_lse`` is False (inference: nothing will need it).
    """
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    out = q.new_zeros((*lead, num_queries, v.shape[-1]))  # (..., L, Dv)
    lse = (
        torch.full((*lead, num_queries), float("inf"), dtype=work, device=q.device)  # (..., L)
        if with_lse
        else None
    )
    for rows, key_stop in _tiles(num_queries, num_keys, block_size, is_causal):
        last = None
        for last in _online_blocks(  # noqa: B007  (only the last state is kept)
            q[..., rows, :],
            k[..., :key_stop, :],
            v[..., :key_stop, :],
            block_size=block_size,
            is_causal=is_causal,
            attn_mask=mask,
            scale=scale,
            lens=lens,
            query_offset=rows.start,
        ):
            pass
        if last is not None:
            out[..., rows, :] = last.output.to(q.dtype)
        if last is not None and lse is not None:
            seen = last.running_sum > 0  # (..., tile): the query sees at least one key
            lse[..., rows] = torch.where(
                seen, last.running_max + torch.log(last.running_sum), float("inf")
            )
    return out, lse


def _backward(
    q, k, v, mask, lens, out, lse, grad_out, scale, is_causal, block_size, need_mask_grad
):
    """Gradients of blockwise attention, each block's weights recomputed from ``lse``.

    With ``p = exp(s - lse)`` (the weights of the block) and ``D = rowsum(dO * O)``:
    ``dV += pᵀ dO``, ``dP = dO Vᵀ``, ``dS = p * (dP - D)``, ``dQ += dS K · scale``,
    ``dK += dSᵀ Q · scale`` and, for a float mask, ``dmask += dS``. Only one
    ``(tile, block)`` slice of each of s, p, dP, dS exists at a time.
    """
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    work = lse.dtype
    grad_out = grad_out.to(work)
    dq = torch.zeros((*lead, num_queries, q.shape[-1]), dtype=work, device=q.device)
    dk = torch.zeros((*lead, num_keys, k.shape[-1]), dtype=work, device=q.device)
    dv = torch.zeros((*lead, num_keys, v.shape[-1]), dtype=work, device=q.device)
    dmask = torch.zeros(mask.shape, dtype=work, device=q.device) if need_mask_grad else None
    for rows, key_stop in _tiles(num_queries, num_keys, block_size, is_causal):
        qs = q[..., rows, :].to(work) * scale  # (..., tile, Dk), scaled as in the forward
        go = grad_out[..., rows, :]  # (..., tile, Dv)
        # D_i = dO_i · O_i, one tile at a time (a whole-sequence product would be a temporary
        # as large as the output)
        delta = (go * out[..., rows, :].to(work)).sum(dim=-1, keepdim=True)  # (..., tile, 1)
        for start in range(0, key_stop, block_size):
            keys = slice(start, min(start + block_size, key_stop))
            kb, vb = k[..., keys, :].to(work), v[..., keys, :].to(work)  # (..., blk, D)
            s = scaled_scores(qs, kb, 1.0)  # (..., tile, blk): the forward's scores again
            hidden, added = _tile_hidden(mask, lens, is_causal, rows, keys, q.device)
            if added is not None:
                s = s + added.to(work)
            if hidden is not None:
                s = s.masked_fill(hidden, float("-inf"))
            p = torch.exp(s - lse[..., rows].unsqueeze(-1))  # (..., tile, blk): the weights
            dv[..., keys, :] += p.transpose(-2, -1) @ go  # (..., blk, Dv)
            dp = go @ vb.transpose(-2, -1)  # (..., tile, blk)
            ds = p * (dp - delta)  # (..., tile, blk): d loss / d s
            dq[..., rows, :] += ds @ kb * scale  # (..., tile, Dk)
            dk[..., keys, :] += ds.transpose(-2, -1) @ qs  # (..., blk, Dk)
            if dmask is not None:
                part = dmask[_mask_index(mask, rows, keys)]
                part += ds.sum_to_size(part.shape)  # a view of dmask: reduced over broadcasting
    return dq, dk, dv, dmask


class _BlockwiseAttention(torch.autograd.Function):
    """Blockwise attention whose backward recomputes the blocks instead of storing them."""

    @staticmethod
    def forward(ctx, q, k, v, mask, lens, scale, is_causal, block_size):
        out, lse = _forward(q, k, v, mask, lens, scale, is_causal, block_size)
        # Saved: the inputs (which exist anyway), the output and one number per query.
        ctx.save_for_backward(q, k, v, mask, lens, out, lse)
        ctx.args = (scale, is_causal, block_size)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, grad_out, _grad_lse):
        if torch.is_grad_enabled():  # create_graph=True: a gradient of the gradient is asked for
            raise RuntimeError(
                "blockwise_attention's backward pass cannot be differentiated again (it was "
                "called with create_graph=True, e.g. for a double backward); use "
                "attnlib.dot_product_attention for higher derivatives"
            )
        q, k, v, mask, lens, out, lse = ctx.saved_tensors
        scale, is_causal, block_size = ctx.args
        need_mask_grad = mask is not None and ctx.needs_input_grad[3]
        if grad_out is None:
            return None, None, None, None, None, None, None, None
        dq, dk, dv, dmask = _backward(
            q, k, v, mask, lens, out, lse, grad_out, scale, is_causal, block_size, need_mask_grad
        )
        grads = [
            g.sum_to_size(t.shape).to(t.dtype) if need else None  # undo q/k/v broadcasting
            for g, t, need in zip((dq, dk, dv), (q, k, v), ctx.needs_input_grad[:3])
        ]
        mask_grad = dmask.to(mask.dtype) if need_mask_grad else None
        return (*grads, mask_grad, None, None, None, None)


def blockwise_attention_lse(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int = 128,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`blockwise_attention` and the row statistic its backward needs.

    Args: as :func:`blockwise_attention`.

    Returns:
        ``(out, lse)``: the ``(..., L, Dv)`` output (differentiable, as
        :func:`blockwise_attention`) and the ``(..., L)`` log-sum-exp ``m + log(l)`` of each
        query's visible scores (``+inf`` for a query that sees no key; float32 for half inputs),
        the only numbers besides the inputs and the output that the backward pass keeps.
    """
    scale, attn_mask, lens = _prepare(q, k, v, block_size, attn_mask, valid_lens, is_causal, scale)
    return _BlockwiseAttention.apply(q, k, v, attn_mask, lens, scale, is_causal, block_size)


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
    same masking arguments) without ever forming the ``(L, S)`` score matrix, in the forward and
    in the backward pass. The queries are processed in tiles of ``max(block_size, 256)`` rows
    (so a tile's scores stay in the CPU cache), each tile running over the key blocks; with
    ``is_causal`` the blocks entirely in a tile's future are skipped. Extra memory: the output
    plus a few ``(tile, block_size)`` score blocks, linear in the sequence length. Under
    autograd only the inputs, the output and one log-sum-exp per query are saved, and the
    backward recomputes each block (FlashAttention's recomputation), so training memory stays
    linear too, with ``is_causal`` and with ``valid_lens`` of either shape (each tile's part of
    the padding mask is built from the lengths). The one ``(L, S)`` exception is the caller's
    own: a full float ``attn_mask`` that requires a gradient gets an ``(L, S)`` gradient. The
    weights are never formed, so none are returned; there is no dropout.

    Args:
        q: ``(..., L, Dk)``.
        k: ``(..., S, Dk)``, S >= 1.
        v: ``(..., S, Dv)``.
        attn_mask: optional, broadcastable to ``(..., L, S)``: boolean (True = may attend) or
            float (added to the scores; it may require a gradient). A broadcast (expanded) mask
            costs no memory.
        valid_lens: optional integer ``(B,)`` or ``(B, L)``: keys past the length are padding
            (never expanded to an ``(L, S)`` mask).
        is_causal: hide keys j > i (top-left aligned, as ``F.scaled_dot_product_attention``).
        scale: multiplies the scores; ``None`` means ``1/sqrt(Dk)``.
        block_size: keys per block (>= 1).

    Returns:
        ``(..., L, Dv)`` in q's dtype; a query that sees no key gets a zero output (and zero
        gradients).
    """
    scale, attn_mask, lens = _prepare(q, k, v, block_size, attn_mask, valid_lens, is_causal, scale)
    inputs = (q, k, v) if attn_mask is None else (q, k, v, attn_mask)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in inputs)):
        # Nothing will call the backward: skip the log-sum-exp it would need (and the graph).
        out, _ = _forward(q, k, v, attn_mask, lens, scale, is_causal, block_size, with_lse=False)
        return out
    out, _ = _BlockwiseAttention.apply(q, k, v, attn_mask, lens, scale, is_causal, block_size)
    return out
