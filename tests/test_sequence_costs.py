"""attnlib.figures.sequence_costs: fitted slopes, the cost formulas, and the measured-cost panels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from attnlib.costs import CostRow
from attnlib.figures.sequence_costs import (fitted_slope, measured_cost_panels, sequence_costs_figure,
                                            theoretical_costs)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 1.5])
def test_fitted_slope_recovers_a_power_law(p):
    ns = [128, 256, 512, 1024]
    assert fitted_slope(ns, [3.0 * n**p for n in ns]) == pytest.approx(p, abs=1e-12)


def test_fitted_slope_against_numpy_polyfit_on_noisy_data():
    rng = np.random.default_rng(0)
    ns = np.array([100, 200, 400, 800, 1600])
    ys = ns**2 * np.exp(rng.normal(0, 0.1, ns.size))
    expected = np.polyfit(np.log(ns), np.log(ys), 1)[0]
    assert fitted_slope(ns, ys) == pytest.approx(expected, rel=1e-12)


def test_fitted_slope_bad_input():
    assert math.isnan(fitted_slope([1, 2], [1.0, float("nan")]))
    assert math.isnan(fitted_slope([1, 2], [1.0, 0.0]))
    with pytest.raises(ValueError, match="two different n"):
        fitted_slope([4, 4], [1.0, 2.0])
    with pytest.raises(ValueError, match="entries"):
        fitted_slope([1, 2, 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="> 0"):
        fitted_slope([0, 2], [1.0, 2.0])


def test_c41_theoretical_costs_follow_the_table():
    ns = [64, 512, 4096]
    c = theoretical_costs(ns, d_model=512, kernel_size=3, block_size=128)
    for n, cnn, rnn, att in zip(ns, c["compute"]["CNN"], c["compute"]["RNN"], c["compute"]["self-attention"]):
        assert cnn == 3 * n * 512**2 and rnn == n * 512**2 and att == n * n * 512
    # attention equals the RNN exactly at n = d
    assert c["compute"]["self-attention"][1] == c["compute"]["RNN"][1]
    assert list(c["memory"]["self-attention"]) == [4 * n * n for n in ns]
    assert list(c["memory"]["blockwise attention"]) == [4 * n * min(128, n) for n in ns]
    assert list(c["memory"]["RNN / CNN output"]) == [4 * n * 512 for n in ns]
    # growth rates: n^2 for full attention, n for blockwise (once n >= block)
    assert fitted_slope(ns[1:], c["memory"]["self-attention"][1:]) == pytest.approx(2.0)
    assert fitted_slope(ns[1:], c["memory"]["blockwise attention"][1:]) == pytest.approx(1.0)


def test_measured_cost_panels_draw_every_row():
    rows = [CostRow(layer, n, 1e-3 * n / 256, float(4 * n * (n if layer == "self-attention" else 64)), 0, 0)
            for n in (256, 512, 1024) for layer in ("self-attention", "RNN", "CNN")]
    fig = Figure()
    axes = fig.subplots(1, 2)
    lines = measured_cost_panels(rows, axes)
    assert set(lines) == {(l, k) for l in ("self-attention", "RNN", "CNN") for k in ("time", "memory")}
    x, y = lines["self-attention", "memory"].get_data()
    assert list(x) == [256, 512, 1024]
    np.testing.assert_allclose(y, [4 * n * n / 2**20 for n in (256, 512, 1024)])
    assert axes[0].get_xscale() == "log" and axes[1].get_yscale() == "log"


def test_registered_figure_builds():
    fig = sequence_costs_figure()
    assert len(fig.axes) == 2
