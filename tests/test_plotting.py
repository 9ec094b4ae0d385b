"""attnlib.plotting: each function draws the data it is given, labelled, and returns its artists."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from attnlib import plotting


def _ax(**kw):
    return Figure(figsize=(4, 3)).subplots(**kw)


@pytest.fixture
def no_global_changes(monkeypatch):
    """Fail if a plotting function calls plt.show() or changes the global rcParams."""
    import matplotlib.pyplot as plt

    def _no_show(*a, **k):
        raise AssertionError("plotting called plt.show()")

    monkeypatch.setattr(plt, "show", _no_show)
    before = dict(matplotlib.rcParams)
    yield
    after = dict(matplotlib.rcParams)
    assert {k: v for k, v in after.items() if before.get(k) != v} == {}
    plt.close("all")


def test_heatmap_shows_the_weights_with_labels(device, no_global_changes):
    w = torch.softmax(torch.randn(3, 4, device=device), dim=-1)  # (L, S)
    ax = _ax()
    im = plotting.heatmap(
        w[None],
        ax=ax,
        row_labels=["a", "b", "c"],
        col_labels=list("wxyz"),
        title="T",
        vmin=0,
        vmax=1,
    )
    np.testing.assert_allclose(im.get_array(), w.cpu().double().numpy())
    assert ax.get_title() == "T" and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_xticklabels()] == list("wxyz")
    assert im.get_clim() == (0, 1)
    assert len(ax.figure.axes) == 2  # the colorbar


def test_heatmap_marks_hidden_cells_and_rejects_bad_labels(no_global_changes):
    w = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    mask = torch.tensor([[True, False], [True, True]])  # True = may attend
    im = plotting.heatmap(w, ax=_ax(), mask=mask, colorbar=False)
    assert im.get_array().mask.tolist() == [[False, True], [False, False]]
    with pytest.raises(ValueError, match="row_labels has 1 entries but weights has 2 rows"):
        plotting.heatmap(w, ax=_ax(), row_labels=["a"])
    with pytest.raises(ValueError, match="must be 2-D"):
        plotting.heatmap(torch.zeros(2, 2, 2), ax=_ax())


def test_heatmap_without_ax_uses_a_new_pyplot_figure(no_global_changes):
    im = plotting.heatmap(np.eye(3))
    assert im.axes.figure.number >= 1


def test_cell_labels_write_the_values(no_global_changes):
    ax = _ax()
    v = np.array([[0.123, 0.5], [0.25, 0.75]])
    plotting.heatmap(v, ax=ax, colorbar=False)
    texts = plotting.cell_labels(ax, v, "{:.2f}")
    assert [[t.get_text() for t in row] for row in texts] == [["0.12", "0.50"], ["0.25", "0.75"]]
    blank = plotting.cell_labels(_ax(), np.array([[np.nan, 1.0], [0.0, 0.5]]), "{:.2f}")
    assert blank[0][0].get_text() == "" and blank[0][1].get_text() == "1.00"


def test_weight_bars(device, no_global_changes):
    w = torch.tensor([0.2, 0.3, 0.5], device=device)
    ax = _ax()
    bars = plotting.weight_bars(w, ax=ax, labels=["k1", "k2", "k3"], title="W")
    np.testing.assert_allclose([p.get_height() for p in bars.patches], [0.2, 0.3, 0.5], rtol=1e-6)
    assert ax.get_title() == "W" and ax.get_ylim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2", "k3"]
    with pytest.raises(ValueError, match="labels has 1 entries"):
        plotting.weight_bars(w, ax=_ax(), labels=["a"])


def _inside(hull, p):
    return all(
        (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]) >= -1e-12
        for a, b in zip(hull, np.roll(hull, -1, axis=0))
    )


def test_convex_hull_contains_every_point_and_its_vertices_are_points():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(30, 2))
    hull = plotting.convex_hull(torch.tensor(pts))
    assert all(_inside(hull, p) for p in pts)
    assert all(any(np.allclose(h, p) for p in pts) for h in hull)
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [0.5, 0]])
    assert sorted(map(tuple, plotting.convex_hull(square).tolist())) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert plotting.convex_hull(np.array([[1.0, 2.0], [1.0, 2.0]])).tolist() == [[1.0, 2.0]]


def test_qkv_points_draws_the_points(device, no_global_changes):
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]], device=device)
    v = torch.tensor([[2.0, 0.0], [0.0, 2.0], [-2.0, -1.0]], device=device)
    q = torch.tensor([1.0, 2.0], device=device)
    w = torch.softmax(k @ q, 0)
    o = w @ v
    ax = _ax()
    art = plotting.qkv_points(q, k, v, o, ax=ax, weights=w, title="QKV")
    np.testing.assert_allclose(art.keys.get_offsets(), k.cpu().numpy())
    np.testing.assert_allclose(art.values.get_offsets(), v.cpu().numpy())
    np.testing.assert_allclose(art.query.get_offsets(), [[1.0, 2.0]])
    np.testing.assert_allclose(art.output.get_offsets(), o[None].cpu().numpy(), rtol=1e-6)
    assert ax.get_title() == "QKV" and ax.get_xlabel() and ax.get_legend() is not None
    hull_xy = art.hull.get_xy()
    assert len(hull_xy) == 4  # a triangle, closed
    assert [t.get_text() for t in art.key_texts] == ["k1", "k2", "k3"]
    assert tuple(art.query_arrows[0]._posA_posB[1]) == (1.0, 2.0)  # an arrow to the query
    np.testing.assert_allclose(
        art.mix_lines.get_linewidths(), 0.5 + 5.0 * w.cpu().numpy(), rtol=1e-6
    )  # output -> value lines, width ~ weight
    with pytest.raises(ValueError, match="keys has S=3 points but values has 2"):
        plotting.qkv_points(q, k, v[:2], ax=_ax())
    with pytest.raises(ValueError, match=r"shape \(2,\) or \(N, 2\)"):
        plotting.qkv_points(torch.zeros(3), k, ax=_ax())


def test_curves_plot_each_series(no_global_changes):
    x = torch.linspace(0, 1, 5)
    ax = _ax()
    lines = plotting.curves(
        x, {"a": x**2, "b": 2 * x}, ax=ax, title="C", xlabel="t", ylabel="f", logy=False
    )
    assert [l.get_label() for l in lines] == ["a", "b"]
    np.testing.assert_allclose(lines[0].get_ydata(), (x**2).numpy(), rtol=1e-6)
    assert ax.get_title() == "C" and ax.get_xlabel() == "t" and ax.get_legend() is not None
    lines = plotting.curves([1, 10, 100], np.ones((2, 3)), ax=_ax(), logx=True)
    assert lines[0].axes.get_xscale() == "log" and len(lines) == 2
    with pytest.raises(ValueError, match="x has 3 points but curve 0 of ys has 2"):
        plotting.curves([1, 2, 3], [1, 2], ax=_ax())


def test_hist_bars_match_numpy_histogram(no_global_changes):
    rng = np.random.default_rng(0)
    s = rng.normal(size=500)
    edges = np.linspace(-4, 4, 17)
    bars = plotting.hist_bars(torch.tensor(s), edges, ax=_ax())
    ref, _ = np.histogram(s, bins=edges, density=True)
    np.testing.assert_allclose([p.get_height() for p in bars.patches], ref)


def test_to_numpy_handles_half_precision_and_devices(device):
    x = torch.tensor([1.5, -2.0], device=device, dtype=torch.bfloat16)
    a = plotting.to_numpy(x)
    assert a.dtype == np.float64 and a.tolist() == [1.5, -2.0]


def test_masked_hides_where_mask_is_false():
    m = plotting.masked(np.ones((2, 3)), np.array([True, True, False]))
    assert m.mask.tolist() == [[False, False, True]] * 2
