"""Blockwise attention as a ``torch.autograd.Function``: the forward saves only its inputs, the
output and one log-sum-exp per query; the backward recomputes each block's weights from them
(FlashAttention's recomputation; see :mod:`attnlib.core.blockwise`).
"""

from __future__ import annotations

import torch

from attnlib.core.online_softmax import _mask_index, _online_blocks, _tile_hidden, query_tile
from attnlib.core.scoring import scaled_scores

__all__: list[str] = []


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
