"""The attention-pooling explorers: the numbers they show against independent references.

References are written out here in float64 (a hand-written Gaussian kernel, the softmax of
hand-written scores, torch's own ``scaled_dot_product_attention``), never the library's pooling.
Tolerances: both sides are float64 sums of at most 40 terms of size <= ~5, so they agree to a
few ulp of the result (rel 1e-9 leaves a wide margin, still far below any visible difference).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlib.widgets.explorers.additive import additive_attention_explorer
from attnlib.widgets.explorers.pooling import SCORE_LABELS, kernel_regression_explorer


@pytest.fixture(scope="module")
def kernel():
    return kernel_regression_explorer()


@pytest.fixture(scope="module")
def additive():
    return additive_attention_explorer()


def _gaussian_weights(x, x_train, sigma):
    k = torch.exp(-((x - x_train) ** 2) / (2 * sigma**2))  # (S,)
    return k / k.sum()


@pytest.mark.claim("C22")
def test_c22_kernel_regression_matches_a_hand_written_gaussian_kernel(kernel):
    x_train, y_train = kernel.data["x_train"], kernel.data["y_train"]
    assert x_train.shape == (40,) and y_train.shape == (40,)
    for x, sigma in [(2.5, 0.5), (0.3, 0.1), (4.8, 3.0)]:
        st = kernel.state(x=x, width=sigma, score="gaussian")
        w = _gaussian_weights(x, x_train, sigma)
        assert st["prediction f(x)"] == pytest.approx(float((w * y_train).sum()), rel=1e-9)
        assert st["largest weight"] == pytest.approx(float(w.max()), rel=1e-9)
        assert st["its key x_i"] == pytest.approx(float(x_train[w.argmax()]))
        assert st["sum of weights"] == pytest.approx(1.0)
        assert st["effective neighbours 1/Σα²"] == pytest.approx(
            1.0 / float((w**2).sum()), rel=1e-9
        )
        assert st["true f(x)"] == pytest.approx(2 * np.sin(x) + x**0.8)
        # the bars are the weights over the largest one, at the keys' positions
        fr = kernel.compute(x=x, width=sigma, score="gaussian")
        np.testing.assert_allclose(fr.arrays["bars"], (w / w.max()).numpy(), rtol=1e-9)
        np.testing.assert_allclose(fr.arrays["pred"], [[x, float((w * y_train).sum())]], rtol=1e-9)


@pytest.mark.claim("C22")
def test_c22_train_and_true_mse_match_the_fits_written_out(kernel):
    x_train, y_train = kernel.data["x_train"], kernel.data["y_train"]
    inside = torch.linspace(float(x_train.min()), float(x_train.max()), 200, dtype=torch.float64)
    f_true = 2 * torch.sin(inside) + inside**0.8
    for sigma in (0.05, 0.2, 1.0):
        st = kernel.state(width=sigma, score="gaussian")
        fit_train = torch.stack(
            [(_gaussian_weights(x, x_train, sigma) * y_train).sum() for x in x_train]
        )
        fit_inside = torch.stack(
            [(_gaussian_weights(x, x_train, sigma) * y_train).sum() for x in inside]
        )
        assert st["train MSE (this σ)"] == pytest.approx(
            float(((fit_train - y_train) ** 2).mean()), rel=1e-9
        )
        assert st["MSE vs true f (this σ)"] == pytest.approx(
            float(((fit_inside - f_true) ** 2).mean()), rel=1e-9
        )


def test_effective_neighbours_runs_from_one_to_all(kernel):
    """1/Σα² is 1 for a one-hot row and S = 40 for a uniform one, and grows with
    the kernel width.
    """
    n_eff = [
        kernel.state(x=2.5, width=s, score="gaussian")["effective neighbours 1/Σα²"]
        for s in (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    ]
    assert all(1.0 <= a < b <= 40.0 for a, b in zip(n_eff, n_eff[1:]))
    assert n_eff[-1] > 39.0  # σ = 5 spans the data: nearly uniform
    uniform = kernel.state(x=2.5, width=1.0, score="cosine")["effective neighbours 1/Σα²"]
    assert uniform == pytest.approx(40.0, rel=1e-12)
    # far outside the data a narrow kernel puts almost all weight on the nearest key: one neighbour
    assert kernel.state(x=0.0, width=0.05, score="gaussian")[
        "effective neighbours 1/Σα²"
    ] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.claim("C07")
def test_prediction_never_leaves_the_range_of_the_targets(kernel):
    """A convex combination of the y_i lies in [min y_i, max y_i], even far from the data
    (no extrapolation).
    """
    y = kernel.data["y_train"]
    for _, score in SCORE_LABELS:
        for x in (0.0, 0.05, 2.5, 5.0):
            for sigma in (0.05, 0.5, 5.0):
                p = kernel.state(x=x, width=sigma, score=score)["prediction f(x)"]
                assert float(y.min()) - 1e-12 <= p <= float(y.max()) + 1e-12


def test_c22_nearest_key_gets_the_largest_weight(kernel):
    x_train = kernel.data["x_train"]
    for x in (0.5, 1.7, 3.3):
        st = kernel.state(x=x, width=0.3, score="gaussian")
        assert st["its key x_i"] == pytest.approx(float(x_train[(x_train - x).abs().argmin()]))


@pytest.mark.claim("C20")
def test_c20_wrong_positive_distance_picks_the_farthest_key(kernel):
    x_train = kernel.data["x_train"]
    st = kernel.state(x=0.2, width=0.5, score="distance (wrong)")
    assert st["its key x_i"] == pytest.approx(float(x_train[(x_train - 0.2).abs().argmax()]))
    d = (x_train - 0.2).abs() / 0.5  # +|x - x_i| / σ
    assert st["largest weight"] == pytest.approx(float(torch.softmax(d, 0).max()), rel=1e-9)
    right = kernel.state(x=0.2, width=0.5, score="neg_euclidean")
    assert right["its key x_i"] == pytest.approx(float(x_train[(x_train - 0.2).abs().argmin()]))


@pytest.mark.claim("C23")
def test_c23_non_gaussian_scores_are_divided_by_the_width(kernel):
    """dot at σ = 0.5 is softmax(2 x x_i): the width acts as a temperature."""
    x_train, y_train = kernel.data["x_train"], kernel.data["y_train"]
    st = kernel.state(x=1.0, width=0.5, score="dot")
    w = torch.softmax(1.0 * x_train / 0.5, 0)
    assert st["largest weight"] == pytest.approx(float(w.max()), rel=1e-9)
    assert st["prediction f(x)"] == pytest.approx(float((w * y_train).sum()), rel=1e-9)


@pytest.mark.claim("C23")
def test_c23_every_score_gives_probabilities_and_a_different_curve(kernel):
    curves = []
    for _, score in SCORE_LABELS:
        st = kernel.state(x=1.0, width=0.5, score=score)
        assert st["sum of weights"] == pytest.approx(1.0)
        assert 0.0 < st["largest weight"] <= 1.0
        curves.append(np.asarray(kernel.compute(x=1.0, width=0.5, score=score).arrays["fit"]))
    assert not np.allclose(curves[0], curves[2])  # Gaussian vs dot


@pytest.mark.claim("C23")
def test_c23_cosine_on_positive_scalars_is_uniform(kernel):
    st = kernel.state(x=2.0, width=1.0, score="cosine")
    assert st["largest weight"] == pytest.approx(1 / 40)
    assert st["prediction f(x)"] == pytest.approx(float(kernel.data["y_train"].mean()))


def test_kernel_regression_bad_score():
    with pytest.raises(ValueError, match="score must be one of"):
        kernel_regression_explorer(score="euclid")


def _additive_reference(model, keys, q1, q2):
    q = torch.tensor([q1, q2], dtype=torch.float64)  # d_q = 2 ≠ d_k = 3
    with torch.no_grad():
        hidden = torch.tanh(model.w_q.weight @ q + keys[0] @ model.w_k.weight.T)  # (S, h)
        return hidden @ model.w_v.weight[0]  # (S,)


@pytest.mark.claim("C24")
def test_c24_additive_scores_match_the_written_out_formula(additive):
    model, keys = additive.data["model"], additive.data["keys"]  # keys (1, S, d_k)
    assert keys.shape == (1, 5, 3)
    for q1, q2 in [(1.0, -0.5), (-3.0, 3.0), (0.0, 0.0)]:
        st = additive.state(q1=q1, q2=q2)
        scores = _additive_reference(model, keys, q1, q2)
        assert st["feature shape (B, L, S, h)"] == "(1, 1, 5, 6)"
        np.testing.assert_allclose(st["additive score e_j"], scores.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(
            st["additive weight"], torch.softmax(scores, 0).numpy(), rtol=1e-9
        )
        values = torch.arange(5, dtype=torch.float64)
        assert st["additive output Σ α_j v_j"] == pytest.approx(
            float(torch.softmax(scores, 0) @ values), rel=1e-9
        )


@pytest.mark.claim("C24")
def test_c24_projected_dot_product_matches_torch_sdpa(additive):
    """The dot-product side on the same (d_q = 2, d_k = 3) shapes, against torch's
    fused attention.
    """
    w_Q, w_K, keys = additive.data["w_Q"], additive.data["w_K"], additive.data["keys"]
    values = torch.arange(5, dtype=torch.float64).reshape(1, 5, 1)
    for q1, q2 in [(1.0, -0.5), (2.5, 1.5)]:
        st = additive.state(q1=q1, q2=q2)
        q = torch.tensor([[[q1, q2]]], dtype=torch.float64) @ w_Q  # (1, 1, h)
        k = keys @ w_K  # (1, S, h)
        ref_out = F.scaled_dot_product_attention(q, k, values)[0, 0, 0]
        ref_s = (q[0, 0] @ k[0].T) / math.sqrt(6)
        np.testing.assert_allclose(
            st["dot score (qW_Q)·(kW_K)/√h"], ref_s.numpy(), rtol=1e-9, atol=1e-12
        )
        np.testing.assert_allclose(st["dot weight"], torch.softmax(ref_s, 0).numpy(), rtol=1e-9)
        assert st["dot output Σ α_j v_j"] == pytest.approx(float(ref_out), rel=1e-9)


@pytest.mark.claim("C24")
def test_c24_dot_surface_is_a_plane_and_the_additive_one_is_not(additive):
    """Second differences along q1 and q2 vanish for a plane
    (to float64 rounding of values ~10: 1e-12).
    """
    add, dot = additive.data["surfaces"]["add"], additive.data["surfaces"]["dot"]
    assert add.shape == dot.shape == (5, 61, 61)  # one surface per key
    for j in range(5):
        for z, planar in ((dot[j], True), (add[j], False)):
            curvature = max(
                np.abs(np.diff(z, 2, axis=0)).max(), np.abs(np.diff(z, 2, axis=1)).max()
            )
            assert (curvature < 1e-12) == planar, (j, curvature)
    # the surfaces are the scores of every key at the grid's queries: spot-check one cell
    # (q1 = 1.0, q2 = -0.5) against the written-out formula
    model, keys = additive.data["model"], additive.data["keys"]
    np.testing.assert_allclose(
        add[:, 25, 40], _additive_reference(model, keys, 1.0, -0.5).numpy(), rtol=1e-9
    )
    st = additive.state(q1=1.0, q2=-0.5)
    np.testing.assert_allclose(dot[:, 25, 40], st["dot score (qW_Q)·(kW_K)/√h"], rtol=1e-9)


def test_additive_key_menu_chooses_the_surface_drawn(additive):
    add, dot = additive.data["surfaces"]["add"], additive.data["surfaces"]["dot"]
    assert additive.values()["key"] == 4
    for key in (1, 4, 5):
        fr = additive.compute(q1=0.0, q2=-1.5, key=key)
        assert fr.texts["which"] == f"k{key}"
        # the heatmaps show every 2nd grid point (31 x 31 cells of 0.2)
        np.testing.assert_array_equal(fr.arrays["add_surface"], add[key - 1, ::2, ::2])
        np.testing.assert_array_equal(fr.arrays["dot_surface"], dot[key - 1, ::2, ::2])
        # the weights do not depend on which surface is drawn
        np.testing.assert_array_equal(fr.arrays["w_add"], additive.compute(key=1).arrays["w_add"])
    with pytest.raises(ValueError, match="key must be <= 5"):
        additive.compute(key=6)


@pytest.mark.claim("C24")
def test_c24_dot_contours_lie_on_their_levels(additive):
    """The contour segments of the projected dot score (a plane, so linear interpolation between
    grid points is exact) sit where the written-out score equals one of the 9 levels spread over
    that key's range; padding segments have width 0.
    """
    w_Q, w_K, keys = additive.data["w_Q"], additive.data["w_K"], additive.data["keys"]
    for key in (1, 4):
        fr = additive.compute(key=key)
        xy, widths = fr.arrays["dot_contours"], fr.arrays["dot_widths"]
        real = xy[widths > 0].reshape(-1, 2)  # endpoints, in drawn-cell units (q + 3) / 0.2
        assert len(real) > 20 and set(np.unique(widths)) <= {0.0, 0.8}
        q = torch.tensor(-3.0 + 0.2 * real, dtype=torch.float64)  # (N, 2)
        score = (q @ w_Q) @ (keys[0, key - 1] @ w_K) / math.sqrt(6)  # (N,)
        z = additive.data["surfaces"]["dot"][key - 1]
        levels = np.linspace(z.min(), z.max(), 11)[1:-1]
        gap = np.abs(score.numpy()[:, None] - levels[None, :]).min(1)
        assert gap.max() < 1e-9, gap.max()


@pytest.mark.claim("C24")
def test_c24_along_one_line_a_key_wins_back_only_under_the_additive_score(additive):
    """Along q2 = -1.5 the additive weights (written out here) are won by k4, then k1, then k4
    again, each by a wide margin; under the projected dot product no key wins on two separate
    intervals (the difference of two keys' scores is linear in q).
    """
    model, keys = additive.data["model"], additive.data["keys"]
    w_Q, w_K = additive.data["w_Q"], additive.data["w_K"]
    line = [round(-3.0 + 0.1 * i, 1) for i in range(61)]
    add_w = torch.stack(
        [torch.softmax(_additive_reference(model, keys, q1, -1.5), 0) for q1 in line]
    )
    q = torch.tensor([[q1, -1.5] for q1 in line], dtype=torch.float64)
    dot_w = torch.softmax((q @ w_Q) @ (keys[0] @ w_K).T / math.sqrt(6), -1)  # (61, S)

    def runs(w):
        win = w.argmax(-1).tolist()
        return [k for i, k in enumerate(win) if i == 0 or k != win[i - 1]]

    assert runs(add_w) == [3, 0, 3]  # k4, k1, k4
    lead = add_w[:, 3] - add_w[:, 0]  # k4 minus k1
    assert lead[:20].max() > 0.3 and (-lead[25:40]).max() > 0.3 and lead[45:].max() > 0.3
    assert len(runs(dot_w)) == len(set(runs(dot_w)))  # each key wins on one interval at most


def test_additive_query_marker_moves_with_the_query(additive):
    a = additive.compute(q1=1.0, q2=-0.5).arrays["query"]
    b = additive.compute(q1=-2.0, q2=2.5).arrays["query"]
    np.testing.assert_allclose(a, [[20.0, 12.5]])  # drawn-cell units: (q + 3) / 0.2
    np.testing.assert_allclose(b, [[5.0, 27.5]])
    np.testing.assert_allclose(
        additive.compute(q1=1.0, q2=-0.5).arrays["row"], [[-0.5, 12.5], [30.5, 12.5]]
    )


def test_additive_frame_sets_stay_small(additive):
    """One set per slider (61 frames), each carrying the chosen key's two surfaces."""
    assert additive.groups == [("q1",), ("q2",)]
    for group in (0, 1):
        header, buffers = additive.frame_set(group)
        assert header["n"] == 61 and sum(map(len, buffers)) < 2_000_000


def test_additive_explorer_leaves_the_global_generator_alone():
    state = torch.random.get_rng_state()
    additive_attention_explorer()
    assert torch.equal(state, torch.random.get_rng_state())


def test_additive_explorer_bad_arguments():
    with pytest.raises(ValueError, match="d_q must be >= 2"):
        additive_attention_explorer(d_q=1)
    with pytest.raises(TypeError, match="d_q must be an int"):
        additive_attention_explorer(d_q=2.0)
    with pytest.raises(ValueError, match="key must be <= 5"):
        additive_attention_explorer(key=6)
