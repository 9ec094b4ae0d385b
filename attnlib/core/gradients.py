"""The backward pass of attention, written by hand: the three gradient paths (to V, Q and K)
in five backward lines (dV, dA, dZ, dQ, dK)."""

from __future__ import annotations

import torch

from attnlib.core.attention import check_qkv
from attnlib.core.scoring import checked_scale
from attnlib.util._checks import check_same_device, check_same_dtype, check_tensor

__all__ = ["attention_backward"]


def attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    weights: torch.Tensor,
    grad_out: torch.Tensor,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of L through O = softmax(Z) V with Z = q kᵀ · scale, given G = dL/dO.

    dL/dV = Aᵀ G,  dL/dA = G Vᵀ,  H = dL/dZ = A ⊙ (dL/dA − rowsum(dL/dA ⊙ A)),
    dL/dQ = H K · scale,  dL/dK = Hᵀ Q · scale.  Masked positions have A = 0 and so H = 0.

    Args:
        q, k, v: ``(..., L, Dk)``, ``(..., S, Dk)``, ``(..., S, Dv)`` as in the forward pass.
        weights: ``(..., L, S)`` the forward pass's softmax weights A.
        grad_out: ``(..., L, Dv)`` the upstream gradient G.
        scale: the forward pass's scale; ``None`` means ``1/sqrt(Dk)``.

    Returns:
        ``(dq, dk, dv)`` with the shapes of q, k and v.
    """
    check_qkv(q, k, v)
    scale = checked_scale(scale, q.shape[-1])
    check_tensor("weights", weights, ndim_min=2)
    check_tensor("grad_out", grad_out, ndim_min=2)
    check_same_device(q=q, weights=weights, grad_out=grad_out)
    check_same_dtype(q=q, weights=weights, grad_out=grad_out)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    expected_a = (*batch, q.shape[-2], k.shape[-2])
    if tuple(weights.shape[-2:]) != expected_a[-2:] or not _broadcasts(weights, expected_a):
        raise ValueError(
            f"weights must be (..., L, S) = {expected_a} as the forward pass gave them "
            f"(q {tuple(q.shape)}, k {tuple(k.shape)}), got {tuple(weights.shape)}"
        )
    expected_g = (*batch, q.shape[-2], v.shape[-1])
    if tuple(grad_out.shape[-2:]) != expected_g[-2:] or not _broadcasts(grad_out, expected_g):
        raise ValueError(
            f"grad_out must be (..., L, Dv) = {expected_g}, the output's shape "
            f"(q {tuple(q.shape)}, v {tuple(v.shape)}), got {tuple(grad_out.shape)}"
        )
    dv = weights.transpose(-2, -1) @ grad_out  # (..., S, Dv)
    da = grad_out @ v.transpose(-2, -1)  # (..., L, S)
    dz = weights * (da - (da * weights).sum(-1, keepdim=True))  # (..., L, S): softmax backward
    dq = (dz @ k) * scale  # (..., L, Dk)
    dk = (dz.transpose(-2, -1) @ q) * scale  # (..., S, Dk)
    return _sum_to(dq, q.shape), _sum_to(dk, k.shape), _sum_to(dv, v.shape)


def _broadcasts(x: torch.Tensor, shape: tuple) -> bool:
    """Whether ``x`` broadcasts to exactly ``shape`` (leading axes of size 1 or missing)."""
    try:
        return tuple(torch.broadcast_shapes(x.shape, shape)) == tuple(shape)
    except RuntimeError:
        return False


def _sum_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a gradient over the batch axes that were broadcast in the forward pass."""
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis, keepdim=True)
    return grad
