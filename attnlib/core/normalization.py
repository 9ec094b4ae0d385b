"""Why the Transformer normalises with LayerNorm and not BatchNorm (C38), as a measurement.

LayerNorm (:func:`attnlib.core.transformer.layer_norm`) normalises each token over its own features,
so a token's output cannot depend on the other tokens; BatchNorm with batch statistics
(:func:`batch_norm_tokens`) normalises each feature over every token in the batch, padding
included, so the same token's output moves when its batch, its sequence length or its padding
changes. :func:`norm_context_dependence` puts one token into two contexts and returns how far each
normalisation's output for it moves (:class:`NormContextChange`).

Where the LayerNorm sits (Post-LN or Pre-LN) changes how the gradient reaches each block of a
stack: :func:`block_gradient_norms` measures it, block by block, for one loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from attnlib.core.transformer import layer_norm
from attnlib.util._checks import check_number_above, check_tensor

__all__ = [
    "NormContextChange",
    "batch_norm_tokens",
    "block_gradient_norms",
    "norm_context_dependence",
]


def batch_norm_tokens(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """BatchNorm with batch statistics, as ``nn.BatchNorm1d`` in training mode on every token.

    Each feature is normalised over all ``B * L`` tokens (padding included), so a token's
    output depends on the other tokens in the batch.

    Args:
        x: ``(B, L, D)``.
        eps: added to the variance.

    Returns:
        ``(B, L, D)``.
    """
    check_tensor("x", x, ndim=3)
    eps = check_number_above("eps", eps, 0)
    flat = x.reshape(-1, x.shape[-1])  # (B*L, D)
    mean = flat.mean(dim=0)  # (D,)
    var = ((flat - mean) ** 2).mean(dim=0)  # (D,), biased as BatchNorm normalises with it
    return (x - mean) / torch.sqrt(var + eps)  # (B, L, D)


@dataclass(frozen=True)
class NormContextChange:
    """Result of :func:`norm_context_dependence`: the largest change of token
    ``[0, 0]``'s output.
    """

    layer_norm: float  # 0: LayerNorm uses the token's own statistics
    batch_norm: float  # in general not 0: BatchNorm uses the batch's statistics


def norm_context_dependence(
    x_a: torch.Tensor,
    x_b: torch.Tensor,
    *,
    eps: float = 1e-5,
) -> NormContextChange:
    """How much token ``[0, 0]``'s normalised output moves when its context changes (C38).

    ``x_a`` and ``x_b`` must hold the same token at ``[0, 0]`` and may differ anywhere else,
    even in shape (other batch rows, another sequence length, extra padding).

    Args:
        x_a: ``(B1, L1, D)``.
        x_b: ``(B2, L2, D)`` with ``x_b[0, 0] == x_a[0, 0]``.
        eps: added to the variance.

    Returns:
        A :class:`NormContextChange`: the largest absolute change of token ``[0, 0]``'s
        output, ``layer_norm`` (0) and ``batch_norm`` (in general not 0).
    """
    check_tensor("x_a", x_a, ndim=3)
    check_tensor("x_b", x_b, ndim=3)
    if x_a.shape[-1] != x_b.shape[-1]:
        raise ValueError(f"x_a has D={x_a.shape[-1]} but x_b has D={x_b.shape[-1]}")
    if not torch.equal(x_a[0, 0], x_b[0, 0]):
        raise ValueError("x_a[0, 0] and x_b[0, 0] must be the same token")
    d_ln = (layer_norm(x_a, eps=eps)[0, 0] - layer_norm(x_b, eps=eps)[0, 0]).abs().max()
    d_bn = (batch_norm_tokens(x_a, eps)[0, 0] - batch_norm_tokens(x_b, eps)[0, 0]).abs().max()
    return NormContextChange(layer_norm=float(d_ln), batch_norm=float(d_bn))


def _norm_parameter_ids(module: nn.Module) -> set[int]:
    return {
        id(p)
        for m in module.modules()
        if isinstance(m, nn.LayerNorm)
        for p in m.parameters(recurse=False)
    }


def block_gradient_norms(
    blocks: Sequence[nn.Module],
    x: torch.Tensor,
    target: torch.Tensor,
    *,
    final_norm: nn.LayerNorm | None = None,
    count_norms: bool = False,
) -> list[float]:
    """Gradient norm of each block's parameters for the MSE of the stack's output against target.

    Runs ``x`` through ``blocks`` in order (each returns ``(out, weights)``, as
    :class:`attnlib.core.transformer.EncoderBlock`), then through ``final_norm`` if given (a Pre-LN
    stack's last LayerNorm), takes ``mean((out - target) ** 2)`` and backpropagates. The
    gradients the call computes are left on the parameters (earlier ones are cleared first).

    Args:
        blocks: the stack, first block first.
        x: ``(B, L, D)`` input.
        target: ``(B, L, D)``.
        final_norm: optional LayerNorm after the last block.
        count_norms: also count the LayerNorm gains and shifts (``final_norm``'s with the last
            block). False compares only the attention and FFN weights, which both orders share.

    Returns:
        One float per block: the 2-norm of the gradient of all its counted parameters together.
    """
    check_tensor("x", x, ndim=3)
    check_tensor("target", target)
    if target.shape != x.shape:
        raise ValueError(f"target must have x's shape {tuple(x.shape)}, got {tuple(target.shape)}")
    if len(blocks) == 0:
        raise ValueError("blocks must hold at least one block")
    modules = list(blocks) + ([final_norm] if final_norm is not None else [])
    for m in modules:
        m.zero_grad(set_to_none=True)
    h = x
    for block in blocks:
        h, _ = block(h)  # (B, L, D)
    if final_norm is not None:
        h = final_norm(h)
    ((h - target) ** 2).mean().backward()
    norms = []
    for i, block in enumerate(blocks):
        owned = [block] + ([final_norm] if final_norm is not None and i == len(blocks) - 1 else [])
        grads = []
        for m in owned:
            skip = set() if count_norms else _norm_parameter_ids(m)
            grads += [
                p.grad.reshape(-1)
                for p in m.parameters()
                if p.grad is not None and id(p) not in skip
            ]
        norms.append(float(torch.cat(grads).norm()) if grads else 0.0)
    return norms
