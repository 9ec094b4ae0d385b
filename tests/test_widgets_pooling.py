"""The attention-pooling explorers: the numbers they show against independent references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlib.widgets import BUILDERS
from attnlib.widgets.pooling import (SCORE_LABELS, additive_attention_explorer,
                                     kernel_regression_explorer)


pytestmark = pytest.mark.usefixtures("agg_figures")


def test_builders_are_registered():
    assert BUILDERS["kernel_regression"] is kernel_regression_explorer
    assert BUILDERS["additive_attention"] is additive_attention_explorer


def test_c22_kernel_regression_matches_a_hand_written_gaussian_kernel():
    ex = kernel_regression_explorer()
    x_train, y_train = ex.data["x_train"], ex.data["y_train"]
    assert x_train.shape == (40,) and y_train.shape == (40,)
    for x, h in [(2.5, 0.5), (0.3, 0.1), (4.8, 3.0)]:
        state = ex.set(x=x, h=h, score="gaussian")
        h_shown = ex.controls["h"].value  # the log slider snaps to its steps
        k = torch.exp(-((x - x_train) ** 2) / (2 * h_shown ** 2))
        w = k / k.sum()
        assert state["prediction f(x)"] == pytest.approx(float((w * y_train).sum()), rel=1e-9)
        assert state["largest weight"] == pytest.approx(float(w.max()), rel=1e-9)
        assert state["its key x_i"] == pytest.approx(float(x_train[w.argmax()]))
        assert state["sum of weights"] == pytest.approx(1.0)
        assert state["true f(x)"] == pytest.approx(2 * np.sin(x) + x ** 0.8)


def test_c22_nearest_key_gets_the_largest_weight():
    ex = kernel_regression_explorer()
    x_train = ex.data["x_train"]
    for x in (0.5, 1.7, 3.3):
        state = ex.set(x=x, h=0.3, score="gaussian")
        nearest = float(x_train[(x_train - x).abs().argmin()])
        assert state["its key x_i"] == pytest.approx(nearest)


def test_c20_wrong_positive_distance_picks_the_farthest_key():
    ex = kernel_regression_explorer()
    x_train = ex.data["x_train"]
    state = ex.set(x=0.2, h=0.5, score="distance (wrong)")
    farthest = float(x_train[(x_train - 0.2).abs().argmax()])
    assert state["its key x_i"] == pytest.approx(farthest)
    d = (x_train - 0.2).abs() / ex.controls["h"].value
    assert state["largest weight"] == pytest.approx(float(torch.softmax(d, 0).max()), rel=1e-9)
    right = ex.set(score="neg_euclidean")
    assert right["its key x_i"] == pytest.approx(float(x_train[(x_train - 0.2).abs().argmin()]))


def test_c23_every_score_gives_probabilities_and_changes_the_picture():
    ex = kernel_regression_explorer()
    images = []
    for _, score in SCORE_LABELS:
        state = ex.set(x=1.0, h=0.5, score=score)
        assert state["sum of weights"] == pytest.approx(1.0)
        assert 0.0 < state["largest weight"] <= 1.0
        images.append(ex.render())
    assert not np.array_equal(images[0], images[2])  # Gaussian vs dot look different


def test_c23_cosine_on_positive_scalars_is_uniform():
    ex = kernel_regression_explorer()
    state = ex.set(x=2.0, h=1.0, score="cosine")
    assert state["largest weight"] == pytest.approx(1 / 40)
    assert state["prediction f(x)"] == pytest.approx(float(ex.data["y_train"].mean()))


def test_kernel_regression_bad_score():
    with pytest.raises(ValueError, match="score must be one of"):
        kernel_regression_explorer(score="euclid")


def test_c24_additive_explorer_matches_the_written_out_formula():
    ex = additive_attention_explorer()
    model, keys = ex.data["model"], ex.data["keys"]  # keys (1, S, d_k)
    assert keys.shape == (1, 5, 3)
    for q1, q2 in [(1.0, -0.5), (-3.0, 3.0), (0.0, 0.0)]:
        state = ex.set(q1=q1, q2=q2)
        q = torch.tensor([q1, q2], dtype=torch.float64)  # d_q = 2 ≠ d_k = 3
        with torch.no_grad():
            hidden = torch.tanh(model.w_q.weight @ q + keys[0] @ model.w_k.weight.T)  # (S, h)
            scores = hidden @ model.w_v.weight[0]  # (S,)
        assert state["feature shape (B, L, S, h)"] == "(1, 1, 5, 6)"
        np.testing.assert_allclose(state["scores"], scores.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(state["weights"], torch.softmax(scores, 0).numpy(), rtol=1e-9)


def test_c24_additive_explorer_figure_changes_with_the_query():
    ex = additive_attention_explorer()
    before = ex.render()
    ex.set(q1=-2.0, q2=2.5)
    assert not np.array_equal(before, ex.render())


def test_additive_explorer_leaves_the_global_generator_alone():
    state = torch.random.get_rng_state()
    additive_attention_explorer()
    assert torch.equal(state, torch.random.get_rng_state())


def test_additive_explorer_bad_query_width():
    with pytest.raises(ValueError, match="d_q must be >= 2"):
        additive_attention_explorer(d_q=1)
    with pytest.raises(TypeError, match="d_q must be an int"):
        additive_attention_explorer(d_q=2.0)
