"""Copying torch's ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` into our blocks
(the ``from_torch`` class methods), so the outputs can be compared."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnlib.core.multihead import MultiHeadAttention


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
