"""Sinusoidal positional encoding and why an offset is a rotation.

PE[pos, 2i] = sin(pos * w_i), PE[pos, 2i+1] = cos(pos * w_i), with w_i = 1 / base^(2i/D).
For each frequency w the pair (sin w(pos+k), cos w(pos+k)) is the pair at pos rotated by a
2x2 matrix that depends on the offset k alone (:func:`offset_rotation`). Rotary position
embedding (:func:`rotary_embedding`) applies such rotations to queries and keys instead of adding
a table to the input.
"""

from __future__ import annotations

import numbers
from typing import cast

import torch
from torch import nn

from attnlib.util._checks import (
    check_float_dtype,
    check_number_above,
    check_positive_int,
    check_probability,
    check_tensor,
)

__all__ = [
    "sinusoidal_frequencies",
    "sinusoidal_encoding",
    "offset_rotation",
    "sinusoidal_pair",
    "PositionalEncoding",
    "permute_tokens",
    "rotary_embedding",
]


def sinusoidal_frequencies(
    d_model: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The angular frequencies w_i = 1 / base^(2i/D), one per (sin, cos) feature pair.

    Args:
        d_model: D, the encoding width.
        base: the wavelength base (10000 in the original Transformer).
        device, dtype: where and how to build the result.

    Returns:
        ``(ceil(D/2),)``, from 1 (fastest) down towards 1/base (slowest).
    """
    check_positive_int("d_model", d_model)
    base = check_number_above("base", base, 1.0)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    return (base ** (-two_i / d_model)).to(device=device, dtype=dtype)


def sinusoidal_encoding(
    num_positions: int,
    d_model: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The sinusoidal position table of the original Transformer.

    Works for any number of positions: nothing is learned, so positions beyond a training
    length can be computed (which alone does not make a model work there).

    Args:
        num_positions: how many positions (rows), ``pos = 0 .. num_positions-1``; must be >= 1.
        d_model: D; even columns hold sines, odd columns cosines (an odd D ends with a sine).
        base: the wavelength base.
        device, dtype: where and how to build the result (computed in float64 first).

    Returns:
        ``(num_positions, D)``: ``PE[pos, 2i] = sin(pos w_i)``, ``PE[pos, 2i+1] = cos(pos w_i)``.
    """
    check_positive_int("num_positions", num_positions)
    check_float_dtype("dtype", dtype)
    omega = sinusoidal_frequencies(d_model, base=base, dtype=torch.float64)  # (ceil(D/2),)
    pos = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    angles = pos * omega  # (P, ceil(D/2))
    pe = torch.empty(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(device=device, dtype=dtype)  # (P, D)


def offset_rotation(k, omega) -> torch.Tensor:
    """The 2x2 matrix that moves a (sin, cos) pair from position pos to pos + k.

    ``[sin w(pos+k), cos w(pos+k)]^T = R(k, w) [sin w pos, cos w pos]^T`` with
    ``R = [[cos wk, sin wk], [-sin wk, cos wk]]``, for every pos: it depends on k and w only.

    Args:
        k: the offset, a number or tensor.
        omega: the frequency w, a number or tensor (broadcasts with k).

    Returns:
        ``(..., 2, 2)`` (``(2, 2)`` for scalars), float64 unless a tensor argument says otherwise.
    """
    k_t, w_t = _real_tensor("k", k), _real_tensor("omega", omega)
    if k_t.is_complex() or w_t.is_complex():
        raise TypeError("k and omega must be real")
    dtype = torch.promote_types(k_t.dtype, w_t.dtype)
    if not dtype.is_floating_point:
        dtype = torch.float64
    angle = k_t.to(dtype) * w_t.to(device=k_t.device, dtype=dtype)  # (...)
    c, s = torch.cos(angle), torch.sin(angle)
    return torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (..., 2, 2)


def _real_tensor(name: str, x) -> torch.Tensor:
    """``x`` as a tensor (numbers become float64), or a TypeError naming ``name``."""
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number or a tensor, got {type(x).__name__}")
    return torch.tensor(x, dtype=torch.float64)


def sinusoidal_pair(pos, omega) -> torch.Tensor:
    """The (sin, cos) pair of one frequency at position(s) ``pos``: columns 2i, 2i+1 of the table.

    Args:
        pos: a number or a tensor of positions.
        omega: the frequency w (a number).

    Returns:
        ``(..., 2)`` float64: ``[sin(w pos), cos(w pos)]``.
    """
    angle = torch.as_tensor(pos, dtype=torch.float64) * float(omega)  # (...)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1)  # (..., 2)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to token embeddings: X' = X + P (then dropout).

    Args:
        d_model: D.
        max_positions: how many positions the stored table covers (>= 1).
        dropout: dropout probability after the addition (training mode only).
        base: the wavelength base.
    """

    def __init__(
        self, d_model: int, max_positions: int = 512, *, dropout: float = 0.0, base: float = 10000.0
    ):
        super().__init__()
        check_positive_int("max_positions", max_positions)
        check_probability("dropout", dropout)
        self.d_model = d_model
        self.max_positions = max_positions
        self.dropout = nn.Dropout(dropout)
        # A constant, not a parameter: non-persistent so state_dicts stay small. Built in
        # float64 and cast in forward, so a .double() module gets exact positions, not float32
        # values widened.
        self.register_buffer(
            "pe",
            sinusoidal_encoding(max_positions, d_model, base=base, dtype=torch.float64),
            persistent=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Add positions ``0 .. L-1`` to ``x``.

        Args:
            x: ``(B, L, D)`` embeddings, ``L <= max_positions``.

        Returns:
            ``(B, L, D)``, a new tensor.
        """
        check_tensor("x", x, ndim=3)
        length, width = x.shape[1], x.shape[2]
        if width != self.d_model:
            raise ValueError(f"x has width {width} but d_model={self.d_model}")
        if length > self.max_positions:
            raise ValueError(
                f"x has L={length} positions but the table covers max_positions="
                f"{self.max_positions}; build the module with a larger max_positions"
            )
        pe = cast(torch.Tensor, self.pe)[:length].to(dtype=x.dtype)  # (L, D), from the buffer
        return self.dropout(x + pe)  # (B, L, D)


def permute_tokens(x: torch.Tensor, perm: torch.Tensor, *, dim: int = -2) -> torch.Tensor:
    """Reorder the tokens of ``x`` along ``dim``: ``out[..., i, :] = x[..., perm[i], :]`` (= P X).

    Args:
        x: ``(..., L, D)``.
        perm: ``(L,)`` integer permutation of ``0 .. L-1``.
        dim: the token axis.

    Returns:
        The permuted tensor (a new tensor).
    """
    check_tensor("x", x, ndim_min=1, floating=False)
    if not isinstance(perm, torch.Tensor):
        raise TypeError(f"perm must be a 1-D integer tensor, got {type(perm).__name__}")
    if perm.dtype == torch.bool or perm.is_floating_point() or perm.is_complex():
        raise TypeError(f"perm must be a 1-D integer tensor, got dtype {perm.dtype}")
    if perm.dim() != 1:
        raise TypeError(f"perm must be a 1-D integer tensor, got shape {tuple(perm.shape)}")
    length = x.shape[dim]
    if perm.numel() != length or not torch.equal(perm.sort().values.cpu(), torch.arange(length)):
        raise ValueError(
            f"perm must be a permutation of 0..{length - 1}, got {_preview(perm)} "
            f"({perm.numel()} entries)"
        )
    return x.index_select(dim, perm.to(x.device))


def _preview(t: torch.Tensor, most: int = 8) -> str:
    """The first entries of a 1-D tensor as a list, so an error never prints all L of them."""
    head = t[:most].tolist()
    return str(head) if t.numel() <= most else str(head)[:-1] + ", ...]"


def rotary_embedding(
    x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0
) -> torch.Tensor:
    """Rotary position embedding (RoPE): turn each feature pair of a token by its position's angle.

    Features ``(2i, 2i+1)`` of the token at position m are rotated counter-clockwise by the angle
    ``m w_i``, with the frequencies ``w_i = 1 / base^(2i/D)`` of the sinusoidal table:
    ``(a, b) -> (a cos(m w_i) - b sin(m w_i), a sin(m w_i) + b cos(m w_i))``. Applied to queries
    and keys (not to the input), it makes ``rope(q, m) · rope(k, n)`` depend on the positions only
    through ``n - m``: rotating both vectors by the same extra angle leaves a dot product alone.

    Args:
        x: ``(..., L, D)`` queries or keys, D even.
        positions: ``(L,)`` positions (integers or floats); default ``0 .. L-1``.
        base: the wavelength base.

    Returns:
        ``(..., L, D)``, a new tensor of x's dtype and device (angles computed in float64).
    """
    check_tensor("x", x, ndim_min=2)
    length, width = x.shape[-2], x.shape[-1]
    if width % 2:
        raise ValueError(f"x must have an even feature width D, got D={width}")
    if positions is None:
        pos = torch.arange(length, dtype=torch.float64)  # (L,)
    else:
        if not isinstance(positions, torch.Tensor) or positions.dim() != 1:
            raise TypeError("positions must be a 1-D tensor")
        if positions.numel() != length or positions.is_complex():
            raise ValueError(f"positions must hold {length} real numbers, got {positions.numel()}")
        pos = positions.detach().to(device="cpu", dtype=torch.float64)  # (L,)
        if not bool(torch.isfinite(pos).all()):
            raise ValueError(f"positions must be finite, got {positions.tolist()}")
    omega = sinusoidal_frequencies(width, base=base, dtype=torch.float64)  # (D/2,)
    angles = pos[:, None] * omega[None]  # (L, D/2)
    cos = torch.cos(angles).to(device=x.device, dtype=x.dtype)  # (L, D/2)
    sin = torch.sin(angles).to(device=x.device, dtype=x.dtype)  # (L, D/2)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., L, D/2) each
    out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., L, D/2, 2)
    return out.flatten(-2)  # (..., L, D)
