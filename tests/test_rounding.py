"""attnlib.util.rounding.rounded against Python's own round()."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.util.rounding import rounded


def test_rounded_matches_python_round(device):
    x = torch.tensor([[0.123456, -2.5e-5], [1.99996, 3.0]], device=device)
    got = rounded(x, 4)
    want = [[round(float(v), 4) + 0.0 for v in row] for row in x.double().cpu()]
    assert got == want
    assert math.copysign(1.0, got[0][1]) == 1.0  # -0.0 became 0.0


def test_rounded_scalars_and_half(device):
    assert rounded(torch.tensor(2.0 / 3.0, device=device), 3) == 0.667
    assert rounded(1 / 3, 2) == 0.33
    assert rounded(torch.tensor([0.5], dtype=torch.bfloat16, device=device), 1) == [0.5]
    assert (
        rounded(torch.tensor([float("nan")]), 2)[0] != rounded(torch.tensor([float("nan")]), 2)[0]
    )


def test_rounded_bad_input():
    with pytest.raises(ValueError, match="decimals"):
        rounded(torch.zeros(2), -1)
    with pytest.raises(TypeError, match="decimals must be an int"):  # a wrong type: TypeError
        rounded(torch.zeros(2), 1.5)
    with pytest.raises(TypeError, match="tensor or a number"):
        rounded("1.0")
