"""Attention pooling on 1-D data: a toy regression set and pooling with any named score function.

Nadaraya–Watson kernel regression (:func:`attnlib.nadaraya_watson`) is attention pooling with the
Gaussian score. Here the same pooling can use any score of :data:`attnlib.SCORE_FUNCTIONS` on
scalar inputs, plus the positive distance that must *not* be used as a score (C20), so one can
watch what each choice does to the weights and to the fitted curve.

:func:`fit_bandwidth` makes the Gaussian kernel *parametric*: its width σ (one learnable weight,
w = 1/σ) is learned by gradient descent on the leave-one-out error of
:func:`leave_one_out_pooling`, where each training point is predicted from the others only.
"""

from __future__ import annotations

import math

import torch

from attnlib.core.scoring import SCORE_FUNCTIONS, euclidean_distance, gaussian_score
from attnlib.core.softmax import masked_softmax
from attnlib.util._checks import (
    check_number_above,
    check_positive_int,
    check_same_device,
    check_tensor,
)

__all__ = [
    "POOLING_SCORES",
    "toy_function",
    "toy_regression_data",
    "pooling_scores",
    "attention_pooling",
    "leave_one_out_pooling",
    "fit_bandwidth",
]

#: Score names :func:`pooling_scores` accepts. ``"distance (wrong)"`` is the positive distance
#: |x - x_i| fed straight to softmax: the C20 pitfall, which favours the farthest key.
POOLING_SCORES = ("gaussian", "neg_euclidean", "dot", "cosine", "scaled_dot", "distance (wrong)")


def toy_function(x: torch.Tensor) -> torch.Tensor:
    """The noiseless target ``f(x) = 2 sin(x) + x^0.8`` (defined for x >= 0)."""
    check_tensor("x", x)
    if bool((x < 0).any()):
        raise ValueError(f"toy_function needs x >= 0 (x^0.8), got min {float(x.min()):.4g}")
    return 2 * torch.sin(x) + x.pow(0.8)


