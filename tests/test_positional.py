"""Positions: permutation equivariance, X + P, the sinusoidal formula and offsets as rotations
(C29-C33).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from attnlib import (
    MultiHeadAttention,
    PositionalEncoding,
    offset_rotation,
    permute_tokens,
    sinusoidal_encoding,
    sinusoidal_frequencies,
)
from attnlib.positional import sinusoidal_pair


@given(
    seed=st.integers(0, 2**31 - 1), length=st.integers(2, 9), num_heads=st.sampled_from([1, 2, 4])
)
def test_c29_self_attention_is_permutation_equivariant(seed, length, num_heads):
    gen = torch.Generator().manual_seed(seed)
    mha = MultiHeadAttention(8, num_heads).double()
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
    x = torch.randn(2, length, 8, generator=gen, dtype=torch.float64)
    perm = torch.randperm(length, generator=gen)
    out, w = mha(x, x, x)
    out_p, w_p = mha(*(permute_tokens(x, perm),) * 3)
    # SA(PX) = P SA(X): the outputs move with the inputs (equivariant) ...
    assert_close(out_p, permute_tokens(out, perm))
    assert_close(w_p, w[:, :, perm][..., perm])
    # ... so a symmetric pooling afterwards (the mean over tokens) is invariant.
    assert_close(out_p.mean(dim=1), out.mean(dim=1))


def test_c29_positions_break_the_symmetry():
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    perm = torch.tensor([4, 2, 0, 1, 3])
    pe = PositionalEncoding(8, 16).double()
    out = mha(pe(x), pe(x), pe(x))[0]
    xp = pe(permute_tokens(x, perm))
    assert (mha(xp, xp, xp)[0] - permute_tokens(out, perm)).abs().max() > 1e-3


def test_c30_positions_are_added(device):
    pe = PositionalEncoding(6, 10).to(device)
    x = torch.randn(3, 7, 6, device=device)
    assert_close(pe(x), x + sinusoidal_encoding(7, 6, device=device))
    assert "pe" not in pe.state_dict()  # a constant, not a parameter or saved state


def test_c31_formula_closed_form():
    pe = sinusoidal_encoding(50, 10, dtype=torch.float64)
    for pos in range(50):
        for i in range(5):
            angle = pos / 10000 ** (2 * i / 10)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_c31_odd_width_and_other_base():
    pe = sinusoidal_encoding(4, 5, base=100.0, dtype=torch.float64)
    w = sinusoidal_frequencies(5, base=100.0, dtype=torch.float64)
    assert w.shape == (3,)
    assert_close(w, torch.tensor([1.0, 100 ** (-2 / 5), 100 ** (-4 / 5)], dtype=torch.float64))
    assert_close(pe[:, 4], torch.sin(torch.arange(4.0, dtype=torch.float64) * w[2]))


def test_c31_device_and_dtype_follow_arguments(device):
    pe = sinusoidal_encoding(3, 4, device=device, dtype=torch.float16)
    assert pe.device.type == device.type and pe.dtype == torch.float16


@pytest.mark.parametrize("k", [1, 3, 17, 250])
def test_c32_offset_is_a_rotation_for_every_frequency_and_position(k):
    d = 16
    pe = sinusoidal_encoding(400, d, dtype=torch.float64)  # (P, D)
    omegas = sinusoidal_frequencies(d, dtype=torch.float64)
    positions = torch.arange(0, 400 - k)
    for i, w in enumerate(omegas):
        pair = pe[positions][:, 2 * i : 2 * i + 2]  # (P', 2): (sin w pos, cos w pos)
        moved = pe[positions + k][:, 2 * i : 2 * i + 2]
        rot = offset_rotation(k, float(w))  # depends on k and w only, not on pos
        assert_close(pair @ rot.T, moved, atol=1e-10, rtol=0)


def test_c32_rotation_matrix_closed_form_and_group_law():
    r = offset_rotation(2.0, 0.25)
    c, s = math.cos(0.5), math.sin(0.5)
    assert_close(r, torch.tensor([[c, s], [-s, c]], dtype=torch.float64))
    assert_close(r @ r.T, torch.eye(2, dtype=torch.float64))  # a rotation: orthogonal ...
    assert torch.linalg.det(r).item() == pytest.approx(1.0)  # ... with determinant 1
    assert_close(offset_rotation(3, 0.25) @ offset_rotation(5, 0.25), offset_rotation(8, 0.25))
    batched = offset_rotation(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.1]))
    assert batched.shape == (2, 2, 2)


def test_c33_positions_beyond_a_training_length_can_be_computed():
    long = sinusoidal_encoding(5000, 32)
    assert_close(long[:100], sinusoidal_encoding(100, 32))  # the same table, only longer
    assert torch.isfinite(long).all() and long.abs().max() <= 1.0
    # Every position still gets its own code (no two rows alike) ...
    dists = torch.cdist(long[::50].double(), long[::50].double())
    assert (dists + torch.eye(100, dtype=torch.float64) * 10).min() > 1e-2
    # ... but a module built for a length refuses longer inputs instead of guessing.
    with pytest.raises(ValueError, match="max_positions=16"):
        PositionalEncoding(32, 16)(torch.zeros(1, 17, 32))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="num_positions must be >= 1"):
        sinusoidal_encoding(0, 8)
    with pytest.raises(ValueError, match="num_positions must be >= 1"):
        sinusoidal_encoding(-3, 8)
    with pytest.raises(ValueError, match="d_model must be >= 1"):
        sinusoidal_encoding(4, 0)
    with pytest.raises(TypeError, match="num_positions must be an int"):
        sinusoidal_encoding(4.0, 8)
    with pytest.raises(ValueError, match="base"):
        sinusoidal_encoding(4, 8, base=1.0)
    with pytest.raises(ValueError, match="max_positions must be >= 1"):
        PositionalEncoding(8, 0)
    with pytest.raises(ValueError, match="width 6"):
        PositionalEncoding(8, 4)(torch.zeros(1, 2, 6))
    with pytest.raises(ValueError, match="permutation"):
        permute_tokens(torch.zeros(3, 2), torch.tensor([0, 0, 1]))


def test_c31_sinusoidal_pair_is_a_column_pair_of_the_table():
    # closed form at two positions, then the table's columns 2i, 2i+1 at every position
    got = sinusoidal_pair(torch.tensor([0.0, 3.0]), 0.5)
    assert_close(
        got, torch.tensor([[0.0, 1.0], [math.sin(1.5), math.cos(1.5)]], dtype=torch.float64)
    )
    pe = sinusoidal_encoding(20, 8, dtype=torch.float64)  # (P, D)
    omegas = sinusoidal_frequencies(8, dtype=torch.float64)
    for i in range(4):
        assert_close(sinusoidal_pair(torch.arange(20), float(omegas[i])), pe[:, 2 * i : 2 * i + 2])
    assert sinusoidal_pair(2, 0.1).shape == (2,)
