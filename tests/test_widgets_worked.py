"""Tests for the two-key explorer (attnlib.widgets.explorers.worked) and its key picture
(attnlib.figures.worked).

References: the closed form a1 = 1 / (1 + exp(-(s1 - s2))) with s = q·k / sqrt(2) written out by
hand for k1 = (1, 0), k2 = (0, 1), and torch.softmax in float64 (exact to ~1e-16, so 1e-12).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.widgets.explorers.worked import two_key_explorer


@pytest.fixture(scope="module")
def explorer():
    return two_key_explorer()


def by_hand(x, y, scaled, v1, v2):
    """Scores, a1 and the output for q = (x, y) against k1 = (1, 0), k2 = (0, 1),
    in plain Python.
    """
    c = 1 / math.sqrt(2) if scaled else 1.0
    s1, s2 = c * x, c * y  # q·k1 = x, q·k2 = y
    a1 = 1 / (1 + math.exp(-(s1 - s2)))
    return (s1, s2), a1, [a1 * v1[0] + (1 - a1) * v2[0], a1 * v1[1] + (1 - a1) * v2[1]]


def test_starts_at_the_slides_query(explorer):
    state = explorer.state()
    # C26: q1 = (1, 2) scaled: scores (1, 2)/sqrt 2, weights 1/(1 + e^{1/sqrt 2}) = 0.3302..
    expected = 1 / (1 + math.exp(1 / math.sqrt(2)))
    assert state["scores (s1, s2)"] == pytest.approx(
        [1 / math.sqrt(2), 2 / math.sqrt(2)], abs=1e-12
    )
    assert state["a1 = σ(s1 - s2)"] == pytest.approx(expected, abs=1e-12)
    assert state["weights (a1, a2)"] == pytest.approx([expected, 1 - expected], abs=1e-12)
    # values of the worked example [2, 0], [0, 4]
    assert state["output o = a1 v1 + a2 v2"] == pytest.approx(
        [2 * expected, 4 * (1 - expected)], abs=1e-12
    )


@pytest.mark.parametrize(
    "setting",
    [
        dict(x=-2.0, y=3.0),
        dict(x=3.0, y=-3.0, scaled=False, v1x=-4.0, v1y=1.0),
        dict(x=-2.5, y=1.7, v1x=-8.0, v2y=8.0),  # on the sliders' grid: the precomputed table
        dict(x=0.3, y=0.3, v2x=8.0, v2y=-7.0),
        dict(x=0.35, y=-1.25),  # off the grid: computed on its own
        dict(x=1.1, y=0.0, scaled=False),  # about the worked example: s = (1.1, 0) ~ (log 3, 0)
    ],
)
def test_state_matches_the_closed_form_and_stays_on_the_segment(explorer, setting):
    st = explorer.state(**setting)
    vals = {**explorer.values(), **setting}
    v1, v2 = (vals["v1x"], vals["v1y"]), (vals["v2x"], vals["v2y"])
    s, a1, o = by_hand(vals["x"], vals["y"], vals["scaled"], v1, v2)
    assert st["scores (s1, s2)"] == pytest.approx(s, abs=1e-12)
    assert st["s1 - s2"] == pytest.approx(s[0] - s[1], abs=1e-12)
    assert st["a1 = σ(s1 - s2)"] == pytest.approx(a1, abs=1e-12)
    assert st["weights (a1, a2)"] == pytest.approx(
        torch.softmax(torch.tensor(s, dtype=torch.float64), 0).tolist(), abs=1e-12
    )
    assert st["output o = a1 v1 + a2 v2"] == pytest.approx(o, abs=1e-12)
    # C07: o = v1 + a2 (v2 - v1) with a2 in [0, 1]: on the segment; the drawn star is the output
    a2 = 1 - a1
    frame = explorer.compute(**setting)
    np.testing.assert_allclose(
        frame.arrays["output"][0],
        [v1[0] + a2 * (v2[0] - v1[0]), v1[1] + a2 * (v2[1] - v1[1])],
        atol=1e-12,
    )
    assert frame.arrays["sigma_point"] == [
        [pytest.approx(s[0] - s[1], abs=1e-12), pytest.approx(a1, abs=1e-12)]
    ]


def test_c09_values_change_the_content_not_the_weights(explorer):
    before = explorer.state()
    after = explorer.state(v2y=-4.0)
    assert after["weights (a1, a2)"] == before["weights (a1, a2)"]
    a1 = before["a1 = σ(s1 - s2)"]
    assert after["output o = a1 v1 + a2 v2"] == pytest.approx([2 * a1, -4 * (1 - a1)], abs=1e-12)


def test_exercise_2_is_reachable_and_the_query_on_the_diagonal_splits_evenly(explorer):
    # Exercise 2: v2 = [0, 8] is inside the sliders' range; the output is a1 [2, 0] + a2 [0, 8]
    a1 = 1 / (1 + math.exp(1 / math.sqrt(2)))
    st = explorer.state(v2y=8.0)
    assert st["output o = a1 v1 + a2 v2"] == pytest.approx([2 * a1, 8 * (1 - a1)], abs=1e-12)
    assert explorer.state(x=-1.7, y=-1.7)["weights (a1, a2)"] == pytest.approx(
        [0.5, 0.5], abs=1e-12
    )


def test_state_at_other_values_moves_nothing(explorer):
    v0 = explorer.values()
    explorer.state(x=-3.0, v1x=5.0)
    assert explorer.values() == v0


def test_bad_arguments():
    with pytest.raises(ValueError, match="query"):
        two_key_explorer(query=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="values"):
        two_key_explorer(values=((1.0, 2.0, 3.0), (0.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match="lie in"):
        two_key_explorer(query=(4.0, 0.0))
    with pytest.raises(ValueError, match="lie in"):
        two_key_explorer(values=((9.0, 0.0), (0.0, 0.0)))


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
    np.testing.assert_allclose(
        [p.get_height() for p in bars[1].patches], w[:, 1].numpy(), rtol=1e-6
    )
    with pytest.raises(ValueError, match="weights"):
        two_query_weights(torch.ones(3, 2), ax2)
    with pytest.raises(ValueError, match="scores"):
        mixing_segment([1.0, 2.0, 3.0], [0.5, 0.5], [0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], ax1)
    fig = worked_example_figure()
    assert len(fig.axes) == 2
    np.testing.assert_allclose(
        fig.axes[0].collections[-1].get_offsets()[0], [1.5, 1.0], atol=1e-12
    )  # the figure computes the closed-form output
    assert fig.axes[0].get_title().startswith("scores (log 3 ≈ 1.10, 0)")
    assert "(C" not in fig._suptitle.get_text()  # no claim IDs in a student-facing title
