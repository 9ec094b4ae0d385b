"""Tests for the scaling explorer (attnlib.widgets.scaling) and its key picture (attnlib.figures.scaling)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.widgets import BUILDERS
from attnlib.widgets.scaling import WIDTHS, scaling_explorer


@pytest.fixture(scope="module")
def explorer():
    return scaling_explorer()


def _reference_draws(seed=0, num_pairs=2000, num_keys=16):
    """The builder's draws, repeated with an independent generator of the same seed."""
    g = torch.Generator().manual_seed(seed)
    q_pool = torch.randn(num_pairs, 1024, generator=g)
    k_pool = torch.randn(num_pairs, 1024, generator=g)
    q_row = torch.randn(1, 1024, generator=g, dtype=torch.float64)
    keys = torch.randn(num_keys, 1024, generator=g, dtype=torch.float64)
    return q_pool, k_pool, q_row, keys


def test_registered_and_callable_without_arguments(explorer):
    assert BUILDERS["scaling"] is scaling_explorer
    assert explorer.values() == {"d_k": 256, "scaled": False}
    assert list(explorer.controls["d_k"].options) == list(WIDTHS) == [2**e for e in range(11)]


@pytest.mark.parametrize("d_k,scaled", [(1, False), (16, True), (256, False), (1024, True)])
def test_c06_row_matches_torch_softmax(explorer, d_k, scaled):
    state = explorer.set(d_k=d_k, scaled=scaled)
    _, _, q_row, keys = _reference_draws()
    z = q_row[:, :d_k] @ keys[:, :d_k].T / (math.sqrt(d_k) if scaled else 1.0)  # (1, S)
    a = torch.softmax(z, dim=-1)[0]
    heights = explorer.frame().arrays["row"]  # the bars drawn
    np.testing.assert_allclose(heights, a.numpy(), rtol=1e-9, atol=1e-12)
    assert state["max weight"] == pytest.approx(a.max().item())
    assert state["entropy (nats)"] == pytest.approx(torch.distributions.Categorical(probs=a).entropy().item())
    jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z[0])
    assert state["Jacobian norm ||J||_F"] == pytest.approx(torch.linalg.norm(jac).item())


@pytest.mark.parametrize("d_k", [4, 64, 1024])
def test_c05_sampled_variance_matches_pairs_and_theory(explorer, d_k):
    q_pool, k_pool, _, _ = _reference_draws()
    dots = (q_pool[:, :d_k].double() * k_pool[:, :d_k].double()).sum(-1)  # (N,)
    raw = explorer.set(d_k=d_k, scaled=False)
    assert raw["Var(score), sampled"] == pytest.approx(dots.var().item(), rel=1e-4)
    assert raw["Var(score), theory"] == d_k
    # 2000 pairs: the standard error is about d_k * sqrt(2 / 2000) ≈ 0.032 d_k.
    assert abs(raw["Var(score), sampled"] - d_k) < 4 * 0.035 * d_k
    scaled = explorer.set(scaled=True)
    assert scaled["Var(score), sampled"] == pytest.approx(raw["Var(score), sampled"] / d_k, rel=1e-9)
    assert scaled["Var(score), theory"] == 1.0


def test_histogram_is_a_density_and_follows_the_setting(explorer):
    explorer.set(d_k=64, scaled=False)
    frame = explorer.frame()
    panel = explorer.scene.panels[0]
    bars = panel.artists[0]
    centres, width = np.asarray(bars.x), bars.width
    values = np.asarray(frame.arrays["hist"])
    assert np.sum(values * width) == pytest.approx(1.0)
    wide = np.sqrt(np.sum(values * width * centres**2))
    narrow_values = np.asarray(explorer.compute(scaled=True).arrays["hist"])
    narrow = np.sqrt(np.sum(narrow_values * width * centres**2))
    assert wide == pytest.approx(8.0, rel=0.1) and narrow == pytest.approx(1.0, rel=0.1)
    # the theory curve is the normal density of variance d_k (unscaled) or 1
    pdf = np.asarray(frame.arrays["pdf"])
    np.testing.assert_allclose(pdf[:, 1], np.exp(-0.5 * pdf[:, 0] ** 2 / 64) / math.sqrt(2 * math.pi * 64),
                               rtol=1e-12)


def test_c06_entropy_curves_and_marker(explorer):
    lines = [a for a in explorer.scene.panels[2].artists if type(a).__name__ == "Line" and a.label]
    raw, scl = (np.asarray(line.xy)[:, 1] for line in lines)
    assert np.all(np.diff(raw) < 0), raw  # unscaled: sharper at every doubling
    assert np.ptp(scl) < 0.3 and raw[-1] < 0.25 < 2.0 < scl.min()
    marker = explorer.compute(d_k=32, scaled=False).arrays["marker"]
    assert marker[0][0] == 5 and marker[0][1] == pytest.approx(raw[5])


def test_picture_follows_the_width(explorer):
    before = explorer.compute(d_k=2, scaled=False)
    after = explorer.compute(d_k=512, scaled=False)
    assert not np.array_equal(before.arrays["hist"], after.arrays["hist"])
    assert explorer.groups == [("d_k",)]  # the slider plays in the browser; the toggle recomputes
    header, buffers = explorer.frame_set(0)
    assert header["n"] == len(WIDTHS) and sum(map(len, buffers)) < 100_000


def test_bad_arguments():
    with pytest.raises(ValueError, match="power of 2"):
        scaling_explorer(d_k=3)
    with pytest.raises(ValueError, match="num_keys"):
        scaling_explorer(num_keys=1)
    with pytest.raises(ValueError, match="num_pairs"):
        scaling_explorer(num_pairs=10)


def test_scaling_figure_functions_draw_the_tables():
    from matplotlib.figure import Figure

    from attnlib.figures.scaling import scaling_variance_figure
    from attnlib.plotting import sharpness_curves, variance_errorbars
    from attnlib.scaling import dot_product_variance, softmax_sharpness

    g = torch.Generator().manual_seed(0)
    table = dot_product_variance([1, 8, 64], 500, generator=g)
    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    unscaled, scaled = variance_errorbars(table, ax1)
    np.testing.assert_allclose(unscaled.lines[0].get_ydata(), table.variance.numpy())
    np.testing.assert_allclose(scaled.lines[0].get_ydata(), table.variance_scaled.numpy())
    raw = softmax_sharpness([1, 8, 64], scaled=False, generator=g)
    scl = softmax_sharpness([1, 8, 64], scaled=True, generator=g)
    lines = sharpness_curves(raw, scl, ax2)
    np.testing.assert_allclose(lines[0].get_ydata(), raw.entropy.numpy())
    np.testing.assert_allclose(lines[3].get_ydata(), scl.max_weight.numpy())
    assert len(scaling_variance_figure().axes) == 2
