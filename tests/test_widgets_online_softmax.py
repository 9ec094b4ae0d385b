"""The online-softmax explorer: running max/sum/output against a hand-computed prefix softmax, the
bug switch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlib.widgets.explorers.online_softmax import online_softmax_explorer


@pytest.fixture(scope="module")
def explorer():
    return online_softmax_explorer()


def _per_block(stairs):
    """The value held over each key, from a (2S, 2) staircase."""
    return np.asarray(stairs)[::2, 1]


def _keys(ex, shuffled):
    k, v = ex.data["k"], ex.data["v"]
    if shuffled:
        k, v = k[ex.data["perm"]], v[ex.data["perm"]]
    return k, v


def test_defaults_rescale_in_a_later_block(explorer):
    assert explorer.values() == {"block_size": 4, "query": 0, "shuffled": False, "rescale": True}
    state = explorer.state()
    assert state["blocks"] == 6  # 24 keys in blocks of 4
    # the default view rescales: the maximum rises in a later block (issue 11)
    assert state["blocks where m rose (rescaled)"] >= 1


@pytest.mark.parametrize(
    "block_size, query, shuffled",
    [(1, 0, False), (4, 1, True), (5, 2, False), (7, 3, True), (24, 0, False)],
)
def test_c42_running_max_sum_and_output_match_prefix_softmax(explorer, block_size, query, shuffled):
    """After each block, m is the max of the scores seen, l = Σ exp(s − m) and a/l the prefix
    softmax's output.
    """
    f = explorer.compute(block_size=block_size, query=query, shuffled=shuffled, rescale=True)
    q = explorer.data["q"]
    k, v = _keys(explorer, shuffled)
    s = (q[query] @ k.T) / math.sqrt(q.shape[-1])  # (S,) computed here, independently
    S = k.shape[0]
    m_want, l_want, o_want = np.zeros(S), np.zeros(S), np.zeros((S, 2))
    for start in range(0, S, block_size):
        e = min(start + block_size, S)
        seen = s[:e]
        m_want[start:e] = float(seen.max())
        l_want[start:e] = float(torch.exp(seen - seen.max()).sum())
        o_want[start:e] = (torch.softmax(seen, 0) @ v[:e]).numpy()
    # float64 both: m exactly (a max), l and the outputs from <= 24 terms of size <= ~5 with a
    # few roundings each (~24 x 5 x 1.1e-16 ~ 1e-14): rtol 1e-12 / 1e-10 with atol 1e-13 for
    # outputs near 0 hold with margin; a block rescaled wrongly changes them by > 1e-2.
    np.testing.assert_allclose(_per_block(f.arrays["m_stairs"]), m_want, rtol=1e-12)
    np.testing.assert_allclose(_per_block(f.arrays["l_stairs"]), l_want, rtol=1e-12)
    np.testing.assert_allclose(_per_block(f.arrays["o0"]), o_want[:, 0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(_per_block(f.arrays["o1"]), o_want[:, 1], rtol=1e-10, atol=1e-13)
    ends = list(range(block_size, S, block_size)) + [S]
    assert f.readout["blocks"] == len(ends)
    m_blocks = np.array([float(s[:e].max()) for e in ends])
    assert f.readout["blocks where m rose (rescaled)"] == int((np.diff(m_blocks) > 0).sum())
    assert f.readout["full softmax's Σ exp(s − max)"] == pytest.approx(
        float(torch.exp(s - s.max()).sum()), rel=1e-12
    )


@pytest.mark.parametrize("block_size", [1, 3, 8, 24])
@pytest.mark.parametrize("shuffled", [False, True])
def test_c42_output_equals_sdpa_whatever_the_order(explorer, block_size, shuffled):
    q, k, v = explorer.data["q"], explorer.data["k"], explorer.data["v"]
    ref = F.scaled_dot_product_attention(
        q, k, v
    )  # (L, Dv), an independent reference, original order
    for i in range(q.shape[0]):
        r = explorer.state(block_size=block_size, query=i, shuffled=shuffled, rescale=True)
        np.testing.assert_allclose(
            r["output a/l after the last block"], ref[i].numpy(), rtol=1e-12, atol=1e-14
        )
        assert r["max |a/l − full| for query i"] < 1e-12  # float64: ~1e-16 per operation, 24 terms


def test_forgetting_to_rescale_gives_the_wrong_answer_exactly_when_the_max_rises(explorer):
    q = explorer.data["q"]
    k, v = _keys(explorer, False)
    s = (q[0] @ k.T) / math.sqrt(q.shape[-1])  # (S,)
    # the bug's sum for blocks of 4, written out: each block's Σ exp(s − m_now), never rescaled
    want, m = 0.0, -math.inf
    for start in range(0, 24, 4):
        m = max(m, float(s[start : start + 4].max()))
        want += float(torch.exp(s[start : start + 4] - m).sum())
    bad = explorer.compute(block_size=4, query=0, rescale=False)
    assert _per_block(bad.arrays["l_stairs"])[-1] == pytest.approx(want, rel=1e-12)
    assert bad.readout["max |a/l − full| for query i"] > 1e-3
    # one block holds every key: nothing to rescale, so the "bug" is harmless
    assert explorer.state(block_size=24, rescale=False)["max |a/l − full| for query i"] < 1e-12


def test_memory_readout_in_bytes(explorer):
    state = explorer.state(block_size=6)
    assert state["score bytes: full L×S"] == 4 * 24 * 4
    assert state["score bytes: one block L×block"] == 4 * 6 * 4


def test_block_boundaries_are_drawn_between_blocks(explorer):
    walls = np.asarray(explorer.compute(block_size=5).arrays["walls"])  # (S-1, 2, 2)
    xs = sorted(float(x) for x in walls[:, 0, 0] if x > -1)
    assert xs == [4.5, 9.5, 14.5, 19.5]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(block_size=0), "block_size"),
        (dict(block_size=25), "block_size"),
        (dict(query=4), "query"),
        (dict(num_queries=0), "num_queries"),
        (dict(num_keys=1), "num_keys"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        online_softmax_explorer(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(block_size=2.0), dict(query="0"), dict(num_keys=None)])
def test_bad_argument_types_are_typeerrors(kwargs):
    with pytest.raises(TypeError, match="must be an int"):
        online_softmax_explorer(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(shuffled=1), dict(rescale="yes")])
def test_bad_switch_types_are_typeerrors(kwargs):
    with pytest.raises(TypeError, match="must be a bool"):
        online_softmax_explorer(**kwargs)
