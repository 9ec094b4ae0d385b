"""Why attention divides by sqrt(d_k): the statistics of scores and of softmax rows.

Two experiments live here. :func:`dot_product_variance` draws random queries and keys with
independent zero-mean, unit-variance components and measures Var(q·k) for several widths d_k,
with the standard error of each estimate (C05: the variance is d_k, and 1 after dividing by
sqrt(d_k)). :func:`softmax_sharpness` measures how peaked the softmax rows become as d_k grows,
with and without the scale (C06), and how small the softmax Jacobian gets (C14).

The sharpness statistics of one row are plain functions: :func:`entropy`, :func:`max_weight`
and :func:`jacobian_norm`. The caller seeds: pass a ``torch.Generator`` for repeatable draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnlib.core.scoring import scaled_scores
from attnlib.core.softmax import masked_softmax, softmax_jacobian
from attnlib.util._checks import check_positive_int, check_tensor

__all__ = [
    "entropy",
    "max_weight",
    "jacobian_norm",
    "variance_with_stderr",
    "VarianceTable",
    "dot_product_variance",
    "SharpnessTable",
    "softmax_sharpness",
    "scores_for_widths",
    "spread_logits",
    "SpreadJacobians",
    "spread_jacobians",
]


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (in nats) of each softmax row, with 0 · log 0 = 0.

    A uniform row over n keys has entropy log n; a one-hot row has entropy 0.

    Args:
        weights: ``(..., S)`` non-negative rows (e.g. softmax outputs).

    Returns:
        ``(...)`` entropies ``-sum_j a_j log a_j``.
    """
    check_tensor("weights", weights, ndim_min=1)
    return -torch.special.xlogy(weights, weights).sum(dim=-1)  # (...)


def max_weight(weights: torch.Tensor) -> torch.Tensor:
    """The largest weight of each row: 1/S for a uniform row, 1 for a one-hot row.

    Args:
        weights: ``(..., S)`` softmax rows.

    Returns:
        ``(...)`` row maxima.
    """
    check_tensor("weights", weights, ndim_min=1)
    return weights.amax(dim=-1)  # (...)


def jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian ``J = diag(a) - a aᵀ`` of each row.

    It measures how strongly the weights react to a change of the scores: about ``sqrt(1/S)``
    for a uniform row over S keys, and 0 for a one-hot row (the gradient vanishes, C14).

    Args:
        weights: ``(..., S)`` softmax rows a.

    Returns:
        ``(...)`` norms ``||diag(a) - a aᵀ||_F``.
    """
    check_tensor("weights", weights, ndim_min=1)
    return torch.linalg.matrix_norm(softmax_jacobian(weights))  # (...)


def variance_with_stderr(samples: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unbiased sample variance along the last axis and its standard error.

    The standard error uses the large-sample formula ``Var(s²) ≈ (m4 − s⁴) / n`` with ``m4`` the
    fourth central moment, so it holds for any distribution with a finite fourth moment (for a
    normal sample it is about ``s² sqrt(2/n)``).

    Args:
        samples: ``(..., n)`` with n >= 2.

    Returns:
        ``(variance, stderr)``, each ``(...)``.
    """
    check_tensor("samples", samples, ndim_min=1)
    n = samples.shape[-1]
    if n < 2:
        raise ValueError(
            f"samples needs at least 2 values along its last axis, got shape {tuple(samples.shape)}"
        )
    centred = samples - samples.mean(dim=-1, keepdim=True)  # (..., n)
    var = centred.square().sum(dim=-1) / (n - 1)  # (...)
    m4 = centred.pow(4).mean(dim=-1)  # (...)
    stderr = ((m4 - var.square()).clamp_min(0.0) / n).sqrt()  # (...)
    return var, stderr


def spread_logits(logits: torch.Tensor, spread: float) -> torch.Tensor:
    """Rescale a row of logits so that its standard deviation is ``spread`` (mean kept at 0).

    ``spread`` plays the role of an inverse temperature: 0 gives equal logits (a uniform row),
    a large spread a near one-hot row.

    Args:
        logits: ``(..., S)`` logits, not all equal along the last axis.
        spread: target standard deviation (>= 0).

    Returns:
        ``(..., S)`` rescaled logits.
    """
    check_tensor("logits", logits, ndim_min=1)
    if spread < 0:
        raise ValueError(f"spread must be >= 0, got {spread}")
    centred = logits - logits.mean(dim=-1, keepdim=True)  # (..., S)
    std = centred.square().mean(dim=-1, keepdim=True).sqrt()  # (..., 1)
    if bool((std == 0).any()):
        raise ValueError("logits must not be all equal along the last axis (their spread is 0)")
    return centred / std * spread  # (..., S)


