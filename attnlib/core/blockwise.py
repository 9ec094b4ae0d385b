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

from attnlib.core.blockwise_function import _BlockwiseAttention, _forward
from attnlib.core.online_softmax import (
    BlockwiseStep,
    _online_blocks,
    _prepare,
    query_tile,
)

__all__ = [
    "BlockwiseStep",
    "OnlineSoftmaxTrace",
    "blockwise_attention",
    "blockwise_attention_lse",
    "blockwise_attention_steps",
    "online_softmax_trace",
    "query_tile",
]


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
