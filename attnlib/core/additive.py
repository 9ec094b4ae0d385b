"""Additive (Bahdanau-style) attention: a learned score for queries and keys of different widths."""

from __future__ import annotations

import torch
from torch import nn

from attnlib.core.softmax import masked_softmax
from attnlib.util._checks import (
    check_has_keys,
    check_last_dim_match,
    check_matches_parameters,
    check_positive_int,
    check_probability,
    check_same_device,
    check_tensor,
)

__all__ = ["AdditiveAttention"]


class AdditiveAttention(nn.Module):
    """a(q, k) = vᵀ tanh(W_q q + W_k k), then masked softmax over keys and a weighted sum of values.

    Args:
        d_q: width of each query.
        d_k: width of each key (may differ from d_q).
        d_hidden: h, width of the shared hidden space.
        dropout: dropout probability on the weights (training only).
    """

    def __init__(self, d_q: int, d_k: int, d_hidden: int, dropout: float = 0.0):
        super().__init__()
        for name, value in (("d_q", d_q), ("d_k", d_k), ("d_hidden", d_hidden)):
            check_positive_int(name, value)
        check_probability("dropout", dropout)
        self.d_q, self.d_k = d_q, d_k
        self.w_q = nn.Linear(d_q, d_hidden, bias=False)
        self.w_k = nn.Linear(d_k, d_hidden, bias=False)
        self.w_v = nn.Linear(d_hidden, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def _check(self, query: torch.Tensor, key: torch.Tensor) -> None:
        check_tensor("query", query, ndim_min=2)
        check_tensor("key", key, ndim_min=2)
        check_same_device(query=query, key=key)
        check_matches_parameters("AdditiveAttention", self.w_q.weight, query=query, key=key)
        check_has_keys("key", key, query=query)
        if query.shape[-1] != self.d_q:
            raise ValueError(
                f"query has width {query.shape[-1]} but d_q={self.d_q} "
                f"(query shape {tuple(query.shape)})"
            )
        if key.shape[-1] != self.d_k:
            raise ValueError(
                f"key has width {key.shape[-1]} but d_k={self.d_k} (key shape {tuple(key.shape)})"
            )

    def features(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """tanh(W_q q_i + W_k k_j) for every pair, by broadcasting: ``(B, L, S, h)``."""
        self._check(query, key)
        q = self.w_q(query)  # (B, L, h)
        k = self.w_k(key)  # (B, S, h)
        return torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))  # (B, L, S, h)

    def scores(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """e_ij = vᵀ tanh(W_q q_i + W_k k_j): ``(B, L, S)``."""
        return self.w_v(self.features(query, key)).squeeze(-1)  # (B, L, S)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        *,
        valid_lens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from the queries to the keys and pool the values.

        Args:
            query: ``(B, L, Dq)`` queries.
            key: ``(B, S, Dk)`` keys (Dk may differ from Dq).
            value: ``(B, S, Dv)`` values, one per key.
            attn_mask: optional boolean (True = may attend) or float mask, ``(..., L, S)``.
            valid_lens: optional integer ``(B,)`` or ``(B, L)`` valid key lengths.

        Returns:
            ``(out (B, L, Dv), weights (B, L, S))``.
        """
        self._check(query, key)  # first: value's checks read key.shape
        check_tensor("value", value, ndim_min=2)
        check_same_device(key=key, value=value)
        check_last_dim_match("key", key, "value", value, "S (number of keys)", -2, -2)
        scores = self.scores(query, key)  # (B, L, S)
        weights = masked_softmax(scores, attn_mask, valid_lens=valid_lens)  # (B, L, S)
        out = self.dropout(weights) @ value.to(weights.dtype)  # (B, L, Dv)
        return out, weights
