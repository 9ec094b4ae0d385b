"""Score functions a(q, k) and Nadaraya–Watson kernel regression (attention pooling)."""

from __future__ import annotations

import math

import torch

from ._checks import (check_last_dim_match, check_number_above, check_same_device,
                      check_tensor)
from .softmax import masked_softmax

__all__ = [
    "dot_score",
    "scaled_dot_score",
    "cosine_score",
    "euclidean_distance",
    "neg_euclidean_score",
    "gaussian_score",
    "SCORE_FUNCTIONS",
    "nadaraya_watson",
]


def _check_pair(q: torch.Tensor, k: torch.Tensor) -> None:
    check_tensor("q", q, ndim_min=2)
    check_tensor("k", k, ndim_min=2)
    check_same_device(q=q, k=k)
    check_last_dim_match("q", q, "k", k, "d_k")


def dot_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q · k for every pair: ``(..., L, D), (..., S, D) -> (..., L, S)``. Grows with |k|."""
    _check_pair(q, k)
    return q @ k.transpose(-2, -1)  # (..., L, S)


def scaled_dot_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q · k / sqrt(d_k): ``(..., L, D), (..., S, D) -> (..., L, S)``."""
    _check_pair(q, k)
    return (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (..., L, S)


def cosine_score(q: torch.Tensor, k: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """cos(q, k) in [-1, 1]: ``(..., L, D), (..., S, D) -> (..., L, S)``; blind to norms."""
    _check_pair(q, k)
    qn = q / q.norm(dim=-1, keepdim=True).clamp_min(eps)
    kn = k / k.norm(dim=-1, keepdim=True).clamp_min(eps)
    return qn @ kn.transpose(-2, -1)  # (..., L, S)


def euclidean_distance(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """|q - k| for every pair: ``(..., L, S)``. A distance, NOT a score (C20): do not softmax it."""
    _check_pair(q, k)
    diff = q.unsqueeze(-2) - k.unsqueeze(-3)  # (..., L, S, D)
    return diff.pow(2).sum(-1).sqrt()  # (..., L, S)


def neg_euclidean_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """-|q - k|: larger when the key is nearer. ``(..., L, S)``."""
    return -euclidean_distance(q, k)


def gaussian_score(q: torch.Tensor, k: torch.Tensor, bandwidth: float = 1.0) -> torch.Tensor:
    """Gaussian-kernel log-score -|q - k|² / (2 bandwidth²): ``(..., L, S)``.

    Its softmax is the normalised Gaussian kernel exp(-|q-k|²/2h²) / Σ exp(...).
    """
    h = check_number_above("bandwidth", bandwidth, 0.0)
    _check_pair(q, k)
    diff = q.unsqueeze(-2) - k.unsqueeze(-3)  # (..., L, S, D)
    return -diff.pow(2).sum(-1) / (2 * h * h)  # (..., L, S)


SCORE_FUNCTIONS = {
    "dot": dot_score,
    "scaled_dot": scaled_dot_score,
    "cosine": cosine_score,
    "neg_euclidean": neg_euclidean_score,
    "gaussian": gaussian_score,
}


def nadaraya_watson(x_query: torch.Tensor, x_keys: torch.Tensor, y_values: torch.Tensor,
                    bandwidth: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Nadaraya–Watson kernel regression as attention pooling.

    ``f(x) = Σ_i softmax_i(-(x - x_i)² / (2 h²)) y_i``; with ``h = 1`` this is the seed's form.

    Args:
        x_query: ``(L,)`` query positions (a 0-d tensor counts as one query).
        x_keys: ``(S,)`` the training inputs x_i (keys).
        y_values: ``(S,)`` or ``(S, Dv)`` the training targets y_i (values).
        bandwidth: kernel width h > 0; small h follows the nearest points, large h averages.

    Returns:
        ``(prediction, weights)``: prediction ``(L,)`` or ``(L, Dv)``; weights ``(L, S)``.
    """
    h = check_number_above("bandwidth", bandwidth, 0.0)
    check_tensor("x_query", x_query)
    check_tensor("x_keys", x_keys, ndim=1)
    check_tensor("y_values", y_values, ndim_min=1)
    check_same_device(x_query=x_query, x_keys=x_keys, y_values=y_values)
    if x_query.dim() > 1:
        raise ValueError(f"x_query must be 0-d or 1-D (L,), got shape {tuple(x_query.shape)}")
    if y_values.dim() > 2:
        raise ValueError(f"y_values must be (S,) or (S, Dv), got shape {tuple(y_values.shape)}")
    if y_values.shape[0] != x_keys.shape[0]:
        raise ValueError(
            f"x_keys has S={x_keys.shape[0]} points but y_values has {y_values.shape[0]}"
        )
    xq = x_query.reshape(-1)  # (L,)
    scores = -(xq.unsqueeze(-1) - x_keys.unsqueeze(0)).pow(2) / (2 * h * h)  # (L, S)
    weights = masked_softmax(scores)  # (L, S)
    prediction = weights @ y_values.to(weights.dtype)  # (L,) or (L, Dv)
    return prediction, weights
