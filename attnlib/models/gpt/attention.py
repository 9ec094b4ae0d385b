"""GPT's causal self-attention: fused or grouped (GQA/MQA) projections, the head views and the
KV cache it appends to (:mod:`attnlib.models.gpt.cache`); the model is in
:mod:`attnlib.models.gpt.model`.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlib.core.attention import dot_product_attention
from attnlib.core.masks import causal_mask
from attnlib.models.gpt.config import GPTConfig
from attnlib.util._checks import check_int

__all__ = ["CausalSelfAttention", "LayerPast", "HeadKeep", "LayerStep"]

# The contract of one layer step, shared by the attention and the block around it, so it is
# written once: the layer's cached (keys, values), each (B, Hkv, P, Dh), or None; the (H,) or
# (B, H) factors on each head's output, or None; and what the step returns, (out (B, T, D),
# weights (B, H, T, S), keys, values (B, Hkv, S, Dh)).
LayerPast = tuple[torch.Tensor, torch.Tensor] | None
HeadKeep = torch.Tensor | None
LayerStep = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


class CausalSelfAttention(nn.Module):
    """Causal self-attention with H query heads and ``Hkv`` key/value heads (GQA when fewer).

    Query head h reads K/V head ``h // g`` with ``g = H / Hkv`` (as Llama's ``repeat_kv``):
    heads ``0 .. g-1`` share K/V head 0, and so on.

    Attributes:
        w_q: ``nn.Linear(D, H·Dh)``; rows ``h·Dh : (h+1)·Dh`` of its weight are head h's W_Q
            transposed (``nn.Linear`` stores ``(out, in)``).
        w_k, w_v: ``nn.Linear(D, Hkv·Dh)``.
        w_o: ``nn.Linear(H·Dh, D)``; columns ``h·Dh : (h+1)·Dh`` of its weight are head h's W_O
            transposed.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.num_heads = config.num_heads
        self.num_kv_heads = config.kv_heads
        self.group_size = config.group_size
        self.head_dim = config.head_dim
        self.dropout = config.dropout
        d, dh = config.d_model, config.head_dim
        self.w_q = nn.Linear(d, self.num_heads * dh, bias=config.bias)
        self.w_k = nn.Linear(d, self.num_kv_heads * dh, bias=config.bias)
        self.w_v = nn.Linear(d, self.num_kv_heads * dh, bias=config.bias)
        self.w_o = nn.Linear(self.num_heads * dh, d, bias=config.bias)

    def kv_head_of(self, head: int) -> int:
        """The K/V head that query head ``head`` reads (``head // g``)."""
        check_int("head", head, min=0, max=self.num_heads - 1)
        return head // self.group_size

    def head_weights(
        self, head: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Head ``head``'s matrices as the math uses them (``x @ W_Q``), detached views.

        Returns:
            ``(W_Q (D, Dh), W_K (D, Dh), W_V (D, Dh), W_O (Dh, D))``; W_K and W_V are those of
            the K/V head it reads (:meth:`kv_head_of`). They share storage with the parameters
            (no copy, no gradient). The biases are :meth:`head_biases`.
        """
        kv = self.kv_head_of(head)
        q_rows, kv_rows = self._rows(head), self._rows(kv)
        return (
            self.w_q.weight.detach()[q_rows].T,  # (D, Dh)
            self.w_k.weight.detach()[kv_rows].T,  # (D, Dh)
            self.w_v.weight.detach()[kv_rows].T,  # (D, Dh)
            self.w_o.weight.detach()[:, q_rows].T,  # (Dh, D)
        )

    def head_biases(self, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """Head ``head``'s ``(b_Q, b_K, b_V)``, each ``(Dh,)`` detached views (None without
        biases); ``w_o``'s bias belongs to no head."""
        kv = self.kv_head_of(head)
        if self.w_q.bias is None:
            return None
        q_rows, kv_rows = self._rows(head), self._rows(kv)
        return (
            self.w_q.bias.detach()[q_rows],
            self.w_k.bias.detach()[kv_rows],
            self.w_v.bias.detach()[kv_rows],
        )

    def _rows(self, head: int) -> slice:
        return slice(head * self.head_dim, (head + 1) * self.head_dim)

    def forward(self, x: torch.Tensor, past: LayerPast = None, keep: HeadKeep = None) -> LayerStep:
        """Attend from the new tokens to the cached and new ones (unchecked: :class:`GPT`
        checks its inputs once).

        Args:
            x: ``(B, T, D)`` the new tokens' (normalised) states.
            past: ``(keys, values)`` each ``(B, Hkv, P, Dh)`` of the P earlier tokens, or None.
            keep: ``(H,)`` or ``(B, H)`` factors on each head's output before W_O, or None.

        Returns:
            ``(out (B, T, D), weights (B, H, T, S), keys, values)`` with ``S = P + T`` and the
            keys and values ``(B, Hkv, S, Dh)`` of all S tokens.
        """
        batch, length, _ = x.shape
        heads, kv_heads, dh, g = self.num_heads, self.num_kv_heads, self.head_dim, self.group_size
        q = self.w_q(x).view(batch, length, heads, dh).transpose(1, 2)  # (B, H, T, Dh)
        k = self.w_k(x).view(batch, length, kv_heads, dh).transpose(1, 2)  # (B, Hkv, T, Dh)
        v = self.w_v(x).view(batch, length, kv_heads, dh).transpose(1, 2)  # (B, Hkv, T, Dh)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, Hkv, S, Dh)
            v = torch.cat([past[1], v], dim=2)  # (B, Hkv, S, Dh)
        num_keys = k.shape[2]
        # New token i sits at position P + i: it sees keys 0 .. P + i, the last T rows of the
        # full (S, S) causal mask. Two cases need no mask tensor: without a past that is the
        # top-left causal mask (is_causal), and one new token sees every key.
        mask, is_causal = None, past is None
        if past is not None and length > 1:
            mask = causal_mask(num_keys, device=x.device)[num_keys - length :]  # (T, S)
        # GQA: the g query heads of a group meet their one K/V head by broadcasting over a
        # group axis; the cache keeps Hkv heads, never g copies.
        qg = q.view(batch, kv_heads, g, length, dh)  # (B, Hkv, g, T, Dh)
        out, weights = dot_product_attention(
            qg,
            k.unsqueeze(2),  # (B, Hkv, 1, S, Dh)
            v.unsqueeze(2),  # (B, Hkv, 1, S, Dh)
            mask,
            is_causal=is_causal,
            dropout_p=self.dropout if self.training else 0.0,
        )  # (B, Hkv, g, T, Dh), (B, Hkv, g, T, S)
        out = out.reshape(batch, heads, length, dh)  # (B, H, T, Dh)
        weights = weights.reshape(batch, heads, length, num_keys)  # (B, H, T, S)
        if keep is not None:
            out = out * keep.to(out.dtype)[..., None, None]  # (B, H, T, Dh)
        merged = out.transpose(1, 2).reshape(batch, length, heads * dh)  # (B, T, H·Dh)
        return self.w_o(merged), weights, k, v  # (B, T, D), (B, H, T, S)