@dataclass(frozen=True)
class VarianceTable:
    """Result of :func:`dot_product_variance`, one entry per width d_k
    (tensors of shape ``(K,)``).
    """

    d_k: list[int]
    variance: torch.Tensor  # Var(q·k), expected d_k
    stderr: torch.Tensor  # standard error of `variance`
    variance_scaled: torch.Tensor  # Var(q·k / sqrt(d_k)), expected 1
    stderr_scaled: torch.Tensor  # standard error of `variance_scaled`
    num_samples: int


def _check_widths(d_ks: Sequence[int]) -> list[int]:
    if isinstance(d_ks, torch.Tensor):
        d_ks = d_ks.tolist()
    d_ks = list(d_ks)
    if not d_ks:
        raise ValueError("d_ks must name at least one width, got an empty sequence")
    for d in d_ks:
        check_positive_int("each d_k in d_ks", d)
    return d_ks


def _check_generator(generator: torch.Generator | None, device: torch.device) -> None:
    if generator is not None and generator.device.type != device.type:
        raise ValueError(
            f"generator is on {generator.device} but the samples are drawn on {device}; "
            f"make the generator with torch.Generator(device={str(device)!r})"
        )


def dot_product_variance(
    d_ks: Sequence[int],
    num_samples: int = 10_000,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    chunk_size: int = 2048,
) -> VarianceTable:
    """Monte-Carlo estimate of Var(q·k) for random q, k with i.i.d. N(0, 1) components.

    For each width d_k, draws ``num_samples`` independent pairs (q, k) in ``R^{d_k}``, computes
    their dot products and the sample variance with its standard error. The scaled variance is
    that of the same dot products divided by sqrt(d_k). Theory: Var(q·k) = d_k, and 1 after scaling.

    Args:
        d_ks: the widths to try, positive ints, e.g. ``[1, 4, 16, 64, 256, 1024]``.
        num_samples: pairs per width (>= 2).
        generator: a ``torch.Generator`` on ``device`` for repeatable draws
        (None: torch's global one).
        device: where to draw and compute.
        dtype: floating dtype of the samples and dot products; the variances are then computed
            in float64 (except on MPS, which has no float64), so printed tables are stable.
        chunk_size: pairs drawn at once, to bound memory for large d_k.

    Returns:
        A :class:`VarianceTable` with ``(K,)`` tensors on ``device`` for the K widths.
    """
    d_ks = _check_widths(d_ks)
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    check_positive_int("num_samples", num_samples)
    check_positive_int("chunk_size", chunk_size)
    if num_samples < 2:
        raise ValueError(f"num_samples must be >= 2 to estimate a variance, got {num_samples}")
    device = torch.device(device)
    _check_generator(generator, device)
    stats_dtype = dtype if device.type == "mps" else torch.float64
    variances, stderrs = [], []
    for d in d_ks:
        dots = []
        for start in range(0, num_samples, chunk_size):
            n = min(chunk_size, num_samples - start)
            q = torch.randn(n, d, generator=generator, device=device, dtype=dtype)  # (n, d_k)
            k = torch.randn(n, d, generator=generator, device=device, dtype=dtype)  # (n, d_k)
            dots.append((q * k).sum(dim=-1))  # (n,)
        var, se = variance_with_stderr(torch.cat(dots).to(stats_dtype))
        variances.append(var)
        stderrs.append(se)
    variance = torch.stack(variances)  # (K,)
    stderr = torch.stack(stderrs)  # (K,)
    widths = torch.tensor(d_ks, device=device, dtype=stats_dtype)  # (K,)
    return VarianceTable(d_ks, variance, stderr, variance / widths, stderr / widths, num_samples)


@dataclass(frozen=True)
class SharpnessTable:
    """Result of :func:`softmax_sharpness`: row statistics averaged over queries, ``(K,)`` each."""

    d_k: list[int]
    max_weight: torch.Tensor  # mean largest weight of a row (1/S uniform ... 1 one-hot)
    entropy: torch.Tensor  # mean entropy in nats (log S uniform ... 0 one-hot)
    jacobian_norm: torch.Tensor  # mean ||diag(a) - a aᵀ||_F (0 when saturated)
    scaled: bool
    num_keys: int


