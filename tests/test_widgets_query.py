"""The query explorer (C19, C07, C26): its pure compute against torch's own attention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlib.course.examples import DEFAULT_KEYS, DEFAULT_VALUES
from attnlib.plotting import convex_hull
from attnlib.widgets import BUILDERS
from attnlib.widgets.explorers.query import query_explorer


@pytest.fixture(scope="module")
def explorer():
    return query_explorer()


def _reference(x, y, keys, values, scaled):
    """torch's fused attention in float64: scores, weights and output for one query."""
    q = torch.tensor([[[x, y]]], dtype=torch.float64)  # (1, L=1, 2)
    k = torch.tensor([keys], dtype=torch.float64)  # (1, S, 2)
    v = torch.tensor([values], dtype=torch.float64)  # (1, S, 2)
    scale = 1 / math.sqrt(2) if scaled else 1.0
    out = F.scaled_dot_product_attention(q, k, v, scale=scale)[0, 0]  # (2,)
    scores = torch.einsum("d,sd->s", q[0, 0], k[0]) * scale  # (S,)
    return scores, torch.softmax(scores, 0), out


@pytest.mark.claim("C19")
@pytest.mark.parametrize("scaled", [True, False])
def test_c19_scores_weights_and_output_match_torch(explorer, scaled):
    rng = np.random.default_rng(1)
    for x, y in [(1.0, 2.0), (-3.0, 3.0), (0.0, 0.0), *rng.uniform(-3, 3, (5, 2)).tolist()]:
        fr = explorer.compute(x=x, y=y, scaled=scaled)
        s_ref, w_ref, o_ref = _reference(x, y, DEFAULT_KEYS, DEFAULT_VALUES, scaled)
        torch.testing.assert_close(torch.as_tensor(fr.readout["scores"]), s_ref)
        torch.testing.assert_close(torch.as_tensor(fr.readout["weights"]), w_ref)
        torch.testing.assert_close(torch.as_tensor(fr.readout["output (x, y)"]), o_ref)
        # the picture shows the same numbers: bars = weights, the query and output points
        torch.testing.assert_close(torch.as_tensor(fr.arrays["weights"]), w_ref)
        torch.testing.assert_close(
            torch.as_tensor(fr.arrays["query"]), torch.tensor([[x, y]], dtype=torch.float64)
        )
        torch.testing.assert_close(torch.as_tensor(fr.arrays["output"])[0], o_ref)
        # the lines from the output end at the values
        mix = torch.as_tensor(fr.arrays["mix"])
        torch.testing.assert_close(mix[:, 1], torch.tensor(DEFAULT_VALUES, dtype=torch.float64))


def test_state_follows_the_controls(explorer):
    st = explorer.set(x=-1.5, y=0.5, scaled=False)
    s_ref, w_ref, o_ref = _reference(-1.5, 0.5, DEFAULT_KEYS, DEFAULT_VALUES, False)
    np.testing.assert_allclose(st["weights"], w_ref.numpy(), rtol=1e-12)
    assert explorer.values() == {"x": -1.5, "y": 0.5, "key_length": 1.0, "scaled": False}
    explorer.controls["x"].value = 2.0  # as the browser does
    np.testing.assert_allclose(
        explorer.state()["output (x, y)"],
        _reference(2.0, 0.5, DEFAULT_KEYS, DEFAULT_VALUES, False)[2].numpy(),
        rtol=1e-12,
    )
    explorer.set(x=1.0, y=2.0, scaled=True)


@pytest.mark.claim("C07")
def test_c07_output_stays_in_the_values_hull(explorer):
    hull = convex_hull(np.array(DEFAULT_VALUES))  # counter-clockwise
    rng = np.random.default_rng(2)
    for x, y in rng.uniform(-3, 3, (20, 2)):
        fr = explorer.compute(x=float(x), y=float(y))
        w = torch.as_tensor(fr.readout["weights"]).numpy()
        assert np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
        o = torch.as_tensor(fr.readout["output (x, y)"]).numpy()
        for a, b in zip(hull, np.roll(hull, -1, axis=0)):
            cross = (b[0] - a[0]) * (o[1] - a[1]) - (b[1] - a[1]) * (o[0] - a[0])
            assert cross >= -1e-9, f"output {o} left the hull at edge {a}->{b}"


