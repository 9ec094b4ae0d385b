"""The online-softmax explorer: blockwise attention's running max and running sum, block by block.

Teaches C42: reading the keys in blocks and keeping, per query, a running maximum ``m`` and a
running sum ``l = sum exp(score - m)`` (rescaled whenever ``m`` grows) gives exactly full
attention, while only an ``(L, block)`` slice of scores ever exists instead of the ``(L, S)``
matrix. Built on :func:`attnlib.blockwise.online_softmax_trace`.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib._checks import check_int
from attnlib.attention import dot_product_attention
from attnlib.blockwise import online_softmax_trace
from attnlib.costs import score_bytes
from attnlib.scoring import scaled_dot_score
from attnlib.widgets.base import Explorer, int_slider, new_figure, register

__all__ = ["online_softmax_explorer"]


def _boundaries(block_size: int, num_keys: int, lo: float, hi: float):
    """x, y of the vertical lines between blocks (NaN-separated, one Line2D for all)."""
    xs, ys = [], []
    for b in range(block_size, num_keys, block_size):
        xs += [b - 0.5, b - 0.5, np.nan]
        ys += [lo, hi, np.nan]
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def _bar_verts(heights: np.ndarray, width: float = 0.8) -> list[np.ndarray]:
    """Rectangles from 0 to each height, centred on 0, 1, 2, ... (vertices for a PolyCollection)."""
    h = np.asarray(heights, dtype=float)
    x0 = np.arange(h.size) - width / 2
    return [np.array([[a, 0.0], [a + width, 0.0], [a + width, b], [a, b]]) for a, b in zip(x0, h)]


def _steps_xy(block_end: np.ndarray, values: np.ndarray):
    """A staircase: the value after each block, held from its first key to its last."""
    starts = np.concatenate([[0], block_end[:-1]]) - 0.5
    ends = block_end - 0.5
    x = np.stack([starts, ends], 1).reshape(-1)
    y = np.repeat(values, 2)
    return x, y


@register("online_softmax")
def online_softmax_explorer(block_size: int = 4, query: int = 0, *, num_queries: int = 4,
                            num_keys: int = 24, d_k: int = 8, seed: int = 0) -> Explorer:
    """A block-size slider over blockwise attention of a few queries (C42).

    Left: query i's scores over the keys (bars), the blocks (grey lines) and the running max
    after each block (red staircase). Middle: the running sum ``l`` after each block, with the
    full softmax's denominator dashed. Right: bytes of the largest score array, full ``L × S``
    against one ``L × block``. All numbers come from one draw of a local generator.

    Args:
        block_size: starting keys per block, in ``[1, num_keys]``.
        query: starting query index, in ``[0, num_queries)``.
        num_queries: L (1 ... 16).
        num_keys: S (2 ... 64).
        d_k: width of queries and keys.
        seed: seed of the local generator (the global one is untouched).

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``block_size`` and ``query`` and a
        readout of the running max and sum per block, the largest difference from full attention
        and the bytes of the score arrays.
    """
    check_int("num_queries", num_queries, min=1, max=16)
    check_int("num_keys", num_keys, min=2, max=64)
    check_int("block_size", block_size, min=1, max=num_keys)
    check_int("query", query, min=0, max=num_queries - 1)
    L, S = num_queries, num_keys
    gen = torch.Generator().manual_seed(seed)
    q = 1.5 * torch.randn(L, d_k, generator=gen, dtype=torch.float64)  # (L, Dk): spread-out scores
    k = torch.randn(S, d_k, generator=gen, dtype=torch.float64)  # (S, Dk)
    v = torch.randn(S, 4, generator=gen, dtype=torch.float64)  # (S, Dv)
    scores = plotting.to_numpy(scaled_dot_score(q, k))  # (L, S), for the picture only
    full_out, full_w = dot_product_attention(q, k, v)  # (L, Dv), (L, S): the reference
    traces = {b: online_softmax_trace(q, k, v, block_size=b) for b in range(1, S + 1)}  # S <= 64
    # One block holding every key: its running sum is the full softmax's Σ exp(s − max).
    denominators = plotting.to_numpy(traces[S].running_sum[-1])  # (L,)
    sum_top = max(float(t.running_sum.max()) for t in traces.values())

    controls = {
        "block_size": int_slider("block size (keys per block)", 1, S, block_size, width="320px"),
        "query": int_slider("query i", 0, L - 1, query, width="220px"),
    }
    fig, (ax_s, ax_l, ax_m) = new_figure(1, 3, figsize=(8.6, 3.2), width_ratios=[2.2, 1.6, 1.0])
    lo, hi = float(scores.min()) - 0.3, float(scores.max()) + 0.3
    from matplotlib.collections import PolyCollection

    # One collection for all bars: a single artist is much cheaper to redraw than S patches.
    bars = ax_s.add_collection(PolyCollection(_bar_verts(scores[query]), facecolors="C0", alpha=0.7,
                                              label="score s_ij"))
    ax_s.set_xlim(-0.7, S - 0.3)
    ax_s.set_ylim(lo, hi)
    ax_s.axhline(0.0, color="0.6", lw=0.6)
    (walls,) = ax_s.plot(*_boundaries(block_size, S, lo, hi), color="0.45", lw=1.0, ls=":")
    (mline,) = ax_s.plot([], [], color="C3", lw=2.0, label="running max m")
    ax_s.set_title("scores of query i, in blocks")
    ax_s.set_xlabel("key j")
    ax_s.set_ylabel("score")
    ax_s.legend(loc="lower right", fontsize="small")

    (lline,) = ax_l.plot([], [], "o-", color="C2", ms=4, label="running sum l")
    (lfull,) = ax_l.plot([-0.5, S - 0.5], [denominators[query]] * 2, "--", color="0.3",
                         lw=1.0, label="full softmax's Σ exp(s − max)")
    ax_l.set_xlim(-0.5, S - 0.5)
    ax_l.set_ylim(0.0, sum_top * 1.15)
    ax_l.set_title("running sum after each block")
    ax_l.set_xlabel("keys read")
    ax_l.legend(loc="upper left", fontsize="small")

    full_bytes = score_bytes(L, S)
    mem = ax_m.bar([0, 1], [full_bytes, score_bytes(L, block_size)], color=["C1", "C0"],
                   tick_label=["full\nL×S", "one block\nL×block"])
    ax_m.set_ylim(0, full_bytes * 1.15)
    ax_m.set_title("largest score array")
    ax_m.set_ylabel("bytes (float32)")

    def update(block_size, query):
        b, i = int(block_size), int(query)
        tr = traces[b]
        ends = plotting.to_numpy(tr.block_end)
        m_i = plotting.to_numpy(tr.running_max[:, i])  # (N,)
        l_i = plotting.to_numpy(tr.running_sum[:, i])  # (N,)
        bars.set_verts(_bar_verts(scores[i]))
        walls.set_data(*_boundaries(b, S, lo, hi))
        mline.set_data(*_steps_xy(ends, m_i))
        lline.set_data(ends - 0.5, l_i)
        lfull.set_ydata([denominators[i]] * 2)
        block_bytes = score_bytes(L, b)
        plotting.set_bar_heights(mem, [full_bytes, block_bytes])
        return {
            "blocks": len(ends),
            "running max m after each block": m_i,
            "running sum l after each block": l_i,
            "rescale exp(m_old − m_new) at each block": np.exp(np.concatenate([[m_i[0]], m_i[:-1]]) - m_i),
            "max |blockwise − full| over all outputs": float((tr.output - full_out).abs().max()),
            "score bytes: full L×S": full_bytes,
            "score bytes: one block L×block": block_bytes,
        }

    ex = Explorer(controls, update, fig, dynamic=[bars, walls, mline, lline, lfull, *mem.patches],
                  digits=3)
    ex.data = {"q": q, "k": k, "v": v, "scores": scores, "full_out": full_out, "full_weights": full_w}
    return ex
