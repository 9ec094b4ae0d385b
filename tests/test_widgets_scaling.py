"""Tests for the scaling explorer (attnlib.widgets.explorers.scaling) and its key figure."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.widgets.explorers.scaling import SCALES, WIDTHS, scaling_explorer


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
    q_many = torch.randn(256, 1024, generator=g, dtype=torch.float64)
    k_many = torch.randn(num_keys, 1024, generator=g, dtype=torch.float64)
    return q_pool, k_pool, q_row, keys, q_many, k_many


_FACTOR = {"1": lambda d: 1.0, "1/√d_k": lambda d: 1 / math.sqrt(d), "1/d_k": lambda d: 1 / d}


def test_defaults_and_both_sliders_play(explorer):
    assert explorer.values() == {"d_k": 256, "scale": "1", "fixed_axis": False}
    assert list(explorer.controls["d_k"].options) == list(WIDTHS) == [2**e for e in range(11)]
    assert list(explorer.controls["scale"].options) == list(SCALES) == ["1", "1/√d_k", "1/d_k"]
    assert explorer.groups == [("d_k", "scale")]  # both sliders play in the browser (33 frames)


@pytest.mark.parametrize(
    "d_k,scale", [(1, "1"), (16, "1/√d_k"), (256, "1"), (1024, "1/√d_k"), (64, "1/d_k")]
)
def test_c06_row_matches_torch_softmax(explorer, d_k, scale):
    state = explorer.state(d_k=d_k, scale=scale)
    _, _, q_row, keys, _, _ = _reference_draws()
    z = q_row[:, :d_k] @ keys[:, :d_k].T * _FACTOR[scale](d_k)  # (1, S)
    a = torch.softmax(z, dim=-1)[0]
    heights = explorer.compute(d_k=d_k, scale=scale).arrays["row"]  # the bars drawn
    # float64 both: scores are sums of d_k <= 1024 products of N(0, 1) draws, rounded by at most
    # d_k u sum|q_i k_i| (<= 1024 x 1.1e-16 x ~700 < 1e-10) before any scale <= 1; exp turns that
    # into a relative change of the same size in each weight: rtol 1e-9 (atol 1e-12 for the
    # weights that underflow to ~0).
    np.testing.assert_allclose(heights, a.numpy(), rtol=1e-9, atol=1e-12)
    assert state["row: max weight"] == pytest.approx(a.max().item())
    assert state["row: entropy (nats)"] == pytest.approx(
        torch.distributions.Categorical(probs=a).entropy().item()
    )
    jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z[0])
    assert state["row: ||J||_F"] == pytest.approx(torch.linalg.norm(jac).item())


def test_common_random_numbers_agree_exactly_at_width_one(explorer):
    # at d_k = 1 all three factors are 1: the same draws must give the same numbers, bit for bit
    states = [explorer.state(d_k=1, scale=s) for s in SCALES]
    assert states[0] == states[1] == states[2]


def test_mean_curves_match_an_independent_average(explorer):
    _, _, _, _, q_many, k_many = _reference_draws()
    for scale in SCALES:
        for d_k in (2, 128):
            a = torch.softmax(
                q_many[:, :d_k] @ k_many[:, :d_k].T * _FACTOR[scale](d_k), dim=-1
            )  # (L, S)
            ent = torch.distributions.Categorical(probs=a).entropy().mean().item()
            # ||J||_F^2 = sum_j a_j^2 (1 - a_j)^2 + sum_{j != r} a_j^2 a_r^2
            #           = sum_j a_j^2 - 2 sum_j a_j^3 + (sum_j a_j^2)^2
            s2, s3 = (a**2).sum(-1), (a**3).sum(-1)
            jn = (s2 - 2 * s3 + s2**2).sqrt().mean().item()
            state = explorer.state(d_k=d_k, scale=scale)
            assert state["256 rows: mean entropy"] == pytest.approx(ent, rel=1e-9)
            assert state["256 rows: mean ||J||_F"] == pytest.approx(jn, rel=1e-9)
            top = a.max(dim=-1).values.mean().item()
            assert state["256 rows: mean max weight"] == pytest.approx(top, rel=1e-9)
            line = np.asarray(explorer.compute(d_k=d_k, scale=scale).arrays["mean_top"])
            np.testing.assert_allclose(line[:, 1], top, rtol=1e-9)  # the dashed line drawn


@pytest.mark.parametrize("d_k", [4, 64, 1024])
def test_c05_sampled_variance_matches_pairs_and_theory(explorer, d_k):
    q_pool, k_pool, _, _, _, _ = _reference_draws()
    dots = (q_pool[:, :d_k].double() * k_pool[:, :d_k].double()).sum(-1)  # (N,)
    raw = explorer.state(d_k=d_k, scale="1")
    assert raw["Var(score), sampled"] == pytest.approx(dots.var().item(), rel=1e-9)
    assert raw["Var(score), theory"] == d_k
    # 2000 pairs: the standard error is about d_k * sqrt(2 / 2000) ≈ 0.032 d_k
    # (0.063 d_k at d_k = 1).
    assert abs(raw["Var(score), sampled"] - d_k) < 4 * 0.035 * d_k
    for scale, c in (("1/√d_k", 1 / math.sqrt(d_k)), ("1/d_k", 1 / d_k)):
        st = explorer.state(d_k=d_k, scale=scale)
        assert st["Var(score), sampled"] == pytest.approx(
            raw["Var(score), sampled"] * c * c, rel=1e-9
        )
        assert st["Var(score), theory"] == pytest.approx(d_k * c * c, rel=1e-12)
        assert st["scale factor"] == pytest.approx(c, rel=1e-12)


@pytest.mark.parametrize(
    "d_k,scale", [(1, "1"), (64, "1"), (1024, "1"), (64, "1/√d_k"), (1024, "1/d_k")]
)
def test_histogram_follows_the_setting_and_clips_nothing(explorer, d_k, scale):
    q_pool, k_pool, _, _, _, _ = _reference_draws()
    c = _FACTOR[scale](d_k)
    scores = (q_pool[:, :d_k].double() * k_pool[:, :d_k].double()).sum(-1).numpy() * c  # (N,)
    frame = explorer.compute(d_k=d_k, scale=scale)
    bars = explorer.scene.panels[0].artists[0]
    centres, width = np.asarray(bars.x), bars.width  # in units of the half-range R
    R = 5 * math.sqrt(d_k) * c
    ytop = float(frame.texts["y4"].replace("−", "-"))
    density = np.asarray(frame.arrays["hist"]) * ytop  # per unit of score
    inside = np.abs(scores) <= R
    # the bars hold exactly the scores inside ±R (none clipped into the end bins);
    # the rest is counted
    assert np.sum(density * width * R) == pytest.approx(inside.mean(), rel=1e-9)
    assert frame.readout["scores beyond ±5 sd (of N)"] == int((~inside).sum())
    assert np.asarray(frame.arrays["hist"]).max() <= 1.0  # the y-limit is set per setting
    assert np.asarray(frame.arrays["hist"]).max() > 0.5
    sd = np.sqrt(np.sum(density * width * R * (centres * R) ** 2) / inside.mean())
    assert sd == pytest.approx(
        np.sqrt(np.mean(scores[inside] ** 2)), rel=0.02
    )  # bin-centre rounding
    pdf = np.asarray(frame.arrays["pdf"])  # the normal density of variance d_k c^2
    var = d_k * c * c
    np.testing.assert_allclose(
        pdf[:, 1] * ytop,
        np.exp(-0.5 * (pdf[:, 0] * R) ** 2 / var) / math.sqrt(2 * math.pi * var),
        rtol=1e-6,
    )
    assert frame.texts["x4"] == f"{R:.3g}"


def _phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@pytest.mark.parametrize("scale,half", [("1", 160.0), ("1/√d_k", 5.0), ("1/d_k", 5.0)])
def test_fixed_axis_shows_the_spread_change(explorer, scale, half):
    """With the x-axis fixed per factor, the bars hold the scores inside it, the curve is the
    normal's expected bin density, and the raw scores visibly widen (the 1/d_k ones narrow)."""
    q_pool, k_pool, _, _, _, _ = _reference_draws()
    bars = explorer.scene.panels[0].artists[0]
    centres, width = np.asarray(bars.x), bars.width  # in units of the half-range
    spread = []
    for d_k in (1, 16, 1024):
        c = _FACTOR[scale](d_k)
        scores = (q_pool[:, :d_k].double() * k_pool[:, :d_k].double()).sum(-1).numpy() * c
        frame = explorer.compute(d_k=d_k, scale=scale, fixed_axis=True)
        assert frame.readout["histogram half-range"] == pytest.approx(half, rel=1e-12)
        assert frame.texts["x4"] == f"{half:.3g}" and "fixed" in frame.texts["axis"]
        ytop = float(frame.texts["y4"].replace("−", "-"))
        density = np.asarray(frame.arrays["hist"]) * ytop
        counts = np.histogram(scores, bins=np.linspace(-half, half, len(centres) + 1))[0]
        # a share of counts (<= 1) rebuilt from the bar height times two float64 factors: three
        # roundings of numbers <= 1, < 1e-15; 1e-12 leaves room (one score in another bin: 1/N)
        np.testing.assert_allclose(density * width * half, counts / len(scores), atol=1e-12)
        pdf = np.asarray(frame.arrays["pdf"])
        sd = math.sqrt(d_k) * c
        for u, y in pdf[1::4]:  # points inside a bin (every 4th point lies on an edge)
            j = min(int((u + 1) / width), len(centres) - 1)
            lo, hi = (-1 + j * width) * half, (-1 + (j + 1) * width) * half
            expected = (_phi(hi / sd) - _phi(lo / sd)) / (hi - lo)
            assert y * ytop == pytest.approx(expected, rel=1e-9, abs=1e-15)
        spread.append(np.mean(density * width * half * np.abs(centres)))  # mean |u| of the bars
    if scale == "1":
        assert spread[0] < spread[1] < spread[2]
    elif scale == "1/d_k":
        assert spread[0] > spread[1] > spread[2]
    follow = explorer.compute(d_k=1024, scale=scale, fixed_axis=False)
    assert follow.readout["histogram half-range"] == pytest.approx(
        5 * math.sqrt(1024) * _FACTOR[scale](1024), rel=1e-12
    )


