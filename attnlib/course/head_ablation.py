"""Removing heads of a trained encoder: the ``head_mask`` that zeroes chosen heads' outputs
before W_O, and how far removing each head moves every sentence vector (C48)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlib.models.minilm import mean_pool

__all__ = ["head_mask_without", "ablation_effect"]


def head_mask_without(encoder, heads) -> torch.Tensor:
    """A ``head_mask`` for :meth:`~attnlib.models.minilm.MiniLMEncoder.forward` that removes heads.

    Args:
        encoder: a MiniLMEncoder (for its sizes and device).
        heads: a list of ``(layer, head)`` pairs counted from 0, e.g. ``[(4, 5)]``; may be empty.

    Returns:
        ``(num_layers, num_heads)`` float32 on the encoder's device: 1 everywhere, 0 at ``heads``.
    """
    layers, num_heads = encoder.config.num_layers, encoder.config.num_heads
    if isinstance(heads, tuple) and len(heads) == 2 and all(isinstance(i, int) for i in heads):
        raise TypeError(f"heads must be a list of (layer, head) pairs; wrap one pair: [{heads!r}]")
    keep = torch.ones(layers, num_heads, device=encoder.device)  # (layers, H)
    for pair in heads:
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in pair)
        ):
            raise TypeError(
                f"each entry of heads must be a (layer, head) pair of ints, got {pair!r}"
            )
        layer, head = pair
        if not (0 <= layer < layers and 0 <= head < num_heads):
            raise ValueError(
                f"head ({layer}, {head}) does not exist: layers are 0..{layers - 1}, "
                f"heads 0..{num_heads - 1}"
            )
        keep[layer, head] = 0.0
    return keep


def ablation_effect(encoder, texts: list[str]) -> torch.Tensor:
    """How far removing one head moves each sentence vector, for every head (C48).

    Head h of layer l is removed by zeroing its output before W_O
    (``head_mask_without(encoder, [(l, h)])``); the effect is ``1 - cos`` between the sentence
    vector with all heads and the one without that head.

    Args:
        encoder: a MiniLMEncoder.
        texts: a non-empty list of strings.

    Returns:
        ``(num_layers, num_heads, len(texts))`` float64 on the CPU: 0 when the head changes
        nothing, up to 2.
    """
    batch = encoder.tokenize(texts)
    layers, num_heads = encoder.config.num_layers, encoder.config.num_heads
    n, many = len(texts), layers * num_heads
    keep = torch.ones(many, layers, num_heads, device=encoder.device)  # (72, layers, H)
    keep.view(many, many)[torch.arange(many), torch.arange(many)] = 0.0  # row c: head c removed
    keep = keep.repeat_interleave(n, dim=0)  # (72 * B, layers, H), B rows per removed head
    ids = torch.cat([batch.ids, batch.ids.repeat(many, 1)])  # (B + 72 * B, L): full, then cut
    lens = torch.cat([batch.valid_lens, batch.valid_lens.repeat(many)])  # (B + 72 * B,)
    keep = torch.cat([torch.ones(n, layers, num_heads, device=encoder.device), keep])
    with torch.no_grad():
        hidden = encoder(ids, valid_lens=lens, head_mask=keep).hidden  # (B + 72 B, L, D)
    vectors = F.normalize(mean_pool(hidden.double(), lens), dim=-1)  # (B + 72 B, D)
    full, cut = vectors[:n], vectors[n:].view(layers, num_heads, n, -1)  # (B, D), (l, H, B, D)
    return (1.0 - (cut * full).sum(-1)).cpu()  # (layers, H, B)