def scores_for_widths(
    q: torch.Tensor, k: torch.Tensor, d_ks: Sequence[int], *, scaled: bool
) -> torch.Tensor:
    """Dot-product scores using only the first d_k components of q and k, for several d_k.

    Nested prefixes of one draw let a widget or a plot compare widths on the same random numbers.

    Args:
        q: ``(..., L, D)`` queries with ``D >= max(d_ks)``.
        k: ``(..., S, D)`` keys.
        d_ks: widths, each ``<= D``.
        scaled: divide the scores for width d_k by ``sqrt(d_k)``.

    Returns:
        ``(K, ..., L, S)`` scores, one slice per width.
    """
    check_tensor("q", q, ndim_min=2)
    check_tensor("k", k, ndim_min=2)
    d_ks = _check_widths(d_ks)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q has D={q.shape[-1]} but k has D={k.shape[-1]} "
            f"(q shape {tuple(q.shape)}, k shape {tuple(k.shape)})"
        )
    if max(d_ks) > q.shape[-1]:
        raise ValueError(
            f"d_ks asks for width {max(d_ks)} but q and k have only D={q.shape[-1]} components"
        )
    out = []
    for d in d_ks:
        # (..., L, S); scaled: the default 1/sqrt(d) of width d
        out.append(scaled_scores(q[..., :d], k[..., :d], None if scaled else 1.0))
    return torch.stack(out)  # (K, ..., L, S)


def softmax_sharpness(
    d_ks: Sequence[int],
    *,
    scaled: bool,
    num_keys: int = 16,
    num_queries: int = 512,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float64,
) -> SharpnessTable:
    """How peaked softmax rows of random scores get as d_k grows, with or without 1/sqrt(d_k).

    Draws ``num_queries`` queries and ``num_keys`` keys with i.i.d. N(0, 1) components of the
    largest width, scores them using the first d_k components (see :func:`scores_for_widths`),
    and averages each row's max weight, entropy and Jacobian norm over the queries.

    Args:
        d_ks: widths to try (positive ints).
        scaled: divide the scores by sqrt(d_k) (True) or not (False).
        num_keys: S, keys per row.
        num_queries: rows averaged over.
        generator: a ``torch.Generator`` on ``device`` (None: torch's global one).
        device: where to draw and compute.
        dtype: floating dtype.

    Returns:
        A :class:`SharpnessTable` with ``(K,)`` tensors on ``device``.
    """
    d_ks = _check_widths(d_ks)
    check_positive_int("num_keys", num_keys)
    check_positive_int("num_queries", num_queries)
    device = torch.device(device)
    _check_generator(generator, device)
    width = max(d_ks)
    q = torch.randn(num_queries, width, generator=generator, device=device, dtype=dtype)  # (L, D)
    k = torch.randn(num_keys, width, generator=generator, device=device, dtype=dtype)  # (S, D)
    weights = masked_softmax(scores_for_widths(q, k, d_ks, scaled=scaled))  # (K, L, S)
    return SharpnessTable(
        d_ks,
        max_weight(weights).mean(dim=-1),  # (K,)
        entropy(weights).mean(dim=-1),  # (K,)
        jacobian_norm(weights).mean(dim=-1),  # (K,)
        bool(scaled),
        num_keys,
    )


@dataclass(frozen=True)
class SpreadJacobians:
    """Result of :func:`spread_jacobians`: one softmax row and its Jacobian per spread σ."""

    spreads: tuple[float, ...]
    weights: torch.Tensor  # (N, S) softmax(spread_logits(z, σ)), one row per spread
    jacobians: torch.Tensor  # (N, S, S) diag(a) - a aᵀ of each row
    norms: torch.Tensor  # (N,) Frobenius norm of each Jacobian


def spread_jacobians(logits, spreads: Sequence[float]) -> SpreadJacobians:
    """The softmax Jacobian of the same logits rescaled to several spreads σ (C13, C14).

    Args:
        logits: ``(S,)`` base logits (not all equal), any float tensor or sequence; the work is
            done in float64.
        spreads: the spreads σ (each >= 0), see :func:`spread_logits`.

    Returns:
        A :class:`SpreadJacobians` with ``(N, S)`` weights, ``(N, S, S)`` Jacobians and
        ``(N,)`` norms, one entry per spread.
    """
    z0 = torch.as_tensor(logits, dtype=torch.float64)
    check_tensor("logits", z0, ndim=1)
    spreads = tuple(float(s) for s in spreads)
    if not spreads:
        raise ValueError("spreads must name at least one spread, got an empty sequence")
    weights = torch.stack([masked_softmax(spread_logits(z0, s)) for s in spreads])  # (N, S)
    jacobians = softmax_jacobian(weights)  # (N, S, S)
    return SpreadJacobians(spreads, weights, jacobians, jacobian_norm(weights))
