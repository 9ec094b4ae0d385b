"""Transformer encoder and decoder blocks, and LayerNorm written out.

Post-LN (the original): x = LN(x + Sublayer(x)) after each sub-layer.
Pre-LN: x = x + Sublayer(LN(x)), which trains more easily when deep.
Both blocks copy their torch counterparts (``from_torch``) so the outputs can be compared.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attnlib.core.multihead import MultiHeadAttention
from attnlib.util._checks import check_positive_int, check_probability, check_tensor

__all__ = [
    "layer_norm",
    "FeedForward",
    "EncoderBlock",
    "DecoderBlock",
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
    width = x.shape[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (width,):
            raise ValueError(
                f"{name} must have shape ({width},) to match x {tuple(x.shape)}, "
                f"got {tuple(p.shape)}"
            )
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1), biased
    y = (x - mean) / torch.sqrt(var + eps)  # (..., D)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
}  # gelu: the exact erf form, as BERT's "gelu"


def _check_activation(activation) -> None:
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a str, got {type(activation).__name__}")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")


class FeedForward(nn.Module):
    """Position-wise FFN: ``linear2(dropout(act(linear1(x))))``, the same MLP on every token.

    ``activation`` is ``"relu"`` (the original Transformer) or ``"gelu"`` (BERT's, exact erf form).
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        activation: str = "relu",
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        _check_activation(activation)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, L, D)`` -> ``(B, L, D)``."""
        act = _ACTIVATIONS[self.activation]
        return self.linear2(self.dropout(act(self.linear1(x))))  # (B, L, D)


def _check_block_args(d_model, num_heads, d_ff, dropout) -> None:
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    check_positive_int("d_ff", d_ff)
    check_probability("dropout", dropout)


def _check_width(name: str, x: torch.Tensor, d_model: int) -> None:
    check_tensor(name, x, ndim=3)
    if x.shape[-1] != d_model:
        raise ValueError(
            f"{name} has width {x.shape[-1]} but the block has d_model={d_model} "
            f"({name} shape {tuple(x.shape)})"
        )


def _check_torch_layer(layer, cls) -> None:
    if not isinstance(layer, cls):
        raise TypeError(f"expected an nn.{cls.__name__}, got {type(layer).__name__}")
    if not layer.self_attn.batch_first:
        raise ValueError(f"the {cls.__name__} must be built with batch_first=True")


def _torch_activation(layer) -> str:
    """The FFN activation of a torch Transformer layer, as our name ("relu" or "gelu")."""
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"  # the exact erf form; the tanh approximation is another function
    raise ValueError(f"activation must be relu or gelu (exact), got {act!r}")


def _copy_linear(dst: nn.Linear, src: nn.Linear) -> None:
    dst.weight.copy_(src.weight)
    if src.bias is not None:
        dst.bias.copy_(src.bias)


def _copy_norm(dst: nn.LayerNorm, src: nn.LayerNorm) -> None:
    if src.weight is not None:
        dst.weight.copy_(src.weight)
    if src.bias is not None:
        dst.bias.copy_(src.bias)


def _block_from_torch(cls, layer, torch_cls, attention: dict[str, str], norms: tuple[str, ...]):
    """Build a ``cls`` block with ``layer``'s sizes, device, dtype and mode, and copy its weights.

    ``attention`` maps our attention attribute to torch's (e.g. ``cross_attn`` ->
    ``multihead_attn``); ``norms`` names the LayerNorms, which both sides call alike.
    """
    _check_torch_layer(layer, torch_cls)
    new = cls(
        layer.self_attn.embed_dim,
        layer.self_attn.num_heads,
        layer.linear1.out_features,
        dropout=layer.dropout.p,
        norm_first=layer.norm_first,
        eps=layer.norm1.eps,
        bias=layer.linear1.bias is not None,
        activation=_torch_activation(layer),
    )
    new = new.to(device=layer.linear1.weight.device, dtype=layer.linear1.weight.dtype)
    for ours, theirs in attention.items():
        setattr(new, ours, MultiHeadAttention.from_torch(getattr(layer, theirs)))
    with torch.no_grad():
        _copy_linear(new.ffn.linear1, layer.linear1)
        _copy_linear(new.ffn.linear2, layer.linear2)
        for name in norms:
            _copy_norm(getattr(new, name), getattr(layer, name))
    return new.train(layer.training)


def _apply_norm(norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """Our :func:`layer_norm` with the parameters an ``nn.LayerNorm`` holds."""
    return layer_norm(x, norm.weight, norm.bias, norm.eps)


class EncoderBlock(nn.Module):
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
        _check_block_args(d_model, num_heads, d_ff, dropout)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, bias=bias, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

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
        _check_width("x", x, self.d_model)
        if self.norm_first:
            h = _apply_norm(self.norm1, x)
            a, weights = self.self_attn(h, h, h, valid_lens=valid_lens, head_mask=head_mask)
            x = x + self.dropout1(a)
            x = x + self.dropout2(self.ffn(_apply_norm(self.norm2, x)))
        else:
            a, weights = self.self_attn(x, x, x, valid_lens=valid_lens, head_mask=head_mask)
            x = _apply_norm(self.norm1, x + self.dropout1(a))
            x = _apply_norm(self.norm2, x + self.dropout2(self.ffn(x)))
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


class DecoderBlock(nn.Module):
    """Causal self-attention, cross-attention to the encoder output, and FFN.

    Post-LN (``norm_first=False``)::

        x = LN1(x + SelfAttn(x, causal));  x = LN2(x + CrossAttn(x, memory));  x = LN3(x + FFN(x))

    Pre-LN normalises the input of each sub-layer instead. In the cross-attention the queries
    come from the decoder (x) and the keys and values from the encoder output (memory).

    Args: as :class:`EncoderBlock`.
    """

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
        _check_block_args(d_model, num_heads, d_ff, dropout)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, bias=bias, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        memory_valid_lens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Decode ``x`` (causally) while attending to the encoder output ``memory``.

        Args:
            x: ``(B, T, D)`` decoder input (shifted targets).
            memory: ``(B, S, D)`` encoder output.
            memory_valid_lens: optional integer ``(B,)``: real source lengths (padding hidden).

        Returns:
            ``(out (B, T, D), self_weights (B, H, T, T), cross_weights (B, H, T, S))``.
        """
        _check_width("x", x, self.d_model)
        _check_width("memory", memory, self.d_model)
        if self.norm_first:
            h = _apply_norm(self.norm1, x)
            a, self_w = self.self_attn(h, h, h, is_causal=True)
            x = x + self.dropout1(a)
            h = _apply_norm(self.norm2, x)
            c, cross_w = self.cross_attn(h, memory, memory, valid_lens=memory_valid_lens)
            x = x + self.dropout2(c)
            x = x + self.dropout3(self.ffn(_apply_norm(self.norm3, x)))
        else:
            a, self_w = self.self_attn(x, x, x, is_causal=True)
            x = _apply_norm(self.norm1, x + self.dropout1(a))
            c, cross_w = self.cross_attn(x, memory, memory, valid_lens=memory_valid_lens)
            x = _apply_norm(self.norm2, x + self.dropout2(c))
            x = _apply_norm(self.norm3, x + self.dropout3(self.ffn(x)))
        return x, self_w, cross_w  # (B, T, D), (B, H, T, T), (B, H, T, S)

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