def toy_regression_data(
    n_train: int = 40,
    *,
    x_max: float = 5.0,
    noise: float = 0.5,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Noisy samples of :func:`toy_function` at sorted random points in ``[0, x_max)``.

    The numbers are drawn on the CPU (from ``generator``, or torch's global generator) and then
    moved to ``device``, so a seeded call gives the same data on every device.

    Args:
        n_train: number of points S.
        x_max: the inputs lie in ``[0, x_max)``.
        noise: standard deviation of the Gaussian noise added to the targets.
        generator: optional CPU ``torch.Generator``; the library never seeds, the caller does.
        device, dtype: where and in what float type to return the data.

    Returns:
        ``(x_train (S,), y_train (S,))`` with ``x_train`` sorted ascending.
    """
    check_positive_int("n_train", n_train)
    x_max = check_number_above("x_max", x_max, 0.0)
    if isinstance(noise, bool) or not isinstance(noise, (int, float)):
        raise TypeError(f"noise must be a number, got {type(noise).__name__} ({noise!r})")
    if not (noise >= 0):
        raise ValueError(f"noise must be >= 0, got {noise}")
    x = torch.sort(torch.rand(n_train, generator=generator, dtype=torch.float64) * x_max).values
    eps = torch.randn(n_train, generator=generator, dtype=torch.float64)  # (S,)
    y = toy_function(x) + noise * eps  # (S,)
    return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)


def pooling_scores(
    q: torch.Tensor, k: torch.Tensor, score: str = "gaussian", bandwidth: float = 1.0
) -> torch.Tensor:
    """Scores of scalar queries against scalar keys with a named score function.

    Each scalar is treated as a 1-D vector, so ``"dot"`` is ``x·x_i``, ``"cosine"`` is
    ``sign(x)·sign(x_i)`` and ``"neg_euclidean"`` is ``-|x - x_i|``. ``"gaussian"`` uses the
    bandwidth as its width, ``-(x - x_i)² / (2 h²)``; every other score is divided by ``h``
    (a temperature: small h sharpens the softmax). ``"distance (wrong)"`` is ``+|x - x_i| / h``,
    the mistake of C20.

    Args:
        q: ``(L,)`` query positions (0-d counts as one query).
        k: ``(S,)`` key positions.
        score: one of :data:`POOLING_SCORES`.
        bandwidth: kernel width / temperature h > 0.

    Returns:
        Scores ``(L, S)``.
    """
    h = check_number_above("bandwidth", bandwidth, 0.0)
    if not isinstance(score, str):
        raise TypeError(f"score must be a str, one of {POOLING_SCORES}, got {type(score).__name__}")
    if score not in POOLING_SCORES:
        raise ValueError(f"score must be one of {POOLING_SCORES}, got {score!r}")
    check_tensor("q", q)
    check_tensor("k", k, ndim=1)
    check_same_device(q=q, k=k)
    if q.dim() > 1:
        raise ValueError(f"q must be 0-d or 1-D (L,), got shape {tuple(q.shape)}")
    q = q.reshape(-1, 1)  # (L, 1)
    k = k.to(q.dtype).reshape(-1, 1)  # (S, 1)
    if score == "gaussian":
        return gaussian_score(q, k, bandwidth=h)  # (L, S)
    if score == "distance (wrong)":
        return euclidean_distance(q, k) / h  # (L, S)
    return SCORE_FUNCTIONS[score](q, k) / h  # (L, S)


def attention_pooling(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    score: str = "gaussian",
    bandwidth: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pool the values with softmax weights of a named score: ``f(x) = Σ_i α(x, x_i) y_i``.

    With ``score="gaussian"`` this is :func:`attnlib.nadaraya_watson`.

    Args:
        q: ``(L,)`` query positions; k: ``(S,)`` key positions; v: ``(S,)`` or ``(S, Dv)``.
        score, bandwidth: as in :func:`pooling_scores`.

    Returns:
        ``(prediction (L,) or (L, Dv), weights (L, S))``.
    """
    scores = pooling_scores(q, k, score, bandwidth)  # (L, S)
    check_tensor("v", v, ndim_min=1)
    if v.dim() > 2 or v.shape[0] != k.shape[0]:
        raise ValueError(
            f"v must be (S,) or (S, Dv) with S={k.shape[0]} (the number of keys), "
            f"got shape {tuple(v.shape)}"
        )
    check_same_device(k=k, v=v)
    weights = masked_softmax(scores)  # (L, S)
    return weights @ v.to(weights.dtype), weights  # (L,) or (L, Dv), (L, S)


def leave_one_out_pooling(
    x: torch.Tensor, y: torch.Tensor, bandwidth: float | torch.Tensor
) -> torch.Tensor:
    """Nadaraya–Watson prediction at every training input from the *other* training points.

    ``f_(-i)(x_i) = Σ_{j≠i} softmax_j(-(x_i - x_j)² / (2σ²)) y_j``: the query's own key is masked,
    so a narrow kernel cannot simply return ``y_i``. ``bandwidth`` may be a 0-d tensor that
    requires grad (then the result is differentiable in σ).

    Args:
        x: ``(S,)`` training inputs (S >= 2); y: ``(S,)`` training targets.
        bandwidth: the kernel width σ > 0 (a number or a 0-d tensor).

    Returns:
        Predictions ``(S,)``.
    """
    check_tensor("x", x, ndim=1)
    check_tensor("y", y, ndim=1)
    check_same_device(x=x, y=y)
    if x.shape != y.shape or x.shape[0] < 2:
        raise ValueError(
            f"x and y must be (S,) with the same S >= 2, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if isinstance(bandwidth, torch.Tensor):
        if bandwidth.dim() != 0 or not bool(bandwidth.detach() > 0):
            raise ValueError(f"bandwidth must be a positive 0-d tensor, got {bandwidth!r}")
    else:
        bandwidth = check_number_above("bandwidth", bandwidth, 0.0)
    # the Gaussian score at unit width, rescaled by 1/σ² (σ may be a tensor with a gradient)
    scores = gaussian_score(x[:, None], x[:, None], 1.0) / bandwidth**2  # (S, S)
    others = ~torch.eye(x.shape[0], dtype=torch.bool, device=x.device)  # True = may attend
    return masked_softmax(scores, others) @ y.to(scores.dtype)  # (S,)


def fit_bandwidth(
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    init: float = 1.0,
    steps: int = 200,
    lr: float = 0.1,
) -> tuple[float, list[float]]:
    """Learn the Gaussian kernel's width from the data: Adam on log σ, minimising the
    leave-one-out mean squared error of :func:`leave_one_out_pooling`.

    (Minimising the plain training error instead would drive σ to 0: each point would predict
    itself.) Computed in float64 on the CPU (a problem of S numbers; float64 on every machine);
    the inputs are not modified.

    Args:
        x, y: ``(S,)`` training inputs and targets.
        init: the starting width σ > 0.
        steps: number of Adam steps; lr: its learning rate (on log σ).

    Returns:
        ``(sigma, losses)``: the learned width and the leave-one-out MSE before each step.
    """
    check_number_above("init", init, 0.0)
    check_positive_int("steps", steps)
    check_number_above("lr", lr, 0.0)
    x64, y64 = (t.detach().to("cpu", torch.float64) for t in (x, y))
    log_sigma = torch.tensor(math.log(init), dtype=torch.float64)
    log_sigma.requires_grad_(True)
    opt = torch.optim.Adam([log_sigma], lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((leave_one_out_pooling(x64, y64, log_sigma.exp()) - y64) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return float(log_sigma.detach().exp()), losses
