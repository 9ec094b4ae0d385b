"""attnlib.core.pooling: toy data and attention pooling with named scores (claims C20–C23)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib import nadaraya_watson
from attnlib.core.pooling import (
    POOLING_SCORES,
    attention_pooling,
    fit_bandwidth,
    leave_one_out_pooling,
    pooling_scores,
    toy_function,
    toy_regression_data,
)


def test_toy_function_closed_form():
    x = torch.tensor([0.0, 1.0, 2.5], dtype=torch.float64)
    expected = [2 * math.sin(v) + v**0.8 for v in (0.0, 1.0, 2.5)]
    torch.testing.assert_close(toy_function(x), torch.tensor(expected, dtype=torch.float64))


def test_toy_function_rejects_negative_x():
    with pytest.raises(ValueError, match="x >= 0"):
        toy_function(torch.tensor([-1.0]))


def test_toy_regression_data_shapes_sorted_and_device_independent(device):
    g1 = torch.Generator().manual_seed(3)
    g2 = torch.Generator().manual_seed(3)
    x, y = toy_regression_data(40, generator=g1, device=device)
    x_cpu, y_cpu = toy_regression_data(40, generator=g2)
    assert x.shape == (40,) and y.shape == (40,) and x.device.type == device.type
    assert bool((x[1:] >= x[:-1]).all())
    assert 0 <= float(x.min()) and float(x.max()) < 5.0
    # the same seed gives the same numbers on every device
    torch.testing.assert_close(x.cpu(), x_cpu)
    torch.testing.assert_close(y.cpu(), y_cpu)


def test_toy_regression_data_noise_zero_is_the_function():
    x, y = toy_regression_data(
        10, noise=0.0, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    torch.testing.assert_close(y, toy_function(x))


@pytest.mark.parametrize("bad", [dict(n_train=0), dict(x_max=0.0), dict(noise=-1.0)])
def test_toy_regression_data_bad_input(bad):
    with pytest.raises(ValueError):
        toy_regression_data(**{"n_train": 5, **bad})


def test_c22_gaussian_pooling_equals_nadaraya_watson(device):
    x, y = toy_regression_data(40, generator=torch.Generator().manual_seed(0), device=device)
    xq = torch.linspace(0, 5, 7, device=device)
    for h in (0.2, 1.0, 2.5):
        pred, w = attention_pooling(xq, x, y, "gaussian", h)
        pred_ref, w_ref = nadaraya_watson(xq, x, y, bandwidth=h)
        torch.testing.assert_close(w, w_ref)
        torch.testing.assert_close(pred, pred_ref)


def test_c22_gaussian_weights_closed_form_and_nearer_keys_weigh_more():
    xk = torch.tensor([0.0, 0.5, 2.0, 4.0], dtype=torch.float64)
    yk = torch.tensor([1.0, -1.0, 3.0, 0.5], dtype=torch.float64)
    xq = torch.tensor([0.7], dtype=torch.float64)
    pred, w = attention_pooling(xq, xk, yk, "gaussian", 1.0)
    k = torch.exp(-0.5 * (0.7 - xk) ** 2)
    expected = k / k.sum()
    torch.testing.assert_close(w[0], expected)
    torch.testing.assert_close(pred[0], (expected * yk).sum())
    order = torch.argsort((0.7 - xk).abs())  # nearest first
    assert bool((w[0, order][:-1] > w[0, order][1:]).all())


def test_c20_positive_distance_favours_the_farthest_key():
    xk = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0])
    xq = torch.tensor([0.2])
    _, w_wrong = attention_pooling(xq, xk, xk, "distance (wrong)")
    _, w_right = attention_pooling(xq, xk, xk, "neg_euclidean")
    assert int(w_wrong.argmax()) == 4  # farthest
    assert int(w_right.argmax()) == 0  # nearest
    torch.testing.assert_close(w_wrong[0], torch.softmax((0.2 - xk).abs(), -1))


@pytest.mark.parametrize("score", POOLING_SCORES)
def test_c23_scores_match_their_closed_forms(score, device):
    xq = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64, device=device)
    xk = torch.tensor([0.0, 1.0, 3.0, -2.0], dtype=torch.float64, device=device)
    h = 0.7
    d = xq[:, None] - xk[None, :]
    expected = {
        "gaussian": -(d**2) / (2 * h * h),
        "neg_euclidean": -d.abs() / h,
        "dot": xq[:, None] * xk[None, :] / h,
        "scaled_dot": xq[:, None] * xk[None, :] / h,  # sqrt(1) = 1
        "cosine": torch.sign(xq)[:, None] * torch.sign(xk)[None, :] / h,
        "distance (wrong)": d.abs() / h,
    }[score]
    got = pooling_scores(xq, xk, score, h)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("score", POOLING_SCORES)
def test_c21_weights_are_probabilities_for_any_score(score):
    xq = torch.linspace(0, 5, 11)
    x, y = toy_regression_data(20, generator=torch.Generator().manual_seed(1))
    pred, w = attention_pooling(xq, x, y, score, 0.5)
    assert w.shape == (11, 20) and pred.shape == (11,)
    assert bool((w >= 0).all()) and bool((w <= 1).all())
    torch.testing.assert_close(w.sum(-1), torch.ones(11))
    # a weighted mean of the values lies between their min and max
    assert bool((pred >= y.min() - 1e-5).all()) and bool((pred <= y.max() + 1e-5).all())


def test_attention_pooling_vector_values():
    xk = torch.tensor([0.0, 1.0, 2.0])
    yk = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    pred, w = attention_pooling(torch.tensor([1.0, 1.5]), xk, yk, "neg_euclidean", 1.0)
    torch.testing.assert_close(pred, w @ yk)
    assert pred.shape == (2, 2)


def test_bad_inputs_name_the_argument():
    xk = torch.tensor([0.0, 1.0])
    with pytest.raises(ValueError, match="score must be one of"):
        pooling_scores(torch.tensor([0.0]), xk, "euclid")
    with pytest.raises(ValueError, match="bandwidth"):
        pooling_scores(torch.tensor([0.0]), xk, "gaussian", 0.0)
    with pytest.raises(TypeError, match="score must be a str"):
        pooling_scores(torch.tensor([0.0]), xk, 3)
    with pytest.raises(ValueError, match="q must be 0-d or 1-D"):
        pooling_scores(torch.zeros(2, 2), xk)
    with pytest.raises(TypeError, match="k must be a floating-point tensor"):
        pooling_scores(torch.tensor([0.0]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="v must be"):
        attention_pooling(torch.tensor([0.0]), xk, torch.zeros(3))


def test_kernel_regression_panels_draw_the_fits_and_weights():
    from matplotlib.figure import Figure

    from attnlib.plotting import kernel_regression_panels

    x, y = toy_regression_data(10, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    grid = torch.linspace(0, 5, 21, dtype=torch.float64)
    fits = {f"h = {h}": nadaraya_watson(grid, x, y, bandwidth=h)[0] for h in (0.2, 1.0)}
    _, w = nadaraya_watson(grid, x, y, bandwidth=0.2)
    fig = Figure()
    lines, im = kernel_regression_panels(x, y, grid, fits, w, fig.subplots(1, 2))
    assert len(lines) == 2
    np.testing.assert_allclose(lines[1].get_ydata(), fits["h = 1.0"].numpy())
    np.testing.assert_allclose(im.get_array(), w.numpy())
    with pytest.raises(ValueError, match="2 axes"):
        kernel_regression_panels(x, y, grid, fits, w, fig.subplots(1, 3))


def test_kernel_regression_figure_is_registered():
    from attnlib.figures import FIGURES
    from attnlib.figures.pooling import kernel_regression_figure

    assert FIGURES["kernel_regression"] is kernel_regression_figure
    fig = kernel_regression_figure()
    heat = np.asarray(fig.axes[1].collections[0].get_array()).reshape(
        101, 40
    )  # the weights mesh (G, S)
    np.testing.assert_allclose(heat.sum(axis=1), 1.0)  # each query's weights sum to 1


@pytest.mark.claim("C22")
def test_c22_leave_one_out_pooling_against_a_written_out_kernel(device):
    """Each prediction is the hand-written Gaussian kernel average of the *other* points."""
    x, y = toy_regression_data(12, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    sigma = 0.4
    pred = leave_one_out_pooling(x.to(device), y.to(device), sigma).cpu()
    for i in range(12):
        rest = torch.arange(12) != i
        k = torch.exp(-((x[i] - x[rest]) ** 2) / (2 * sigma**2))  # (S - 1,)
        assert pred[i].item() == pytest.approx(float((k * y[rest]).sum() / k.sum()), rel=1e-12)


def test_leave_one_out_pooling_is_differentiable_in_the_bandwidth():
    x, y = toy_regression_data(10, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    sigma = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: leave_one_out_pooling(x, y, s), (sigma,))


@pytest.mark.claim("C22")
def test_c22_fit_bandwidth_finds_the_grid_minimum_of_the_leave_one_out_error():
    """The learned σ minimises the leave-one-out MSE, found independently by a fine grid search
    over a hand-written leave-one-out loop.
    """
    x, y = toy_regression_data(40, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    sigma, losses = fit_bandwidth(x, y, init=1.0, steps=200, lr=0.1)
    assert len(losses) == 200 and losses[-1] < losses[0]

    def loo_mse(s):
        d2 = (x[:, None] - x[None, :]) ** 2
        k = torch.exp(-d2 / (2 * s**2)) * (1 - torch.eye(40, dtype=torch.float64))
        return float((((k @ y) / k.sum(1) - y) ** 2).mean())

    grid = np.arange(0.05, 2.0, 0.002)
    best = grid[np.argmin([loo_mse(s) for s in grid])]
    assert sigma == pytest.approx(best, abs=0.004)
    assert loo_mse(sigma) <= min(loo_mse(s) for s in grid) + 1e-7


def test_fit_bandwidth_bad_input():
    x, y = toy_regression_data(5, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="init"):
        fit_bandwidth(x, y, init=0.0)
    with pytest.raises(ValueError, match="same S"):
        leave_one_out_pooling(x, y[:3], 0.5)
    with pytest.raises(ValueError, match="bandwidth"):
        leave_one_out_pooling(x, y, -1.0)
