"""masked_softmax and its Jacobian (C08, C12-C14, C21, C25) against torch, autograd and float64."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from attnlib import masked_softmax, softmax_jacobian

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def test_c08_shift_invariance_and_no_overflow(device):
    z = torch.randn(3, 7, device=device, dtype=torch.float64)
    assert_close(masked_softmax(z + 123.0), masked_softmax(z))
    big = torch.tensor([1000.0, 999.0, 990.0], device=device)  # float32
    naive = torch.exp(big) / torch.exp(big).sum()
    assert torch.isnan(naive).all()  # exp(1000) = inf in float32, inf/inf = NaN
    stable = masked_softmax(big)
    exact = torch.softmax(big.double() - 1000.0, -1).float()
    assert torch.isfinite(stable).all()
    assert_close(stable, exact)


@pytest.mark.parametrize("dtype", FLOATS)
def test_c12_fully_masked_row_zero_in_every_dtype(device, dtype):
    scores = torch.randn(2, 3, 4, device=device).to(dtype)
    mask = torch.ones(3, 4, dtype=torch.bool, device=device)
    mask[1] = False
    weights = masked_softmax(scores, mask)
    assert weights.dtype == dtype
    assert torch.all(weights[:, 1] == 0)
    # Four weights in [0, 1], each rounded to dtype (bfloat16: 8 bits, u = 2**-8 = 3.9e-3), summed
    # in float32: |sum - 1| <= 4 u (+ the softmax's own rounding, also ~u): < 1e-2 in every dtype.
    assert_close(weights[:, 0].float().sum(-1), torch.ones(2, device=device), atol=1e-2, rtol=0)
    # A float mask of -inf everywhere on a row is the same "nothing visible" case.
    fmask = torch.zeros(3, 4, device=device, dtype=dtype)
    fmask[2] = float("-inf")
    assert torch.all(masked_softmax(scores, fmask)[:, 2] == 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_c12_large_negative_sentinel_is_not_equivalent_across_dtypes(device, dtype):
    row = torch.zeros(4, device=device, dtype=dtype)
    with torch.no_grad():
        plain_inf = torch.softmax(row + float("-inf"), -1)
        sentinel = torch.softmax(row.float().add(-1e9).to(dtype), -1)  # all equal: uniform
    assert torch.isnan(plain_inf).all()  # undefined: 0/0
    if dtype == torch.float16:
        assert torch.isinf(torch.tensor(-1e9).to(dtype))  # -1e9 overflows to -inf in float16
    else:
        assert_close(sentinel.float(), torch.full((4,), 0.25, device=device))
    ours = masked_softmax(row[None], torch.zeros(1, 4, dtype=torch.bool, device=device))
    assert torch.all(ours == 0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("value", [1e4, -1e4])
def test_huge_logits_finite_and_correct(device, dtype, value):
    scores = torch.tensor([[value, 0.0, -value, value / 2]], device=device, dtype=dtype)
    weights = masked_softmax(scores)
    assert torch.isfinite(weights).all()
    expected = torch.softmax(scores.double(), -1).to(dtype)
    assert_close(weights, expected)


def test_c13_jacobian_closed_form_matches_autograd(device):
    z = torch.randn(6, device=device, dtype=torch.float64)
    a = masked_softmax(z)
    jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z)
    assert_close(softmax_jacobian(a), jac)
    assert_close(softmax_jacobian(a).sum(-1), torch.zeros(6, device=device, dtype=torch.float64))
    # Raising one score lowers every other weight: off-diagonal entries are negative.
    off = softmax_jacobian(a)[~torch.eye(6, dtype=torch.bool, device=device)]
    assert torch.all(off < 0)


def test_c13_jacobian_batched(device):
    z = torch.randn(2, 3, 5, device=device, dtype=torch.float64)
    a = masked_softmax(z)
    jac = softmax_jacobian(a)
    assert jac.shape == (2, 3, 5, 5)
    for i in range(2):
        for j in range(3):
            ref = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z[i, j])
            assert_close(jac[i, j], ref)


def test_c14_saturated_row_has_tiny_jacobian(device):
    z = torch.tensor([1.0, 0.5, -0.3, 0.2], device=device, dtype=torch.float64)
    norms = [softmax_jacobian(masked_softmax(z * t)).abs().max().item() for t in (1, 10, 100)]
    assert norms[0] > norms[1] > norms[2]
    assert norms[2] < 1e-20  # near one-hot: a_j (1 - a_j) -> 0 for every j
    # Closed form for the winner: a (1 - a) with a = 1 / (1 + sum exp(-(z_max - z_r) t)).
    a = torch.softmax(z * 10, -1)
    assert_close(softmax_jacobian(a).diagonal(), a * (1 - a))


def test_c21_any_real_scores_give_weights_in_open_interval(device):
    scores = torch.randn(4, 6, device=device, dtype=torch.float64) * 5
    weights = masked_softmax(scores)
    assert torch.all(weights > 0) and torch.all(weights < 1)
    assert_close(weights.sum(-1), torch.ones(4, device=device, dtype=torch.float64))


def test_c25_valid_lens_per_row_and_per_query(device):
    scores = torch.randn(2, 3, 4, device=device, dtype=torch.float64)
    w1 = masked_softmax(scores, valid_lens=torch.tensor([2, 0], device=device))
    assert_close(
        w1[0],
        torch.softmax(scores[0, :, :2], -1)
        .new_zeros(3, 4)
        .index_copy(1, torch.arange(2, device=device), torch.softmax(scores[0, :, :2], -1)),
    )
    assert torch.all(w1[1] == 0)  # valid_len 0: all-zero, not a uniform row
    lens2 = torch.tensor([[1, 2, 4], [3, 0, 2]], device=device)
    w2 = masked_softmax(scores, valid_lens=lens2)
    for b in range(2):
        for i in range(3):
            n = int(lens2[b, i])
            expected = torch.zeros(4, device=device, dtype=torch.float64)
            if n:
                expected[:n] = torch.softmax(scores[b, i, :n], -1)
            assert_close(w2[b, i], expected)


def test_c25_valid_lens_with_heads_axis(device):
    scores = torch.randn(2, 5, 3, 4, device=device, dtype=torch.float64)  # (B, H, L, S)
    lens = torch.tensor([3, 1], device=device)
    w = masked_softmax(scores, valid_lens=lens)
    # By hand: batch row b, every head and query, softmax over its first lens[b] keys, zeros after.
    for b, n in enumerate(lens.tolist()):
        assert_close(w[b, ..., :n], torch.softmax(scores[b, ..., :n], -1))
        assert torch.all(w[b, ..., n:] == 0)


def test_valid_len_zero_gives_zero_rows_where_a_d2l_sentinel_gives_uniform_ones(device):
    # d2l's recipe (fill hidden scores with -1e6, then softmax) would give 1/3 on every key here;
    # the failure itself is torch's arithmetic, shown by the masking explorer (notebook 05).
    scores = torch.randn(1, 2, 3, device=device)
    assert torch.all(masked_softmax(scores, valid_lens=torch.tensor([0], device=device)) == 0)


def test_float_and_bool_masks_combine_with_valid_lens(device):
    scores = torch.randn(1, 3, 4, device=device, dtype=torch.float64)
    bias = torch.randn(3, 4, device=device, dtype=torch.float64)
    w = masked_softmax(scores, bias, valid_lens=torch.tensor([3], device=device))
    expected = torch.softmax((scores + bias)[..., :3], -1)
    assert_close(w[..., :3], expected)
    assert torch.all(w[..., 3] == 0)


def test_nan_scores_poison_their_row_unless_a_boolean_mask_hides_them(device):
    s = torch.tensor([[1.0, float("nan"), 2.0], [1.0, 2.0, 3.0]], device=device)
    clean = torch.softmax(s[1], -1)  # torch's own softmax of the NaN-free row
    w = masked_softmax(s)
    assert torch.isnan(w[0]).all()
    assert_close(w[1], clean)
    hide = torch.tensor([[True, False, True], [True, True, True]], device=device)
    w = masked_softmax(s, hide)  # a boolean mask replaces the hidden score: the NaN is ignored
    two = torch.softmax(s[0, [0, 2]], -1)
    assert_close(w[0], torch.stack([two[0], torch.zeros((), device=device), two[1]]))
    float_hide = torch.where(hide, 0.0, float("-inf"))
    assert torch.isnan(masked_softmax(s, float_hide)[0]).all()  # NaN + (-inf) is NaN
    lens = torch.tensor([1, 3], device=device)
    w = masked_softmax(
        s.unsqueeze(1), valid_lens=lens
    )  # (B, L=1, S); the NaN lies past row 0's length
    assert_close(w[0, 0], torch.tensor([1.0, 0.0, 0.0], device=device))


def test_never_writes_into_input(device):
    scores = torch.randn(2, 3, 4, device=device)
    before = scores.clone()
    masked_softmax(
        scores,
        torch.rand(3, 4, device=device) > 0.5,
        valid_lens=torch.tensor([1, 2], device=device),
    )
    assert torch.equal(scores, before)


def test_gradient_finite_with_fully_masked_rows(device):
    scores = torch.randn(3, 4, device=device, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, False, True, True], [False] * 4, [True] * 4], device=device)
    w = masked_softmax(scores, mask)
    (w * torch.randn_like(w)).sum().backward()
    assert torch.isfinite(scores.grad).all() and torch.all(scores.grad[1] == 0)
    assert torch.autograd.gradcheck(lambda s: masked_softmax(s, mask), (scores,))


@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 6),
    scale=st.floats(0.0, 1e4),
    dtype=st.sampled_from(FLOATS),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_property_weights_valid_for_any_mask_and_scale(rows, cols, scale, dtype, seed, data):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, cols, generator=g, dtype=torch.float64) * scale
    mask = torch.rand(rows, cols, generator=g) > data.draw(st.floats(0.0, 1.0))
    weights = masked_softmax(scores.to(dtype), mask).double()
    assert torch.isfinite(weights).all()
    assert torch.all(weights >= 0) and torch.all(weights[~mask] == 0)
    sums = weights.sum(-1)
    has_visible = mask.any(-1)
    tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6
    assert torch.all((sums[has_visible] - 1).abs() < tol)
    assert torch.all(sums[~has_visible] == 0)
    # Agrees with float64 softmax over the visible entries, computed independently.
    ref = torch.softmax(scores.to(dtype).double().masked_fill(~mask, -math.inf), -1)
    ref = torch.nan_to_num(ref, nan=0.0)
    assert torch.all((weights - ref).abs() < tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_c12_masked_softmax_steps_are_what_masked_softmax_computes(device, dtype):
    """The teaching helper's last step is masked_softmax's result bit for bit, and each step is
    what its docstring says, checked against float64 written out by hand."""
    from attnlib.core.softmax import masked_softmax_steps

    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 3, 4, generator=gen).to(device, dtype)  # (B, L, S)
    valid_lens = torch.tensor([[0, 2, 4], [1, 0, 3]], device=device)  # (B, L): two empty rows
    float_mask = torch.zeros(3, 4, device=device)
    float_mask[2] = float("-inf")  # a float mask that empties query 2 everywhere
    for kwargs in (
        dict(valid_lens=valid_lens),
        dict(attn_mask=float_mask),
        dict(attn_mask=valid_lens_mask_for(valid_lens)),
        dict(),
    ):
        steps = masked_softmax_steps(scores, **kwargs)
        ours = masked_softmax(scores, **kwargs)
        assert steps.weights.dtype == dtype
        assert torch.equal(steps.weights, ours)  # the same operations: identical bits
        # Independent reference in float64: hide, mark empty rows, softmax the visible entries.
        z = scores.double()
        if "valid_lens" in kwargs:
            hidden = ~valid_lens_mask_for(valid_lens)
        elif "attn_mask" in kwargs and kwargs["attn_mask"].dtype == torch.bool:
            hidden = ~kwargs["attn_mask"].expand_as(z)
        elif "attn_mask" in kwargs:
            hidden = torch.isneginf(kwargs["attn_mask"]).expand_as(z)
        else:
            hidden = torch.zeros_like(z, dtype=torch.bool)
        empty = hidden.all(dim=-1, keepdim=True)  # (B, L, 1)
        assert torch.equal(steps.empty, empty)
        assert torch.isneginf(steps.hidden[hidden.expand_as(z)]).all()
        assert torch.all(steps.guarded[empty.expand_as(z)] == 0)  # empty rows: every score 0
        S = z.shape[-1]
        uniform = torch.full_like(z, 1.0 / S)
        exp = torch.exp(z - z.masked_fill(hidden, -math.inf).amax(-1, keepdim=True)).masked_fill(
            hidden, 0.0
        )
        reference = torch.where(empty, uniform, exp / exp.sum(-1, keepdim=True).clamp_min(1e-300))
        # float32 softmax of O(1) logits: ~1e-7 relative; half precision scores were rounded on
        # input (the reference uses the same rounded scores) and computed in float32 too.
        assert_close(steps.softmax.double(), reference, atol=1e-6, rtol=1e-6)
        assert torch.all(steps.weights[empty.expand_as(z)] == 0)


def valid_lens_mask_for(valid_lens):
    """(B, L, S=4) True = key position < valid_len, written out with arange."""
    return torch.arange(4, device=valid_lens.device) < valid_lens[..., None]
