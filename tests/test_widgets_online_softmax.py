"""The online-softmax explorer: running max/sum against a hand-computed softmax, memory in bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlib.blockwise import online_softmax_trace
from attnlib.widgets import BUILDERS
from attnlib.widgets.online_softmax import online_softmax_explorer


pytestmark = pytest.mark.usefixtures("agg_figures")


def test_registered_and_builds_without_arguments():
    assert BUILDERS["online_softmax"] is online_softmax_explorer
    ex = online_softmax_explorer()
    assert ex.values() == {"block_size": 4, "query": 0}
    assert ex.state()["blocks"] == 6  # 24 keys in blocks of 4
    assert ex.render().shape[2] == 4


@pytest.mark.parametrize("block_size, query", [(1, 0), (4, 1), (5, 2), (7, 3), (24, 0)])
def test_c42_running_max_and_sum_match_prefix_softmax(block_size, query):
    """After each block, m is the max of the scores seen and l = sum exp(s - m) over them."""
    ex = online_softmax_explorer()
    state = ex.set(block_size=block_size, query=query)
    q, k = ex.data["q"], ex.data["k"]
    s = (q[query] @ k.T) / np.sqrt(q.shape[-1])  # (S,) computed here, independently
    S = k.shape[0]
    ends = list(range(block_size, S, block_size)) + [S]
    assert state["blocks"] == len(ends)
    m_expected = [float(s[:e].max()) for e in ends]
    l_expected = [float(torch.exp(s[:e] - s[:e].max()).sum()) for e in ends]
    np.testing.assert_allclose(state["running max m after each block"], m_expected, rtol=1e-12)
    np.testing.assert_allclose(state["running sum l after each block"], l_expected, rtol=1e-12)
    rescale = np.exp(np.array([m_expected[0]] + m_expected[:-1]) - np.array(m_expected))
    np.testing.assert_allclose(state["rescale exp(m_old − m_new) at each block"], rescale, rtol=1e-12)
    # the last running sum is the full softmax's denominator
    assert l_expected[-1] == pytest.approx(float(torch.exp(s - s.max()).sum()), rel=1e-12)


@pytest.mark.parametrize("block_size", [1, 3, 8, 24])
def test_c42_output_equals_full_attention(block_size):
    ex = online_softmax_explorer()
    state = ex.set(block_size=block_size)
    q, k, v = ex.data["q"], ex.data["k"], ex.data["v"]
    ref = F.scaled_dot_product_attention(q, k, v)  # (L, Dv), an independent reference
    out = online_softmax_trace(q, k, v, block_size=block_size).output
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    assert state["max |blockwise − full| over all outputs"] < 1e-12


def test_memory_readout_in_bytes():
    ex = online_softmax_explorer()
    state = ex.set(block_size=6)
    assert state["score bytes: full L×S"] == 4 * 24 * 4
    assert state["score bytes: one block L×block"] == 4 * 6 * 4
    heights = [p.get_height() for p in ex.figure.axes[2].patches]
    assert heights == [4 * 24 * 4, 4 * 6 * 4]


def test_trace_shapes():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4), torch.randn(10, 4), torch.randn(10, 2)
    tr = online_softmax_trace(q, k, v, block_size=4)
    assert tr.block_end.tolist() == [4, 8, 10]
    assert tuple(tr.running_max.shape) == (3, 3) and tuple(tr.running_sum.shape) == (3, 3)
    torch.testing.assert_close(tr.running_max[-1], (q @ k.T / 2).amax(-1))
    with pytest.raises(AttributeError):  # a frozen result
        tr.output = None


@pytest.mark.parametrize("kwargs, match", [
    (dict(block_size=0), "block_size"),
    (dict(block_size=25), "block_size"),
    (dict(query=4), "query"),
    (dict(num_queries=0), "num_queries"),
    (dict(num_keys=1), "num_keys"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        online_softmax_explorer(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(block_size=2.0), dict(query="0"), dict(num_keys=None)])
def test_bad_argument_types_are_typeerrors(kwargs):
    with pytest.raises(TypeError, match="must be an int"):
        online_softmax_explorer(**kwargs)
