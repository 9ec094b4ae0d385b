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
from attnlib.core.positional import rotary_embedding, sinusoidal_pair


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
        # float64: sin/cos of angles w pos <= 400 rad are correct to ~ulp(400) = 6e-14 each, and
        # the rotation adds two products of numbers <= 1: < 1e-12 (1e-10 leaves room).
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


def test_rotary_embedding_is_complex_multiplication(device):
    # Independent reference: pair (a, b) as the complex number a + ib, times e^{i m w_i}.
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 7, 8, generator=gen, dtype=torch.float64)  # (B, H, L, D)
    m = torch.arange(7, dtype=torch.float64)
    w = torch.tensor([100.0 ** (-2 * i / 8) for i in range(4)], dtype=torch.float64)  # base 100
    turn = torch.polar(torch.ones(7, 4, dtype=torch.float64), m[:, None] * w[None])  # (L, D/2)
    want = torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 7, 4, 2)) * turn).flatten(-2)
    got = rotary_embedding(x.to(device), base=100.0)
    assert got.device.type == torch.device(device).type and got.dtype == torch.float64
    assert_close(got.cpu(), want)
    # explicit positions: the same as the default 0..L-1 when equal, and shifted otherwise
    assert_close(rotary_embedding(x, torch.arange(7), base=100.0), want)
    shifted = rotary_embedding(x, torch.arange(7) + 5, base=100.0)
    assert_close(
        shifted[..., :2, :],
        rotary_embedding(x[..., :2, :].clone(), torch.tensor([5, 6]), base=100.0),
    )
    assert_close(got.norm(dim=-1).cpu(), x.norm(dim=-1))  # rotations keep every token's norm


def test_rotary_embedding_scores_depend_on_the_offset_only():
    # rope(q, m)·rope(k, n) = a function of n - m: shift both positions and nothing changes
    gen = torch.Generator().manual_seed(4)
    q, k = torch.randn(2, 16, generator=gen, dtype=torch.float64)
    qs = rotary_embedding(q.expand(40, 16).clone())  # the same query at positions 0..39
    ks = rotary_embedding(k.expand(40, 16).clone())
    scores = qs @ ks.T  # (40, 40): scores[m, n]
    # float64: angles <= 39 rad (sin/cos to ~ulp(39) = 7e-15), scores are 16-term sums of
    # products of N(0, 1) draws: rounding ~16 x 3 x 7e-15 < 1e-12 absolute.
    for off in range(-39, 40):
        diag = scores.diagonal(off)
        assert_close(diag, diag[:1].expand_as(diag), atol=1e-12, rtol=0)
    # at offset 0 the rotations cancel: the plain dot product
    assert scores[9, 9].item() == pytest.approx(float(q @ k), abs=1e-12)
    # float32 input stays float32
    assert rotary_embedding(torch.zeros(3, 4)).dtype == torch.float32


def test_rotary_embedding_bad_input():
    with pytest.raises(ValueError, match="even feature width"):
        rotary_embedding(torch.zeros(4, 5))
    with pytest.raises(ValueError, match="4 real numbers"):
        rotary_embedding(torch.zeros(4, 6), torch.arange(3))
    with pytest.raises(TypeError, match="1-D tensor"):
        rotary_embedding(torch.zeros(4, 6), [0, 1, 2, 3])
    with pytest.raises(TypeError, match="floating-point"):
        rotary_embedding(torch.zeros(4, 6, dtype=torch.long))


def test_positional_encoding_of_a_float64_module_is_exact():
    # The table is built in float64, so .double() does not widen float32-rounded values.
    pe = PositionalEncoding(64, 2048).double()
    assert torch.equal(pe.pe, sinusoidal_encoding(2048, 64, dtype=torch.float64))
    x = torch.zeros(1, 2048, 64, dtype=torch.float64)
    assert torch.equal(pe(x)[0], sinusoidal_encoding(2048, 64, dtype=torch.float64))
