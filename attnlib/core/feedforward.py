"""The position-wise feed-forward network of every Transformer block, and its activations.

The same two-layer MLP is applied to each token on its own: ``linear2(dropout(act(linear1(x))))``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attnlib.util._checks import (
    check_bool,
    check_matches_parameters,
    check_positive_int,
    check_probability,
    check_tensor,
)

__all__ = ["FeedForward"]


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


# gelu: the exact erf form, as BERT's "gelu"; gelu_tanh: the tanh approximation that GPT-2's
# checkpoints were trained with (transformers' "gelu_new"), up to 1e-3 from the exact form.
_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": _gelu_tanh,
}


def _check_activation(activation) -> None:
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a str, got {type(activation).__name__}")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")


class FeedForward(nn.Module):
    """Position-wise FFN: ``linear2(dropout(act(linear1(x))))``, the same MLP on every token.

    ``activation`` is ``"relu"`` (the original Transformer), ``"gelu"`` (BERT's, exact erf form)
    or ``"gelu_tanh"`` (GPT-2's tanh approximation).
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        activation: str = "relu",
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        _check_activation(activation)
        check_bool("bias", bias)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, L, D)`` -> ``(B, L, D)``; checked (the blocks call the unchecked ``_forward``)."""
        check_tensor("x", x, ndim_min=1)
        if x.shape[-1] != (d := self.linear1.in_features):
            raise ValueError(f"x must have d_model={d} features last, got {tuple(x.shape)}")
        check_matches_parameters("FeedForward", self.linear1.weight, x=x)
        return self._forward(x)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        act = _ACTIVATIONS[self.activation]
        return self.linear2(self.dropout(act(self.linear1(x))))  # (B, L, D)