def test_c06_entropy_curves_and_marker(explorer):
    lines = [a for a in explorer.scene.panels[2].artists if type(a).__name__ == "Line" and a.label]
    raw, scl, lin = (np.asarray(line.xy)[:, 1] for line in lines)
    assert np.all(np.diff(raw) < 0), raw  # unscaled: sharper at every doubling
    assert np.ptp(scl) < 0.3 and raw[-1] < 0.25 < 2.0 < scl.min()
    assert lin[-1] == pytest.approx(math.log(16), abs=1e-3)  # 1/d_k over-flattens: entropy -> log S
    assert raw[0] == scl[0] == lin[0]
    marker = explorer.compute(d_k=32, scale="1").arrays["m_ent"]
    assert marker[0][0] == 5 and marker[0][1] == pytest.approx(raw[5])


def test_c14_jacobian_curve_rises_then_falls(explorer):
    lines = [a for a in explorer.scene.panels[3].artists if type(a).__name__ == "Line" and a.label]
    raw, _, lin = (np.asarray(line.xy)[:, 1] for line in lines)
    assert raw.max() > raw[0] and raw[-1] < 0.1  # the rise before the fall
    assert lin[-1] == pytest.approx(math.sqrt(15) / 16, abs=1e-3)  # uniform row of 16


