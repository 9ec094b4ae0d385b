"""The online-softmax explorer: blockwise attention's running max, sum and output, block by block.

Teaches C42: reading the keys in blocks and keeping, per query, a running maximum ``m``, a running
sum ``l = sum exp(score - m)`` and a running numerator ``a = sum exp(score - m) v`` (both rescaled
by ``exp(m_old - m_new)`` whenever ``m`` grows) gives exactly full attention, whatever the block
size and the key order, while only an ``(L, block)`` slice of scores exists at a time. The "forget
to rescale" switch shows the classic bug: the old sums stay measured against an old maximum, and the
output is wrong. The correct trace is :func:`attnlib.core.blockwise.blockwise_attention_steps`; the
buggy one is written out here (:func:`unrescaled_trace`).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.core.attention import dot_product_attention
from attnlib.core.blockwise import blockwise_attention_steps
from attnlib.core.scoring import scaled_dot_score
from attnlib.course.costs import score_bytes
from attnlib.util._checks import check_int
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Bars, Line, Points, Segments
from attnlib.widgets.framework.controls import int_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene

__all__ = ["online_softmax_explorer", "unrescaled_trace", "block_trace"]

_OFF = -100.0  # x of a guide that is not in use: outside every panel, so it is clipped away


def block_trace(q, k, v, block_size: int) -> dict[str, np.ndarray]:
    """The library's online softmax after every block: ``m``, ``l`` ``(N, L)``, output
    ``(N, L, Dv)``, ends ``(N,)``.
    """
    steps = list(blockwise_attention_steps(q, k, v, block_size=block_size))
    return {
        "end": np.array([s.key_stop for s in steps]),
        "m": np.stack([plotting.to_numpy(s.running_max) for s in steps]),
        "l": np.stack([plotting.to_numpy(s.running_sum) for s in steps]),
        "out": np.stack([plotting.to_numpy(s.output) for s in steps]),
    }


def unrescaled_trace(scores: np.ndarray, v: np.ndarray, block_size: int) -> dict[str, np.ndarray]:
    """The classic bug: the online softmax *without* the factor ``exp(m_old - m_new)``.

    Each block's terms ``exp(s - m_new)`` are added to sums that are still relative to older
    maxima, so the result is not softmax unless the maximum never rises after the first block.

    Args:
        scores: ``(L, S)`` scores; v: ``(S, Dv)`` values; block_size: keys per block.
    Returns:
        As :func:`block_trace`.
    """
    L, S = scores.shape
    m, l, a = np.full(L, -np.inf), np.zeros(L), np.zeros((L, v.shape[1]))
    out: dict[str, list] = {"end": [], "m": [], "l": [], "out": []}
    for start in range(0, S, block_size):
        s = scores[:, start : start + block_size]  # (L, b)
        m = np.maximum(m, s.max(1))
        p = np.exp(s - m[:, None])  # (L, b)
        l, a = l + p.sum(1), a + p @ v[start : start + block_size]  # no rescaling of l and a
        for key, val in (
            ("end", min(start + block_size, S)),
            ("m", m),
            ("l", l),
            ("out", a / l[:, None]),
        ):
            out[key].append(val)
    return {key: np.array(val) for key, val in out.items()}


def _stairs(end: np.ndarray, values: np.ndarray, num_keys: int) -> np.ndarray:
    """``(2 S, 2)`` staircase: the value after each block, held over that block's keys."""
    per_key = np.repeat(values, np.diff(np.concatenate([[0], end])))  # (S,)
    x = np.stack([np.arange(num_keys) - 0.5, np.arange(num_keys) + 0.5], 1).reshape(-1)
    return np.stack([x, np.repeat(per_key, 2)], 1)


def _fmt(x: np.ndarray) -> str:
    return ", ".join(f"{float(u):.3f}" for u in x)


