"""Tests for the Jacobian explorer (attnlib.widgets.explorers.jacobian) and its key picture
(attnlib.figures.jacobian).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.course.examples import DEFAULT_LOGITS
from attnlib.widgets.explorers.jacobian import jacobian_explorer


@pytest.fixture(scope="module")
def explorer():
    return jacobian_explorer()


def _reference(spread, logits=DEFAULT_LOGITS):
    z = torch.tensor(logits, dtype=torch.float64)
    z = (z - z.mean()) / z.std(unbiased=False) * spread
    jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z)
    return z, torch.softmax(z, -1), jac


def test_defaults_and_only_the_slider_is_fast(explorer):
    assert explorer.values() == {"spread": 1.0, "base": "given", "upstream": "a1"}
    assert explorer.fast == ["spread"]  # the dropdowns recompute, the slider plays in the browser


@pytest.mark.parametrize("spread", [0.0, 0.3, 1.0, 2.5, 10.0])
def test_c13_jacobian_matches_autograd(explorer, spread):
    state = explorer.state(spread=spread)
    frame = explorer.compute(spread=spread)
    z, a, jac = _reference(spread)
    # float64 on both sides, entries <= 1 (|J| <= 1/4) from a handful of operations on 5 logits
    # <= 10 in size: they agree to ~1e-15; 1e-12 leaves room, and a wrong entry is off by > 1e-3.
    np.testing.assert_allclose(state["logits z"], z.numpy(), atol=1e-12)
    np.testing.assert_allclose(state["weights a"], a.numpy(), atol=1e-12)
    np.testing.assert_allclose(state["J (row j = a_j)"], jac.numpy(), atol=1e-12)
    np.testing.assert_allclose(state["row sums of J"], 0.0, atol=1e-12)
    assert state["‖J‖_F"] == pytest.approx(torch.linalg.norm(jac).item(), abs=1e-12)
    assert state["largest |J_jr|"] == pytest.approx(jac.abs().max().item(), abs=1e-12)
    np.testing.assert_allclose(frame.arrays["J"], jac.numpy(), atol=1e-12)  # the heatmap drawn
    np.testing.assert_allclose(frame.arrays["a"], a.numpy(), atol=1e-12)  # the bars drawn


@pytest.mark.parametrize("upstream", ["a1", "a2", "mixed"])
@pytest.mark.parametrize("spread", [0.5, 3.0])
def test_c13_gradient_to_the_scores_matches_autograd(explorer, upstream, spread):
    z, _, _ = _reference(spread)
    zz = z.clone().requires_grad_(True)
    g = {
        "a1": torch.tensor([1.0, 0, 0, 0, 0]),
        "a2": torch.tensor([0, 1.0, 0, 0, 0]),
        "mixed": torch.tensor([0.5, -1.0, 0.25, 0.0, 1.0]),
    }[upstream].double()
    (torch.softmax(zz, -1) * g).sum().backward()  # L = g · a
    state = explorer.state(spread=spread, upstream=upstream)
    np.testing.assert_allclose(state["upstream g = ∂L/∂a"], g.numpy(), atol=0)
    np.testing.assert_allclose(state["∂L/∂z = Jᵀg"], zz.grad.numpy(), atol=1e-12)
    assert abs(state["sum of ∂L/∂z"]) < 1e-12  # competition: what one score gains the others lose
    assert state["‖∂L/∂z‖"] == pytest.approx(zz.grad.norm().item(), abs=1e-12)
    if upstream == "a1":  # raising a1 needs z1 up and every other score down
        assert zz.grad[0] > 0 and bool((zz.grad[1:] < 0).all())


def test_c14_norm_shrinks_as_the_row_saturates(explorer):
    uniform = explorer.state(spread=0.0)
    assert uniform["weights a"] == pytest.approx([0.2] * 5)
    assert uniform["‖J‖_F"] == pytest.approx(math.sqrt(4) / 5)  # (I - 11ᵀ/n)/n has norm sqrt(n-1)/n
    norms = [explorer.state(spread=s)["‖J‖_F"] for s in (2.0, 4.0, 6.0, 8.0, 10.0)]
    assert norms == sorted(norms, reverse=True) and norms[-1] < 1e-3
    frame = explorer.compute(spread=10.0)
    assert frame.arrays["m"][0] == [10.0, pytest.approx(norms[-1])]
    curve = np.asarray(frame.arrays["c_norm"])
    assert curve[-1, 0] == 10.0 and curve[-1, 1] == pytest.approx(norms[-1])


def test_c14_a_top_two_tie_stays_sensitive(explorer):
    # tied top two: at large spread the row tends to (1/2, 1/2, 0, ...), whose J has norm 1/2
    tie = explorer.state(spread=10.0, base="tie")
    z = torch.tensor(DEFAULT_LOGITS, dtype=torch.float64)
    z[1] = z[0]
    _, a, jac = _reference(10.0, z.tolist())
    np.testing.assert_allclose(tie["weights a"], a.numpy(), atol=1e-12)
    assert tie["‖J‖_F"] == pytest.approx(torch.linalg.norm(jac).item(), abs=1e-12)
    assert tie["‖J‖_F"] == pytest.approx(0.5, abs=0.01)
    assert explorer.state(spread=10.0, base="given")["‖J‖_F"] < 1e-3


def test_colour_limits_fixed_and_picture_changes(explorer):
    heatmap = explorer.scene.panels[1].artists[0]
    assert (heatmap.vmin, heatmap.vmax, heatmap.cmap) == (-0.25, 0.25, "cividis")
    a = explorer.compute(spread=0.5).arrays["J"]
    b = explorer.compute(spread=7.0).arrays["J"]
    assert not np.allclose(a, b)


def test_annotations_and_labels_read_as_numbers(explorer):
    """J's annotations in the rendered picture are autograd's J rounded, with no "-0.00"."""
    ex = jacobian_explorer(spread=8.0)
    heatmap = ex.scene.panels[1].artists[0]
    fig = ex.figure()
    _, _, jac = _reference(8.0)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    cells = [t for t in texts if t.lstrip("-").replace(".", "", 1).isdigit()]
    assert len(cells) == jac.numel()
    assert not [t for t in cells if float(t) == 0.0 and t.startswith("-")]
    assert "0.00" in cells  # the saturated row has entries that round to 0
    np.testing.assert_allclose(
        [float(t) for t in cells],
        jac.flatten().numpy(),
        atol=0.5 * 10.0**-heatmap.digits + 1e-12,
    )
    assert fig.axes[0].get_xlabel() == "key j (weight a_j of logit z_j)"


def test_bad_arguments():
    with pytest.raises(ValueError, match="all equal"):
        jacobian_explorer(logits=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="2 to 8"):
        jacobian_explorer(logits=(1.0,))
    with pytest.raises(ValueError, match="spread"):
        jacobian_explorer(spread=11.0)
    with pytest.raises(ValueError, match="base"):
        jacobian_explorer(base="odd")
    with pytest.raises(ValueError, match="upstream"):
        jacobian_explorer(upstream="a9")


def test_jacobian_panels_draw_autograd_jacobians():
    from matplotlib.figure import Figure

    from attnlib.course.scaling import spread_jacobians
    from attnlib.figures.jacobian import softmax_jacobian_figure
    from attnlib.plotting import jacobian_panels

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
        assert im.get_cmap().name == "cividis"  # the explorer's colour map
    with pytest.raises(ValueError, match="axes"):
        jacobian_panels(
            spread_jacobians([1.0, 0.0], [1.0, 2.0]), fig.subplots(1, 1, squeeze=False)[0]
        )
    with pytest.raises(ValueError, match="spreads"):
        spread_jacobians([1.0, 0.0], [])
    with pytest.raises(ValueError, match="logits"):
        spread_jacobians([[1.0, 0.0]], [1.0])
    assert len(softmax_jacobian_figure().axes) == 4  # three panels and a colorbar


def test_titles_and_entries_readable_in_the_rendered_picture():
    """Every panel title lies inside the picture and overlaps no other title or legend, and no
    two of J's written-in entries touch (the first row of four overprinted its titles, cut the
    last one off and ran J's entries together: "-0.03-0.02")."""
    ex = jacobian_explorer(upstream="mixed", spread=0.5)  # the widest entries: all 25 nonzero
    fig = ex.figure()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    titles = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    assert len(titles) == 4
    for t in titles:  # inside the picture
        assert box.x0 <= t.x0 and t.x1 <= box.x1 and box.y0 <= t.y0 and t.y1 <= box.y1
    legends = [ax.get_legend().get_window_extent(renderer) for ax in fig.axes if ax.get_legend()]
    assert len(legends) == 2
    others = titles + legends
    for i, a in enumerate(others):
        for b in others[i + 1 :]:
            assert not a.overlaps(b)
    entries = [t.get_window_extent(renderer) for t in fig.axes[1].texts]
    assert len(entries) == 25
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            assert not a.overlaps(b)
    # one row, so that controls, picture and readout fit 620 px of height (tests/test_site.py)
    assert (ex.scene.rows, ex.scene.cols, ex.scene.height) == (1, 4, 270)
