"""Rounded numbers for printing: the same digits on every device, and never ``-0.0``."""

from __future__ import annotations

import torch

from attnlib.util._checks import check_int

__all__ = ["rounded"]


def rounded(x, decimals: int = 4):
    """Round a tensor (any device/dtype) or number for printing.

    Values are moved to the CPU as float64, rounded half-to-even to ``decimals`` places, and
    ``-0.0`` is turned into ``0.0`` so that tiny negative rounding noise prints as ``0.0``.

    Args:
        x: a tensor, or a Python number.
        decimals: digits after the decimal point (>= 0).

    Returns:
        A float (0-d tensor or number) or nested lists of floats (tensor of any shape).
    """
    check_int("decimals", decimals, min=0)
    if isinstance(x, torch.Tensor):
        t = x.detach().to(device="cpu", dtype=torch.float64)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        t = torch.tensor(float(x), dtype=torch.float64)
    else:
        raise TypeError(f"x must be a tensor or a number, got {type(x).__name__}")
    return (torch.round(t, decimals=decimals) + 0.0).tolist()