@builder(N_("online_softmax"))
def online_softmax_explorer(
    block_size: int = 4,
    query: int = 0,
    *,
    shuffled: bool = False,
    rescale: bool = True,
    num_queries: int = 4,
    num_keys: int = 24,
    d_k: int = 8,
    seed: int = 0,
) -> Explorer:
    """Block-size and query sliders over blockwise attention, with key-order and rescaling switches
    (C42).

    Left: query i's scores over the keys (bars), the block boundaries (grey lines), the running
    max after each block (red staircase) and the blocks where it rose (red triangles: there the
    old sums are rescaled). Middle: the running sum ``l`` after each block, with the full softmax's
    denominator dashed. Right: the running output ``a / l`` (its two components) against full
    attention's (dashed). All numbers come from one draw of a local generator.

    Args:
        block_size: starting keys per block, in ``[1, num_keys]``.
        query: starting query index, in ``[0, num_queries)``.
        shuffled: start with the keys (and their values) in a fixed shuffled order.
        rescale: start with the correct update (False: the bug that forgets ``exp(m_old − m_new)``).
        num_queries: L (1 ... 16).
        num_keys: S (2 ... 64).
        d_k: width of queries and keys.
        seed: seed of the local generator (the global one is untouched).

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``block_size``,
        ``query``, ``shuffled`` and ``rescale`` and a readout of the running max, sum and rescaling
        factor after each block, the output against full attention's, and the bytes of the score
        arrays.
    """
    _check_arguments(block_size, query, shuffled, rescale, num_queries, num_keys, d_k)
    L, S = num_queries, num_keys
    gen = torch.Generator().manual_seed(seed)
    q = 1.5 * torch.randn(L, d_k, generator=gen, dtype=torch.float64)  # (L, Dk): spread-out scores
    k = torch.randn(S, d_k, generator=gen, dtype=torch.float64)  # (S, Dk)
    v = torch.randn(S, 2, generator=gen, dtype=torch.float64)  # (S, Dv)
    perm = torch.randperm(S, generator=gen)  # (S,) the shuffled key order
    order = {False: torch.arange(S), True: perm}
    full_out = plotting.to_numpy(dot_product_attention(q, k, v)[0])  # (L, Dv): order-free
    scores = {sh: plotting.to_numpy(scaled_dot_score(q, k[o])) for sh, o in order.items()}  # (L, S)
    denominators = np.exp(scores[False] - scores[False].max(1, keepdims=True)).sum(1)  # (L,)
    traces = {}
    for sh, o in order.items():
        for b in range(1, S + 1):
            traces[(b, sh, True)] = block_trace(q, k[o], v[o], b)
            traces[(b, sh, False)] = unrescaled_trace(scores[sh], plotting.to_numpy(v[o]), b)
    s_lo = min(float(x.min()) for x in scores.values()) - 0.3
    s_hi = max(float(x.max()) for x in scores.values()) + 0.3
    l_top = 1.12 * max(float(t["l"].max()) for t in traces.values())
    outs = np.concatenate([t["out"].reshape(-1) for t in traces.values()] + [full_out.reshape(-1)])
    o_lo, o_hi = float(outs.min()) - 0.15, float(outs.max()) + 0.15

    def compute(block_size, query, shuffled, rescale):
        b, i = int(block_size), int(query)
        tr = traces[(b, bool(shuffled), bool(rescale))]
        end, m, l, out = (
            tr["end"],
            tr["m"][:, i],
            tr["l"][:, i],
            tr["out"][:, i],
        )  # (N,), (N,), (N,), (N, Dv)
        m_old = np.concatenate([[-np.inf], m[:-1]])
        factor = np.exp(m_old - m)  # (N,): 0 at the first block (nothing to rescale), 1 if m held
        rose = np.flatnonzero(factor[1:] < 1.0) + 1  # blocks (after the first) where m rose
        starts = np.concatenate([[0], end[:-1]])  # (N,)
        walls = np.full((S - 1, 2, 2), _OFF)
        walls[: len(end) - 1, :, 0] = starts[1:, None] - 0.5
        walls[: len(end) - 1, :, 1] = [s_lo, s_hi]
        marks = np.full((S, 2), _OFF)
        marks[: len(rose), 0] = starts[rose] - 0.5
        marks[: len(rose), 1] = m[rose]
        frame_out = out[-1]
        return Frame(
            arrays={
                "scores": scores[bool(shuffled)][i],
                "walls": walls,
                "m_stairs": _stairs(end, m, S),
                "rose": marks,
                "l_stairs": _stairs(end, l, S),
                "l_full": [[-0.5, denominators[i]], [S - 0.5, denominators[i]]],
                "o0": _stairs(end, out[:, 0], S),
                "o1": _stairs(end, out[:, 1], S),
                "o0_full": [[-0.5, full_out[i, 0]], [S - 0.5, full_out[i, 0]]],
                "o1_full": [[-0.5, full_out[i, 1]], [S - 0.5, full_out[i, 1]]],
            },
            readout={
                N_("blocks"): len(end),
                N_("blocks where m rose (rescaled)"): len(rose),
                N_("running max m after each block"): _fmt(m),
                N_("rescale exp(m_old − m_new) at each block"): (
                    _("start, {factors}", factors=_fmt(factor[1:])) if len(end) > 1 else _("start")
                ),
                N_("running sum l after each block"): _fmt(l),
                N_("full softmax's Σ exp(s − max)"): float(denominators[i]),
                N_("output a/l after the last block"): frame_out,
                N_("full attention's output"): full_out[i],
                N_("max |a/l − full| for query i"): float(np.abs(frame_out - full_out[i]).max()),
                N_("score bytes: full L×S"): score_bytes(L, S),
                N_("score bytes: one block L×block"): score_bytes(L, b),
            },
        )

    scene = _scene(S, (s_lo, s_hi), l_top, (o_lo, o_hi))
    controls = {
        "block_size": int_slider(_("block size (keys per block)"), 1, S, block_size, width="320px"),
        "query": int_slider(_("query i"), 0, L - 1, query, width="220px"),
        "shuffled": toggle(_("shuffle the key order"), shuffled),
        "rescale": toggle(_("rescale old sums by exp(m_old − m_new)"), rescale),
    }
    data = {"q": q, "k": k, "v": v, "perm": perm}
    return Explorer(controls, compute, scene, digits=3, data=data)