@pytest.mark.claim("C26")
def test_c26_two_key_example():
    ex = BUILDERS["query"](keys=[[1.0, 0.0], [0.0, 1.0]], values=[[1.0, 0.0], [0.0, 1.0]])
    st = ex.set(x=1.0, y=2.0, scaled=True)
    # float64 (the explorer's and the closed form's): scores and weights are O(1), a few roundings
    # of u = 1.1e-16 each, so 1e-12 holds with a wide margin.
    np.testing.assert_allclose(st["scores"], [1 / math.sqrt(2), 2 / math.sqrt(2)], atol=1e-12)
    np.testing.assert_allclose(np.round(st["weights"], 2), [0.33, 0.67])
    st = ex.set(x=1.0, y=1.0)
    np.testing.assert_allclose(np.round(st["scores"], 2), [0.71, 0.71])
    np.testing.assert_allclose(st["weights"], [0.5, 0.5], atol=1e-12)


def test_the_xy_grid_is_one_frame_set_and_small(explorer):
    assert explorer.groups == [("x", "y"), ("key_length",)]
    header, buffers = explorer.frame_set(0)
    assert header["shape"] == [61, 61] and header["n"] == 61 * 61
    assert sum(map(len, buffers)) < 1_500_000
    header, _ = explorer.frame_set(1)
    assert header["shape"] == [12]  # 0.25, 0.5, ..., 3.0


@pytest.mark.claim("C03")
def test_c03_a_stretched_key_scores_in_proportion_and_keeps_its_cosine(explorer):
    """Against torch's attention with k1 multiplied by c by hand: the score scales by c, the cosine
    does not move.
    """
    for c in (0.5, 2.0, 3.0):
        keys = [[c * a for a in DEFAULT_KEYS[0]], *DEFAULT_KEYS[1:]]
        st = explorer.state(x=1.0, y=2.0, key_length=c, scaled=False)
        s_ref, w_ref, o_ref = _reference(1.0, 2.0, keys, DEFAULT_VALUES, False)
        np.testing.assert_allclose(st["scores"], s_ref.numpy(), rtol=1e-12)
        np.testing.assert_allclose(st["weights"], w_ref.numpy(), rtol=1e-12)
        np.testing.assert_allclose(st["output (x, y)"], o_ref.numpy(), rtol=1e-12)
        q, k = (
            torch.tensor([1.0, 2.0], dtype=torch.float64),
            torch.tensor(keys, dtype=torch.float64),
        )
        np.testing.assert_allclose(
            st["cosine(q, k)"], (k @ q / (k.norm(dim=1) * q.norm())).numpy(), rtol=1e-12
        )
        np.testing.assert_allclose(st["key length |k|"][0], c * 1.0, rtol=1e-12)
        fr = explorer.compute(x=1.0, y=2.0, key_length=c, scaled=False)
        np.testing.assert_allclose(
            fr.arrays["keys"], k.numpy(), rtol=1e-12
        )  # the picture moves the key too
    # q = (1, 2): k2 = (0, 1) is better aligned (cos 0.89 vs 0.45), yet k1 stretched 3x wins
    # (score 3 > 2)
    long = explorer.state(x=1.0, y=2.0, key_length=3.0, scaled=False)
    assert (
        long["cosine(q, k)"][1] > long["cosine(q, k)"][0]
        and long["weights"][0] > long["weights"][1]
    )


def test_rejects_bad_keys():
    with pytest.raises(ValueError, match="keys has S=3 points but values has S=2"):
        query_explorer(keys=[[1, 0], [0, 1], [1, 1]], values=[[1, 0], [0, 1]])
    with pytest.raises(ValueError, match=r"shape \(S, 2\)"):
        query_explorer(keys=[[1, 0, 0], [0, 1, 0]], values=[[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="key_labels has 1 names"):
        query_explorer(key_labels=["a"])
