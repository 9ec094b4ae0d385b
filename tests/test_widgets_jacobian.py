"""Tests for the Jacobian explorer (attnlib.widgets.jacobian) and its key picture (attnlib.figures.jacobian)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.examples import DEFAULT_LOGITS
from attnlib.widgets import BUILDERS
from attnlib.widgets.base import figure_backend
from attnlib.widgets.jacobian import jacobian_explorer


@pytest.fixture(scope="module")
def explorer():
    with figure_backend("agg"):
        return jacobian_explorer()


def _reference(spread, logits=DEFAULT_LOGITS):
    z = torch.tensor(logits, dtype=torch.float64)
    z = (z - z.mean()) / z.std(unbiased=False) * spread
    jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z)
    return z, torch.softmax(z, -1), jac


def test_registered_and_callable_without_arguments(explorer):
    assert BUILDERS["jacobian"] is jacobian_explorer
    assert explorer.values() == {"spread": 1.0}


@pytest.mark.parametrize("spread", [0.0, 0.3, 1.0, 2.5, 10.0])
def test_c13_jacobian_matches_autograd(explorer, spread):
    state = explorer.set(spread=spread)
    z, a, jac = _reference(spread)
    np.testing.assert_allclose(state["logits z"], z.numpy(), atol=1e-12)
    np.testing.assert_allclose(state["weights a"], a.numpy(), atol=1e-12)
    np.testing.assert_allclose(state["J (row j = a_j)"], jac.numpy(), atol=1e-12)
    np.testing.assert_allclose(state["row sums of J"], 0.0, atol=1e-12)
    assert state["‖J‖_F"] == pytest.approx(torch.linalg.norm(jac).item(), abs=1e-12)
    assert state["largest |J_jr|"] == pytest.approx(jac.abs().max().item(), abs=1e-12)
    image = explorer.figure.axes[1].images[0]
    np.testing.assert_allclose(np.ma.getdata(image.get_array()), jac.numpy(), atol=1e-12)
    heights = [p.get_height() for p in explorer.figure.axes[0].patches]
    np.testing.assert_allclose(heights, a.numpy(), atol=1e-12)


def test_c14_norm_shrinks_as_the_row_saturates(explorer):
    uniform = explorer.set(spread=0.0)
    assert uniform["weights a"] == pytest.approx([0.2] * 5)
    assert uniform["‖J‖_F"] == pytest.approx(math.sqrt(4) / 5)  # (I - 11ᵀ/n)/n has norm sqrt(n-1)/n
    norms = [explorer.set(spread=s)["‖J‖_F"] for s in (2.0, 4.0, 6.0, 8.0, 10.0)]
    assert norms == sorted(norms, reverse=True) and norms[-1] < 1e-3
    marker = explorer.figure.axes[2].lines[-2]
    assert marker.get_xdata()[0] == 10.0 and marker.get_ydata()[0] == pytest.approx(norms[-1])


def test_colour_limits_fixed_and_figure_changes(explorer):
    explorer.set(spread=0.5)
    before = explorer.render()
    image = explorer.figure.axes[1].images[0]
    explorer.set(spread=7.0)
    assert image.get_clim() == (-0.25, 0.25)
    assert not np.array_equal(before, explorer.render())


def test_bad_arguments():
    with pytest.raises(ValueError, match="all equal"):
        jacobian_explorer(logits=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="2 to 8"):
        jacobian_explorer(logits=(1.0,))
    with pytest.raises(ValueError, match="spread"):
        jacobian_explorer(spread=11.0)


def test_jacobian_panels_draw_autograd_jacobians():
    from matplotlib.figure import Figure

    from attnlib.figures.jacobian import softmax_jacobian_figure
    from attnlib.plotting import jacobian_panels
    from attnlib.scaling import spread_jacobians

    fig = Figure()
    table = spread_jacobians([1.0, 0.0, -2.0], [0.5, 3.0])
    images = jacobian_panels(table, fig.subplots(1, 2))
    for i, (im, spread) in enumerate(zip(images, [0.5, 3.0])):
        _, a, jac = _reference(spread, (1.0, 0.0, -2.0))
        # float64 throughout: the entries agree to a few ulps of their size (<= 1/4)
        np.testing.assert_allclose(table.weights[i].numpy(), a.numpy(), atol=1e-12)
        np.testing.assert_allclose(np.ma.getdata(im.get_array()), jac.numpy(), atol=1e-12)
        assert float(table.norms[i]) == pytest.approx(float(torch.linalg.norm(jac)), abs=1e-12)
        assert im.get_clim() == (-0.25, 0.25)
    with pytest.raises(ValueError, match="axes"):
        jacobian_panels(spread_jacobians([1.0, 0.0], [1.0, 2.0]),
                        fig.subplots(1, 1, squeeze=False)[0])
    with pytest.raises(ValueError, match="spreads"):
        spread_jacobians([1.0, 0.0], [])
    with pytest.raises(ValueError, match="logits"):
        spread_jacobians([[1.0, 0.0]], [1.0])
    assert len(softmax_jacobian_figure().axes) == 4  # three panels and a colorbar
