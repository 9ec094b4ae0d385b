"""Tests for the two-key explorer (attnlib.widgets.worked) and its key picture (attnlib.figures.worked)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.widgets import BUILDERS
from attnlib.widgets.base import figure_backend
from attnlib.widgets.worked import two_key_explorer


@pytest.fixture()
def explorer():
    with figure_backend("agg"):
        return two_key_explorer()


def test_registered_and_starts_at_the_worked_example(explorer):
    assert BUILDERS["two_key"] is two_key_explorer
    state = explorer.state()
    # C09: [log 3, 0] -> [3/4, 1/4]; values [2, 0], [0, 4] -> [1.5, 1]
    assert state["weights a"] == pytest.approx([0.75, 0.25], abs=1e-12)
    assert state["output o"] == pytest.approx([1.5, 1.0], abs=1e-12)
    assert explorer.values()["v2y"] == 4.0


@pytest.mark.parametrize("setting", [
    dict(s1=-2.0, s2=3.5),
    dict(s1=5.0, s2=-5.0, v1x=-4.0, v1y=1.5),
    dict(v2x=3.0, v2y=-2.5),
])
def test_output_matches_torch_and_stays_on_the_segment(explorer, setting):
    state = explorer.set(**setting)
    vals = explorer.values()
    z = torch.tensor([vals["s1"], vals["s2"]], dtype=torch.float64)
    v = torch.tensor([[vals["v1x"], vals["v1y"]], [vals["v2x"], vals["v2y"]]], dtype=torch.float64)
    a = torch.softmax(z, -1)
    o = a @ v
    assert state["weights a"] == pytest.approx(a.tolist(), abs=1e-12)
    assert state["output o"] == pytest.approx(o.tolist(), abs=1e-12)
    # C07: o = v1 + t (v2 - v1) with t = a2 in [0, 1]: on the segment
    t = state["weights a"][1]
    np.testing.assert_allclose(state["output o"], (v[0] + t * (v[1] - v[0])).numpy(), atol=1e-12)
    star = explorer.figure.axes[1].collections[-1]
    np.testing.assert_allclose(star.get_offsets()[0], o.numpy(), atol=1e-12)
    heights = [p.get_height() for p in explorer.figure.axes[0].patches]
    np.testing.assert_allclose(heights, a.numpy(), atol=1e-12)


def test_c09_values_change_the_content_not_the_weights(explorer):
    before = explorer.state()
    after = explorer.set(v2y=-4.0)
    assert after["weights a"] == before["weights a"]
    assert after["output o"] == pytest.approx([1.5, -1.0])


def test_c26_scores_of_the_2d_example(explorer):
    s = explorer.set(s1=1 / math.sqrt(2), s2=2 / math.sqrt(2))
    expected = 1 / (1 + math.exp(1 / math.sqrt(2)))
    assert s["weights a"] == pytest.approx([expected, 1 - expected])
    assert round(s["weights a"][0], 2) == 0.33


def test_figure_changes_in_place(explorer):
    before = explorer.render()
    n = len(explorer.figure.axes[1].get_children())
    explorer.set(v1x=-3.0)
    assert not np.array_equal(before, explorer.render())
    assert len(explorer.figure.axes[1].get_children()) == n


def test_bad_arguments():
    with pytest.raises(ValueError, match="scores"):
        two_key_explorer(scores=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="values"):
        two_key_explorer(values=((1.0, 2.0, 3.0), (0.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match="lie in"):
        two_key_explorer(scores=(9.0, 0.0))


def test_worked_figure_functions():
    from matplotlib.figure import Figure

    from attnlib.figures.worked import worked_example_figure
    from attnlib.plotting import mixing_segment, two_query_weights

    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    # The worked example in closed form: softmax([log 3, 0]) = [3/4, 1/4], output [1.5, 1].
    values = [[2.0, 0.0], [0.0, 4.0]]
    segment, point = mixing_segment([math.log(3.0), 0.0], [0.75, 0.25], [1.5, 1.0], values, ax1)
    np.testing.assert_allclose(point.get_offsets()[0], [1.5, 1.0], atol=1e-12)
    np.testing.assert_allclose(segment.get_xydata(), values)
    assert ax1.get_title() == "scores (1.10, 0.00) → weights (0.75, 0.25)"
    w = torch.softmax(torch.tensor([[1.0, 2.0], [1.0, 1.0]]) / math.sqrt(2), -1)
    bars = two_query_weights(w, ax2)
    np.testing.assert_allclose([p.get_height() for p in bars[1].patches], w[:, 1].numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="weights"):
        two_query_weights(torch.ones(3, 2), ax2)
    with pytest.raises(ValueError, match="scores"):
        mixing_segment([1.0, 2.0, 3.0], [0.5, 0.5], [0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], ax1)
    fig = worked_example_figure()
    assert len(fig.axes) == 2
    np.testing.assert_allclose(fig.axes[0].collections[-1].get_offsets()[0], [1.5, 1.0],
                               atol=1e-12)  # the figure computes the closed-form output
