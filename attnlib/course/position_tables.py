"""How position tables are shaped: cosine similarity by distance, and how far a fixed offset is
from one rotation of the whole table (notebooks 07 and 10)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlib.util._checks import check_positive_int, check_tensor

__all__ = ["similarity_by_distance", "rotation_residual"]


def similarity_by_distance(table: torch.Tensor, max_distance: int) -> torch.Tensor:
    """Mean cosine similarity of position vectors ``k`` apart: ``(max_distance + 1,)``.

    ``out[k] = mean_i cos(P[i], P[i + k])`` (so ``out[0] = 1``), computed in float64.

    Args:
        table: ``(P, D)`` position vectors (learned or sinusoidal).
        max_distance: the largest k, ``< P``.
    """
    check_tensor("table", table, ndim=2)
    check_positive_int("max_distance", max_distance)
    if max_distance >= table.shape[0]:
        raise ValueError(f"max_distance={max_distance} must be < the {table.shape[0]} positions")
    unit = F.normalize(table.double(), dim=-1)  # (P, D)
    cos = unit @ unit.T  # (P, P)
    return torch.stack([torch.diagonal(cos, k).mean() for k in range(max_distance + 1)])


def rotation_residual(table: torch.Tensor, offset: int) -> torch.Tensor:
    """How far moving ``offset`` positions is from one rotation of the whole table.

    Finds the orthogonal R minimising ``||P[:-k] R - P[k:]||`` (Procrustes, via an SVD) and
    returns that residual relative to ``||P[k:]||`` (Frobenius norms, float64): 0 when one
    rotation maps every position to the one k later, as for sinusoids (notebook 07).

    Args:
        table: ``(P, D)``.
        offset: k in ``[1, P)``.

    Returns:
        A 0-d float64 tensor.
    """
    check_tensor("table", table, ndim=2)
    check_positive_int("offset", offset)
    if offset >= table.shape[0]:
        raise ValueError(f"offset={offset} must be < the {table.shape[0]} positions")
    p = table.double()
    a, b = p[:-offset], p[offset:]  # (P-k, D)
    u, _, vh = torch.linalg.svd(a.T @ b)  # (D, D)
    rotation = u @ vh  # (D, D), orthogonal
    return torch.linalg.norm(a @ rotation - b) / torch.linalg.norm(b)
