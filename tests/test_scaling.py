"""Tests for attnlib.course.scaling: the Var(q·k) experiment (C05) and softmax sharpness (C06,
C14)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.course.scaling import (
    dot_product_variance,
    entropy,
    jacobian_norm,
    max_weight,
    scores_for_widths,
    softmax_sharpness,
    spread_logits,
    variance_with_stderr,
)

WIDTHS = [1, 4, 16, 64, 256]


def _generator(device: torch.device, seed: int = 0) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


# --- row statistics -----------------------------------------------------------------------------


def test_entropy_matches_categorical(device):
    logits = torch.randn(5, 7, dtype=torch.float64, device=device)
    a = torch.softmax(logits, dim=-1)
    expected = torch.distributions.Categorical(probs=a).entropy()
    torch.testing.assert_close(entropy(a), expected)


def test_entropy_closed_forms():
    uniform = torch.full((8,), 1 / 8, dtype=torch.float64)
    onehot = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    assert entropy(uniform).item() == pytest.approx(math.log(8))
    assert entropy(onehot).item() == 0.0  # 0 log 0 = 0, no NaN


def test_max_weight_closed_forms():
    a = torch.tensor([[0.25, 0.25, 0.25, 0.25], [0.1, 0.7, 0.2, 0.0]])
    assert max_weight(a).tolist() == pytest.approx([0.25, 0.7])


def test_c14_jacobian_norm_matches_autograd():
    z = torch.tensor([[1.0, -0.5, 2.0, 0.3], [10.0, 0.0, -3.0, 1.0]], dtype=torch.float64)
    a = torch.softmax(z, dim=-1)
    for row in range(2):
        jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=-1), z[row])
        assert jacobian_norm(a[row]).item() == pytest.approx(torch.linalg.norm(jac).item())


def test_c14_jacobian_norm_vanishes_when_saturated():
    n = 6
    uniform = torch.full((n,), 1 / n, dtype=torch.float64)
    # J = (I - 11ᵀ/n)/n for a uniform row: ||J||_F = sqrt(n - 1) / n.
    assert jacobian_norm(uniform).item() == pytest.approx(math.sqrt(n - 1) / n)
    norms = [
        jacobian_norm(torch.softmax(beta * torch.arange(n, dtype=torch.float64), -1)).item()
        for beta in (1.0, 5.0, 20.0, 50.0)
    ]
    assert norms == sorted(norms, reverse=True)
    assert norms[-1] < 1e-10


def test_row_statistics_reject_bad_input():
    with pytest.raises(TypeError, match="weights"):
        entropy(torch.tensor([1, 0]))
    with pytest.raises(TypeError, match="weights"):
        jacobian_norm([0.5, 0.5])


# --- variance and its standard error ------------------------------------------------------------


def test_variance_with_stderr_matches_torch_var_and_normal_theory():
    g = _generator(torch.device("cpu"))
    x = 3.0 * torch.randn(4, 20_000, generator=g, dtype=torch.float64)
    var, se = variance_with_stderr(x)
    torch.testing.assert_close(var, x.var(dim=-1))
    # For normal data Var(s²) = 2σ⁴/(n-1): the estimate is within a few percent of that.
    expected = 9.0 * math.sqrt(2 / (20_000 - 1))
    assert torch.allclose(se, torch.full_like(se, expected), rtol=0.05)


def test_variance_stderr_matches_bootstrap():
    g = _generator(torch.device("cpu"))
    x = torch.randn(2_000, generator=g, dtype=torch.float64).exp()  # skewed: m4 matters
    _, se = variance_with_stderr(x)
    idx = torch.randint(0, x.numel(), (500, x.numel()), generator=g)
    boot = x[idx].var(dim=-1)
    assert se.item() == pytest.approx(boot.std().item(), rel=0.25)


def test_variance_with_stderr_rejects_one_sample():
    with pytest.raises(ValueError, match="at least 2"):
        variance_with_stderr(torch.ones(3, 1))


# --- C05: Var(q·k) = d_k ------------------------------------------------------------------------


def test_c05_dot_product_variance_is_d_k(device):
    table = dot_product_variance(WIDTHS, 8_000, generator=_generator(device), device=device)
    d = torch.tensor(WIDTHS, dtype=table.variance.dtype, device=device)
    assert table.d_k == WIDTHS and table.num_samples == 8_000
    assert table.variance.device.type == device.type
    # Within 4 standard errors of the closed form, and the SE is about d_k sqrt(2/n) (+ kurtosis).
    assert torch.all((table.variance - d).abs() < 4 * table.stderr)
    assert torch.all((table.variance_scaled - 1).abs() < 4 * table.stderr_scaled)
    theory_se = torch.sqrt((2 * d**2 + 6 * d) / 8_000)  # E[(q·k)^4] = 3d² + 6d
    torch.testing.assert_close(table.stderr, theory_se, rtol=0.15, atol=0.0)


def test_c05_scaled_is_unscaled_over_d_k():
    table = dot_product_variance([2, 32], 1_000, generator=_generator(torch.device("cpu")))
    torch.testing.assert_close(
        table.variance_scaled * torch.tensor([2.0, 32.0], dtype=torch.float64), table.variance
    )


def test_dot_product_variance_float64_samples_agree_with_theory():
    table = dot_product_variance(
        [3, 100], 6_000, generator=_generator(torch.device("cpu")), dtype=torch.float64
    )
    assert table.variance.dtype == torch.float64
    assert torch.all(
        (table.variance - torch.tensor([3.0, 100.0], dtype=torch.float64)).abs() < 4 * table.stderr
    )


def test_dot_product_variance_is_repeatable_and_chunk_sized():
    a = dot_product_variance(
        [8], 3_000, generator=_generator(torch.device("cpu"), 5), chunk_size=700
    )
    b = dot_product_variance(
        [8], 3_000, generator=_generator(torch.device("cpu"), 5), chunk_size=700
    )
    assert torch.equal(a.variance, b.variance)


def test_dot_product_variance_bad_input():
    with pytest.raises(ValueError, match="d_ks"):
        dot_product_variance([], 100)
    with pytest.raises(ValueError, match="d_k"):
        dot_product_variance([4, 0], 100)
    with pytest.raises(TypeError, match="d_k"):
        dot_product_variance([2.5], 100)
    with pytest.raises(ValueError, match="num_samples"):
        dot_product_variance([4], 1)
    with pytest.raises(TypeError, match="dtype"):
        dot_product_variance([4], 100, dtype=torch.int64)
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="generator"):
            dot_product_variance([4], 100, generator=torch.Generator(), device="cuda")


# --- C06: sharper rows without the scale --------------------------------------------------------


def test_scores_for_widths_matches_direct_products():
    g = _generator(torch.device("cpu"))
    q = torch.randn(3, 32, generator=g, dtype=torch.float64)
    k = torch.randn(5, 32, generator=g, dtype=torch.float64)
    s = scores_for_widths(q, k, [1, 8, 32], scaled=True)
    assert s.shape == (3, 3, 5)
    torch.testing.assert_close(s[1], (q[:, :8] @ k[:, :8].T) / math.sqrt(8))
    torch.testing.assert_close(scores_for_widths(q, k, [32], scaled=False)[0], q @ k.T)
    with pytest.raises(ValueError, match="width 64"):
        scores_for_widths(q, k, [64], scaled=True)


def test_c06_unscaled_rows_sharpen_with_d_k(device):
    widths = [1, 4, 16, 64, 256, 1024]
    table = softmax_sharpness(widths, scaled=False, generator=_generator(device), device=device)
    ent, top = table.entropy.cpu(), table.max_weight.cpu()
    assert torch.all(ent[1:] < ent[:-1]), ent
    assert torch.all(top[1:] > top[:-1]), top
    assert top[-1] > 0.9 and ent[-1] < 0.3  # near one-hot at d_k = 1024
    # C14: the Jacobian is far smaller once the rows saturate.
    assert table.jacobian_norm[-1] < 0.25 * table.jacobian_norm.max()


def test_c06_scaled_rows_keep_their_sharpness(device):
    widths = [4, 64, 1024]
    table = softmax_sharpness(
        widths, scaled=True, num_keys=16, generator=_generator(device), device=device
    )
    # Scaled scores are N(0, 1)-like at every width: entropy stays well above a near one-hot row.
    assert torch.all(table.entropy > 2.0) and torch.all(table.max_weight < 0.35)
    assert (table.entropy.max() - table.entropy.min()).item() < 0.2


def test_softmax_sharpness_matches_independent_softmax():
    widths = [2, 8]
    g = _generator(torch.device("cpu"), 3)
    table = softmax_sharpness(widths, scaled=False, num_keys=5, num_queries=7, generator=g)
    g = _generator(torch.device("cpu"), 3)
    q = torch.randn(7, 8, generator=g, dtype=torch.float64)
    k = torch.randn(5, 8, generator=g, dtype=torch.float64)
    for i, d in enumerate(widths):
        a = torch.softmax(q[:, :d] @ k[:, :d].T, dim=-1)
        assert table.max_weight[i].item() == pytest.approx(a.max(-1).values.mean().item())
        expected_entropy = torch.distributions.Categorical(probs=a).entropy().mean()
        assert table.entropy[i].item() == pytest.approx(expected_entropy.item())


# --- spread_logits -------------------------------------------------------------------------------


def test_spread_logits_sets_the_standard_deviation_and_keeps_the_softmax_order():
    z = torch.tensor([[2.0, 1.0, 0.2, -0.6, -1.5], [0.0, 3.0, 1.0, 1.0, -2.0]], dtype=torch.float64)
    out = spread_logits(z, 2.5)
    torch.testing.assert_close(
        out.std(dim=-1, unbiased=False), torch.full((2,), 2.5, dtype=torch.float64)
    )
    torch.testing.assert_close(out.mean(dim=-1), torch.zeros(2, dtype=torch.float64))
    # the same row up to a positive scale and a shift: softmax(out) = softmax(z * 2.5 / std)
    expected = torch.softmax(z * (2.5 / z.std(dim=-1, unbiased=False, keepdim=True)), dim=-1)
    torch.testing.assert_close(torch.softmax(out, -1), expected)
    assert torch.equal(spread_logits(z, 0.0), torch.zeros_like(z))


def test_spread_logits_bad_input():
    with pytest.raises(ValueError, match="spread"):
        spread_logits(torch.tensor([1.0, 2.0]), -1.0)
    with pytest.raises(ValueError, match="all equal"):
        spread_logits(torch.tensor([1.0, 1.0]), 1.0)
    with pytest.raises(TypeError, match="logits"):
        spread_logits(torch.tensor([1, 2]), 1.0)