def _check_arguments(block_size, query, shuffled, rescale, num_queries, num_keys, d_k) -> None:
    check_int("num_queries", num_queries, min=1, max=16)
    check_int("num_keys", num_keys, min=2, max=64)
    check_int("block_size", block_size, min=1, max=num_keys)
    check_int("query", query, min=0, max=num_queries - 1)
    check_int("d_k", d_k, min=1, max=64)
    for name, flag in (("shuffled", shuffled), ("rescale", rescale)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")


def _scene(S: int, s_range, l_top: float, o_range) -> Scene:
    """The scores in blocks with the running max, the running sum, the running output."""
    (s_lo, s_hi), (o_lo, o_hi) = s_range, o_range
    key_ticks = list(range(0, S, 4))
    score_panel = Panel(
        [
            Line([[-0.5, 0.0], [S - 0.5, 0.0]], color="0.6", width=0.6),
            Bars("scores", color="C0", label=_("score s_ij")),
            Segments("walls", color="0.35", width=1.0),
            Line("m_stairs", color="C3", width=2.0, label=_("running max m")),
            Points("rose", color="C3", marker="^", size=6, label=_("m rose: rescale")),
        ],
        xlim=(-0.7, S - 0.3),
        ylim=(s_lo, s_hi),
        title=_("scores of query i, in blocks"),
        xlabel=_("key position j (reading order)"),
        ylabel=_("score"),
        xticks=key_ticks,
        legend="lower right",
    )
    sum_panel = Panel(
        [
            Line("l_full", color="0.3", width=1.0, dash=True, label=_("full Σ exp(s − max)")),
            Line("l_stairs", color="C2", width=2.0, label=_("running sum l")),
        ],
        xlim=(-0.7, S - 0.3),
        ylim=(0.0, l_top),
        title=_("running sum after each block"),
        xlabel=_("key position j"),
        xticks=key_ticks,
        legend="upper left",
    )
    out_panel = Panel(
        [
            Line("o0_full", color="C0", width=1.0, dash=True),
            Line("o1_full", color="C1", width=1.0, dash=True),
            Line("o0", color="C0", width=2.0, label=_("a/l, component 1")),
            Line("o1", color="C1", width=2.0, label=_("a/l, component 2")),
        ],
        xlim=(-0.7, S - 0.3),
        ylim=(o_lo, o_hi),
        title=_("running output (dashed: full)"),
        xlabel=_("key position j"),
        xticks=key_ticks,
        legend="lower right",
    )
    scene = Scene(
        [score_panel, sum_panel, out_panel],
        cols=3,
        width=960,
        height=270,
        col_widths=[1.3, 1.0, 1.0],
    )
    return scene