def test_picture_follows_the_width(explorer):
    before = explorer.compute(d_k=2, scale="1")
    after = explorer.compute(d_k=512, scale="1")
    assert before.texts["x4"] != after.texts["x4"]
    header, buffers = explorer.frame_set(0)
    assert header["n"] == len(WIDTHS) * len(SCALES) and sum(map(len, buffers)) < 200_000


def test_bad_arguments():
    with pytest.raises(ValueError, match="power of 2"):
        scaling_explorer(d_k=3)
    with pytest.raises(ValueError, match="scale"):
        scaling_explorer(scale="2")
    with pytest.raises(ValueError, match="num_keys"):
        scaling_explorer(num_keys=1)
    with pytest.raises(ValueError, match="num_pairs"):
        scaling_explorer(num_pairs=10)
    with pytest.raises(ValueError, match="fixed_axis"):
        scaling_explorer(fixed_axis="yes")


def test_scaling_figure_functions_draw_the_tables():
    from matplotlib.figure import Figure

    from attnlib.course.scaling import dot_product_variance, softmax_sharpness
    from attnlib.figures.scaling import scaling_variance_figure
    from attnlib.plotting import sharpness_curves, variance_errorbars

    g = torch.Generator().manual_seed(0)
    table = dot_product_variance([1, 8, 64], 500, generator=g)
    fig = Figure()
    ax1, ax2, ax3 = fig.subplots(1, 3)
    bars = variance_errorbars(table, ax1)
    d = np.array([1.0, 8.0, 64.0])
    np.testing.assert_allclose(bars.lines[0].get_ydata(), table.variance.numpy() / d)
    np.testing.assert_allclose(
        table.variance_scaled.numpy(), table.variance.numpy() / d, rtol=1e-12
    )
    lo, hi = ax1.get_ylim()
    # a linear axis centred on 1 that holds every ±2 SE bar
    assert ax1.get_yscale() == "linear" and (lo + hi) / 2 == pytest.approx(1.0)
    ratio, se = table.variance.numpy() / d, table.stderr.numpy() / d
    assert lo < (ratio - 2 * se).min() and (ratio + 2 * se).max() < hi
    raw = softmax_sharpness([1, 8, 64], scaled=False, generator=torch.Generator().manual_seed(1))
    scl = softmax_sharpness([1, 8, 64], scaled=True, generator=torch.Generator().manual_seed(1))
    lines = sharpness_curves(raw, scl, [ax2, ax3])
    np.testing.assert_allclose(lines[0].get_ydata(), raw.entropy.numpy())
    np.testing.assert_allclose(lines[3].get_ydata(), scl.max_weight.numpy())
    assert lines[0].axes is ax2 and lines[3].axes is ax3
    # common random numbers: at d_k = 1 the scale is 1, so the two columns agree exactly
    assert raw.entropy[0].item() == scl.entropy[0].item()
    assert len(scaling_variance_figure().axes) == 3


@pytest.mark.parametrize(
    "d_k,scale,fixed", [(256, "1", False), (1, "1", False), (1, "1", True), (1024, "1/d_k", True)]
)
def test_picture_titles_legend_and_axis_text_readable(d_k, scale, fixed):
    """Every title lies inside the picture; in the histogram the legend overlaps neither the
    axis text nor the tallest bar (it sat on the peak and hid the axis text before)."""
    ex = scaling_explorer(d_k=d_k, scale=scale, fixed_axis=fixed)
    fig = ex.figure()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        if ax.get_title():
            t = ax.title.get_window_extent(renderer)
            assert fig.bbox.x0 <= t.x0 and t.x1 <= fig.bbox.x1, ax.get_title()
    hist = fig.axes[0]
    legend = hist.get_legend().get_window_extent(renderer)
    axis_text = next(t for t in hist.texts if t.get_text().startswith("x-axis"))
    assert not legend.overlaps(axis_text.get_window_extent(renderer))
    tallest = max(p.get_height() for p in hist.patches)  # in axes-data units, y-limit 1
    peak_px = hist.transData.transform((0.0, tallest))[1]
    assert peak_px < legend.y0 and peak_px < axis_text.get_window_extent(renderer).y0
