"""Additive (Bahdanau-style) attention: a learned score for queries and keys of different widths."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import (check_has_keys, check_last_dim_match, check_positive_int, check_same_device,
                      check_tensor)
from .softmax import masked_softmax

__all__ = ["AdditiveAttention"]


class AdditiveAttention(nn.Module):
    """a(q, k) = vᵀ tanh(W_q q + W_k k), then masked softmax over keys and a weighted sum of values.

    Args:
        query_size: d_q, width of each query.
        key_size: d_k, width of each key (may differ from d_q).
        num_hiddens: h, width of the shared hidden space.
        dropout: dropout probability on the weights (training only).
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int, dropout: float = 0.0):
        super().__init__()
        for name, value in (("query_size", query_size), ("key_size", key_size),
                            ("num_hiddens", num_hiddens)):
            check_positive_int(name, value)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.query_size, self.key_size = query_size, key_size
        self.w_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def _check(self, queries: torch.Tensor, keys: torch.Tensor) -> None:
        check_tensor("queries", queries, ndim_min=2)
        check_tensor("keys", keys, ndim_min=2)
        check_same_device(queries=queries, keys=keys, weights=self.w_q.weight)
        check_has_keys("keys", keys, queries=queries)
        if queries.shape[-1] != self.query_size:
            raise ValueError(
                f"queries have width {queries.shape[-1]} but query_size={self.query_size} "
                f"(queries shape {tuple(queries.shape)})"
            )
        if keys.shape[-1] != self.key_size:
            raise ValueError(
                f"keys have width {keys.shape[-1]} but key_size={self.key_size} "
                f"(keys shape {tuple(keys.shape)})"
            )

    def features(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """tanh(W_q q_i + W_k k_j) for every pair, by broadcasting: ``(B, L, S, h)``."""
        self._check(queries, keys)
        q = self.w_q(queries)  # (B, L, h)
        k = self.w_k(keys)  # (B, S, h)
        return torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))  # (B, L, S, h)

    def scores(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """e_ij = vᵀ tanh(W_q q_i + W_k k_j): ``(B, L, S)``."""
        return self.w_v(self.features(queries, keys)).squeeze(-1)  # (B, L, S)

    def forward(self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                attn_mask: torch.Tensor | None = None, *,
                valid_lens: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from queries ``(B, L, d_q)`` to keys ``(B, S, d_k)`` and values ``(B, S, Dv)``.

        Args:
            attn_mask: optional boolean (True = may attend) or float mask, ``(..., L, S)``.
            valid_lens: optional integer ``(B,)`` or ``(B, L)`` valid key lengths.

        Returns:
            ``(out (B, L, Dv), weights (B, L, S))``.
        """
        check_tensor("values", values, ndim_min=2)
        check_same_device(keys=keys, values=values)
        check_last_dim_match("keys", keys, "values", values, "S (number of keys)", -2, -2)
        scores = self.scores(queries, keys)  # (B, L, S)
        weights = masked_softmax(scores, attn_mask, valid_lens=valid_lens)  # (B, L, S)
        out = self.dropout(weights) @ values.to(weights.dtype)  # (B, L, Dv)
        return out, weights
