"""Transformer encoder and decoder blocks, and LayerNorm written out.

Post-LN (the original): x = LN(x + Sublayer(x)) after each sub-layer.
Pre-LN: x = x + Sublayer(LN(x)), which trains more easily when deep.
Both blocks copy their torch counterparts (``from_torch``) so the outputs can be compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from attnlib.core._torch_layers import _block_from_torch
from attnlib.core.feedforward import FeedForward
from attnlib.core.masks import _causal_mask, checked_attention_mask
from attnlib.core.multihead import MultiHeadAttention, _check_head_mask
from attnlib.util._checks import (
    check_bool,
    check_has_keys,
    check_matches_parameters,
    check_number_above,
    check_positive_int,
    check_probability,
    check_same_device,
    check_same_dtype,
    check_tensor,
)

__all__ = [
    "layer_norm",
    "FeedForward",
    "EncoderBlock",
    "DecoderBlock",
    "DecoderOutput",
]


def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> torch.Tensor:
    """LayerNorm over the last axis: each token is normalised over its own features.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the biased variance, mean and
    variance taken over the last axis only (so no other token, batch row or padding enters).

    Args:
        x: ``(..., D)``.
        weight: optional ``(D,)`` gain.
        bias: optional ``(D,)`` shift.
        eps: added to the variance.

    Returns:
        ``(..., D)``, equal to ``F.layer_norm(x, (D,), weight, bias, eps)``.
    """
    check_tensor("x", x, ndim_min=1)
    check_number_above("eps", eps, 0)  # eps <= 0 gives NaN on a constant token (var = 0)
    width = x.shape[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            check_tensor(name, p)
        if p is not None and tuple(p.shape) != (width,):
            raise ValueError(
                f"{name} must have shape ({width},) to match x {tuple(x.shape)}, "
                f"got {tuple(p.shape)}"
            )
    # as F.layer_norm: no silent promotion of x to the parameters' dtype, no device mix
    check_same_device(x=x, weight=weight, bias=bias)
    check_same_dtype(x=x, weight=weight, bias=bias)
    centred = x - x.mean(dim=-1, keepdim=True)  # (..., D)
    var = (centred**2).mean(dim=-1, keepdim=True)  # (..., 1), biased
    y = centred / torch.sqrt(var + eps)  # (..., D)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _check_block_args(d_model, num_heads, d_ff, dropout) -> None:
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    check_positive_int("d_ff", d_ff)
    check_probability("dropout", dropout)


def _check_width(name: str, x: torch.Tensor, block: _Block) -> None:
    """``x`` is ``(B, L, D)`` with the block's D, at least one token (the block's keys: attention
    over an empty key set is an error), and the dtype and device of its parameters."""
    d_model = block.d_model
    check_tensor(name, x, ndim=3)
    if x.shape[-1] != d_model:
        raise ValueError(
            f"{name} has width {x.shape[-1]} but the block has d_model={d_model} "
            f"({name} shape {tuple(x.shape)})"
        )
    check_has_keys(name, x, -2)
    check_matches_parameters(type(block).__name__, block.self_attn.w_q.weight, **{name: x})


def _apply_norm(norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """Our :func:`layer_norm` with the parameters an ``nn.LayerNorm`` holds."""
    return layer_norm(x, norm.weight, norm.bias, norm.eps)


class _Block(nn.Module):
    """What both blocks share: their arguments (see :class:`EncoderBlock`), self-attention (and
    cross-attention in the decoder), the FFN, one LayerNorm and one dropout per sub-layer, built
    in this order (so a seed gives the same weights)."""

    _cross: ClassVar[bool]  # the decoder's cross-attention sub-layer

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
        bias: bool = True,
        activation: str = "relu",
    ):
        super().__init__()
        cross = self._cross
        _check_block_args(d_model, num_heads, d_ff, dropout)
        check_bool("norm_first", norm_first)
        check_bool("bias", bias)
        check_number_above("eps", eps, 0)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        if cross:
            self.cross_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, bias=bias, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        if cross:
            self.norm3 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        if cross:
            self.dropout3 = nn.Dropout(dropout)


class EncoderBlock(_Block):
    """Self-attention and FFN, each with a residual connection and LayerNorm.

    Post-LN (``norm_first=False``)::

        x = LN1(x + Dropout(SelfAttn(x)));  x = LN2(x + Dropout(FFN(x)))

    Pre-LN (``norm_first=True``)::

        x = x + Dropout(SelfAttn(LN1(x)));  x = x + Dropout(FFN(LN2(x)))

    Args:
        d_model: D.
        num_heads: H (divides D).
        d_ff: hidden width of the FFN.
        dropout: dropout after attention weights, inside the FFN and on each sub-layer output.
        norm_first: Pre-LN if True, Post-LN (the original) if False.
        eps: LayerNorm epsilon (BERT uses 1e-12).
        bias: biases in all linear layers and norms.
        activation: the FFN's ``"relu"`` (default) or ``"gelu"`` (BERT).
    """

    _cross = False

    def forward(
        self,
        x: torch.Tensor,
        *,
        valid_lens: torch.Tensor | None = None,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode ``x``; padded keys (past ``valid_lens``) get no attention.

        Args:
            x: ``(B, L, D)``.
            valid_lens: optional integer ``(B,)``: the real length of each sequence.
            head_mask: optional ``(H,)`` or ``(B, H)`` factor on each head's output before W_O
                (0 or False removes a head); see :meth:`MultiHeadAttention.forward`.

        Returns:
            ``(out (B, L, D), self_weights (B, H, L, L))``.
        """
        _check_width("x", x, self)
        batch, length = x.shape[0], x.shape[1]
        heads = self.self_attn.num_heads
        keep = None if head_mask is None else _check_head_mask(head_mask, batch, heads, x.device)
        mask, may_be_empty = checked_attention_mask(
            (batch, heads, length, length), x.device, valid_lens=valid_lens
        )
        return self._forward(x, mask, keep, rows_may_be_empty=may_be_empty)

    def _forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        keep: torch.Tensor | None = None,
        *,
        rows_may_be_empty: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` unchecked: ``mask`` broadcasts to ``(B, H, L, L)`` (e.g. the
        ``(B, 1, 1, L)`` padding of ``valid_lens``), ``keep`` is a checked ``head_mask``. A model
        that checked its inputs once calls this for every layer."""
        attend = self.self_attn._attend
        if self.norm_first:
            h = _apply_norm(self.norm1, x)
            a, weights = attend(h, h, h, mask, keep, rows_may_be_empty=rows_may_be_empty)
            x = x + self.dropout1(a)
            x = x + self.dropout2(self.ffn._forward(_apply_norm(self.norm2, x)))
        else:
            a, weights = attend(x, x, x, mask, keep, rows_may_be_empty=rows_may_be_empty)
            x = _apply_norm(self.norm1, x + self.dropout1(a))
            x = _apply_norm(self.norm2, x + self.dropout2(self.ffn._forward(x)))
        return x, weights  # (B, L, D), (B, H, L, L)

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderBlock:
        """Copy an ``nn.TransformerEncoderLayer(batch_first=True)`` (relu or exact gelu).

        Returns:
            A new block on the layer's device and dtype, in the same train/eval mode.
        """
        return _block_from_torch(
            cls, layer, nn.TransformerEncoderLayer, {"self_attn": "self_attn"}, ("norm1", "norm2")
        )


@dataclass(frozen=True)
class DecoderOutput:
    """What :class:`DecoderBlock` returns (more than ``(out, weights)``, so named fields).

    Attributes:
        out: ``(B, T, D)`` the block's output.
        self_weights: ``(B, H, T, T)`` the causal self-attention weights.
        cross_weights: ``(B, H, T, S)`` the cross-attention weights over the encoder output.
    """

    out: torch.Tensor
    self_weights: torch.Tensor
    cross_weights: torch.Tensor


class DecoderBlock(_Block):
    """Causal self-attention, cross-attention to the encoder output, and FFN.

    Post-LN (``norm_first=False``)::

        x = LN1(x + SelfAttn(x, causal));  x = LN2(x + CrossAttn(x, memory));  x = LN3(x + FFN(x))

    Pre-LN normalises the input of each sub-layer instead. In the cross-attention the queries
    come from the decoder (x) and the keys and values from the encoder output (memory).

    Args: as :class:`EncoderBlock`.
    """

    _cross = True

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        memory_valid_lens: torch.Tensor | None = None,
    ) -> DecoderOutput:
        """Decode ``x`` (causally) while attending to the encoder output ``memory``.

        Args:
            x: ``(B, T, D)`` decoder input (shifted targets).
            memory: ``(B, S, D)`` encoder output.
            memory_valid_lens: optional integer ``(B,)``: real source lengths (padding hidden).

        Returns:
            A :class:`DecoderOutput`: ``out (B, T, D)``, ``self_weights (B, H, T, T)``,
            ``cross_weights (B, H, T, S)``.
        """
        _check_width("x", x, self)
        _check_width("memory", memory, self)
        if memory.shape[0] != x.shape[0]:
            raise ValueError(
                f"x has batch size {x.shape[0]} but memory has {memory.shape[0]} "
                f"(x shape {tuple(x.shape)}, memory shape {tuple(memory.shape)})"
            )
        shape = (x.shape[0], self.cross_attn.num_heads, x.shape[1], memory.shape[1])
        cross_mask, may_be_empty = checked_attention_mask(
            shape, x.device, valid_lens=memory_valid_lens
        )
        return self._forward(x, memory, cross_mask, rows_may_be_empty=may_be_empty)

    def _forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        cross_mask: torch.Tensor | None,
        *,
        rows_may_be_empty: bool = True,
    ) -> DecoderOutput:
        """:meth:`forward` unchecked: ``cross_mask`` broadcasts to ``(B, H, T, S)`` (e.g. the
        ``(B, 1, 1, S)`` padding of the source); ``rows_may_be_empty`` is about it alone (the
        causal self-attention always sees its own position)."""
        causal = _causal_mask(x.shape[1], x.shape[1], x.device)  # (T, T)
        self_attend, cross_attend = self.self_attn._attend, self.cross_attn._attend
        empty = rows_may_be_empty
        if self.norm_first:
            h = _apply_norm(self.norm1, x)
            a, self_w = self_attend(h, h, h, causal, rows_may_be_empty=False)
            x = x + self.dropout1(a)
            h = _apply_norm(self.norm2, x)
            c, cross_w = cross_attend(h, memory, memory, cross_mask, rows_may_be_empty=empty)
            x = x + self.dropout2(c)
            x = x + self.dropout3(self.ffn._forward(_apply_norm(self.norm3, x)))
        else:
            a, self_w = self_attend(x, x, x, causal, rows_may_be_empty=False)
            x = _apply_norm(self.norm1, x + self.dropout1(a))
            c, cross_w = cross_attend(x, memory, memory, cross_mask, rows_may_be_empty=empty)
            x = _apply_norm(self.norm2, x + self.dropout2(c))
            x = _apply_norm(self.norm3, x + self.dropout3(self.ffn._forward(x)))
        return DecoderOutput(x, self_w, cross_w)  # (B, T, D), (B, H, T, T), (B, H, T, S)

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderBlock:
        """Copy an ``nn.TransformerDecoderLayer(batch_first=True)`` (relu or exact gelu).

        Compare with ``layer(x, memory, tgt_is_causal=True, tgt_mask=causal)`` where torch's
        boolean mask means True = hidden (the opposite of ours).

        Returns:
            A new block on the layer's device and dtype, in the same train/eval mode.
        """
        return _block_from_torch(
            cls,
            layer,
            nn.TransformerDecoderLayer,
            {"self_attn": "self_attn", "cross_attn": "multihead_attn"},
            ("norm1", "norm2", "norm3"),
        )
