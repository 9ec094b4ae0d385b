"""Score functions a(q, k), their asymmetry, and Nadaraya–Watson kernel regression."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlib.core.softmax import masked_softmax
from attnlib.util._checks import (
    check_last_dim_match,
    check_number_above,
    check_same_device,
    check_same_dtype,
    check_scale,
    check_tensor,
)

__all__ = [
    "default_scale",
    "checked_scale",
    "scaled_scores",
    "dot_score",
    "scaled_dot_score",
    "cosine_score",
    "euclidean_distance",
    "neg_euclidean_score",
    "gaussian_score",
    "SCORE_FUNCTIONS",
    "nadaraya_watson",
    "ScoreAsymmetry",
    "score_asymmetry",
]


def default_scale(d_k: int) -> float:
    """The scale of scaled dot-product attention, ``1 / sqrt(d_k)``: the one place it is written."""
    return 1.0 / math.sqrt(d_k)


def checked_scale(scale: float | None, d_k: int) -> float:
    """An attention call's ``scale`` argument checked (``None`` or a finite real number) and
    made a number: ``None`` means :func:`default_scale` of ``d_k``; any number is used as given.
    """
    check_scale(scale)
    return default_scale(d_k) if scale is None else float(scale)


def scaled_scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """``q @ kᵀ · scale`` for every pair, ``(..., L, D), (..., S, D) -> (..., L, S)``; ``None``
    means :func:`default_scale`. Unchecked: the public functions that call it check first.
    """
    scale = default_scale(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1)  # (..., L, S)
    # In place: the product is new and its backward needs only q and k, so no copy is needed.
    return scores if scale == 1.0 else scores.mul_(scale)


def _check_pair(q: torch.Tensor, k: torch.Tensor) -> None:
    check_tensor("q", q, ndim_min=2)
    check_tensor("k", k, ndim_min=2)
    check_same_device(q=q, k=k)
    check_same_dtype(q=q, k=k)
    check_last_dim_match("q", q, "k", k, "d_k")


def dot_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q · k for every pair: ``(..., L, D), (..., S, D) -> (..., L, S)``. Grows with |k|."""
    _check_pair(q, k)
    return scaled_scores(q, k, 1.0)  # (..., L, S)


def scaled_dot_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q · k / sqrt(d_k): ``(..., L, D), (..., S, D) -> (..., L, S)``."""
    _check_pair(q, k)
    return scaled_scores(q, k)  # (..., L, S)


def cosine_score(q: torch.Tensor, k: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """cos(q, k) in [-1, 1]: ``(..., L, D), (..., S, D) -> (..., L, S)``; blind to norms."""
    _check_pair(q, k)
    eps = check_number_above("eps", eps, 0.0)
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


def nadaraya_watson(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bandwidth: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nadaraya–Watson kernel regression as attention pooling.

    ``f(x) = Σ_i softmax_i(-(x - x_i)² / (2 h²)) y_i``; with ``h = 1`` this is the seed's form.
    The score is :func:`gaussian_score` of the positions read as 1-D vectors.

    Args:
        q: ``(L,)`` query positions x (a 0-d tensor counts as one query).
        k: ``(S,)`` the training inputs x_i (keys).
        v: ``(S,)`` or ``(S, Dv)`` the training targets y_i (values).
        bandwidth: kernel width h > 0; small h follows the nearest points, large h averages.

    Returns:
        ``(prediction, weights)``: prediction ``(L,)`` or ``(L, Dv)``; weights ``(L, S)``.
    """
    h = check_number_above("bandwidth", bandwidth, 0.0)
    check_tensor("q", q)
    check_tensor("k", k, ndim=1)
    check_tensor("v", v, ndim_min=1)
    check_same_device(q=q, k=k, v=v)
    if q.dim() > 1:
        raise ValueError(f"q must be 0-d or 1-D (L,), got shape {tuple(q.shape)}")
    if v.dim() > 2:
        raise ValueError(f"v must be (S,) or (S, Dv), got shape {tuple(v.shape)}")
    if v.shape[0] != k.shape[0]:
        raise ValueError(f"k has S={k.shape[0]} points but v has {v.shape[0]}")
    scores = gaussian_score(q.reshape(-1, 1), k.reshape(-1, 1), bandwidth=h)  # (L, S)
    weights = masked_softmax(scores)  # (L, S)
    prediction = weights @ v.to(weights.dtype)  # (L,) or (L, Dv)
    return prediction, weights


@dataclass(frozen=True)
class ScoreAsymmetry:
    """A square score matrix E, its transpose and their difference (all ``(L, L)``)."""

    scores: torch.Tensor  # e_ij: token i reads token j
    transposed: torch.Tensor  # e_ji: the same pair read the other way
    difference: torch.Tensor  # e_ij - e_ji: zero everywhere only if E is symmetric


def score_asymmetry(scores: torch.Tensor) -> ScoreAsymmetry:
    """Split a square score matrix into E, Eᵀ and E − Eᵀ (C04: a learned score is not symmetric).

    Args:
        scores: ``(L, L)`` scores of L tokens against the same L tokens.

    Returns:
        A :class:`ScoreAsymmetry`.
    """
    check_tensor("scores", scores, ndim=2)
    if scores.shape[0] != scores.shape[1]:
        raise ValueError(f"scores must be a square (L, L) matrix, got shape {tuple(scores.shape)}")
    return ScoreAsymmetry(scores, scores.T, scores - scores.T)  # (L, L) each
