"""Explorer for additive attention against a projected dot product (C24).

- :func:`additive_attention_explorer` — a 2-D query against 3-D keys (d_q ≠ d_k), scored two ways:
  additive attention a(q, k) = w_vᵀ tanh(W_q q + W_k k), and a dot product of projections
  (q W_Q)·(k W_K)/√h on the same shapes. The score of one key (chosen in a menu) over the whole
  (q₁, q₂) plane is drawn for both, with contour lines: the projected dot product is a plane in q
  (straight, evenly spaced contours), the additive score is curved (C24).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlib.core.additive import AdditiveAttention
from attnlib.core.attention import dot_product_attention
from attnlib.core.scoring import dot_score
from attnlib.util._checks import check_int
from attnlib.widgets.framework.artists import Bars, Heatmap, Line, Points, Segments, Text
from attnlib.widgets.framework.controls import dropdown, float_slider
from attnlib.widgets.framework.explorer import Explorer
from attnlib.widgets.framework.scene import Frame, Panel, Scene

__all__ = ["additive_attention_explorer"]


_Q_LIM, _Q_STEP = 3.0, 0.1
_DRAW = 2  # the heatmaps show every 2nd grid point (31 x 31 cells of 0.2): each frame carries them
_TICKS = (-3.0, -1.5, 0.0, 1.5, 3.0)


def _contours(z: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Iso-lines of ``z`` ``(n, n)`` (row = q₂ index, column = q₁ index) at ``levels``, in the
    drawn heatmap's cell coordinates (grid index / ``_DRAW``), as segments ``(N, 2, 2)``.

    Every 2nd vertex is kept (and the last), which halves what each frame carries; the lines
    are smooth on this grid, so the picture does not change.
    """
    import contourpy

    gen = contourpy.contour_generator(z=z)
    segs = []
    for lev in levels:
        for line in gen.lines(lev):
            if len(line) < 2:
                continue
            line = np.asarray(line)
            keep = line[sorted({*range(0, len(line), 2), len(line) - 1})] / _DRAW
            segs.append(np.stack([keep[:-1], keep[1:]], 1))
    return np.concatenate(segs) if segs else np.zeros((0, 2, 2))


def _padded(segments: list[np.ndarray], width: float) -> tuple[np.ndarray, np.ndarray]:
    """Pad each key's segments ``(N_j, 2, 2)`` to one length: ``(S, N, 2, 2)`` and widths
    ``(S, N)``, 0 for the padding (every frame of an explorer has the same shapes).
    """
    n = max(len(seg) for seg in segments)
    xy, widths = np.zeros((len(segments), n, 2, 2)), np.zeros((len(segments), n))
    for j, seg in enumerate(segments):
        xy[j, : len(seg)], widths[j, : len(seg)] = seg, width
    return xy, widths


def additive_attention_explorer(
    num_keys: int = 5,
    d_q: int = 2,
    d_k: int = 3,
    d_hidden: int = 6,
    *,
    seed: int = 260,
    key: int = 4,
    query=(0.0, -1.5),
) -> Explorer:
    """Additive attention against a projected dot product, on queries and keys of different widths
    (C24).

    A fixed, randomly initialised :class:`attnlib.AdditiveAttention` scores one query of width
    ``d_q`` (its first two components on sliders, the rest 0) against ``num_keys`` keys of width
    ``d_k``: ``e_j = w_vᵀ tanh(W_q q + W_k k_j)``. Beside it, a dot product of projections onto the
    same width h, ``(q W_Q)·(k_j W_K)/√h``, handles the same shapes. Left and middle: the score of
    the key chosen in the menu as a function of (q₁, q₂) for each (a heatmap with contour lines;
    the query is the dot; the dashed line, the queries with the same q₂). All keys share one colour
    scale per score; the 9 contour levels span the chosen key's own range. Right: the weights of
    every key under both scores, for the current query.

    The default seed (260) is one where the reversal that only a curved score allows is plain to
    see: along the line q₂ = −1.5 the additive weights are won by k4, then k1, then k4 again, each
    time by a wide margin, while under the dot product each key wins on one interval at most.

    Args:
        num_keys: S, the number of keys (2..8).
        d_q, d_k: query width (>= 2) and key width; they may differ.
        d_hidden: h, the hidden (shared) width of both scores.
        seed: seed of the private generator for the keys and the parameters.
        key: which key's score surface is drawn first (1-based); the menu ``key`` changes it.
        query: the starting first two query components, each in [-3, 3] (on the 0.1 grid).

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``q1``, ``q2`` (two
        fast sliders, each precomputed over its range) and ``key`` (the menu).
    """
    check_int("d_q", d_q, min=2)  # two sliders
    check_int("num_keys", num_keys, min=2, max=8)
    check_int("key", key, min=1, max=num_keys)
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # leave torch's global generator as it was
        attn = AdditiveAttention(d_q, d_k, d_hidden).double()
    with torch.no_grad():  # parameters from the private generator, not torch's global one
        for p in attn.parameters():
            p.copy_(
                torch.randn(p.shape, generator=g, dtype=torch.float64) / p.shape[-1] ** 0.5 * 1.5
            )
    keys = torch.randn(1, num_keys, d_k, generator=g, dtype=torch.float64)  # (B=1, S, d_k)
    w_Q = torch.randn(d_q, d_hidden, generator=g, dtype=torch.float64) / d_q**0.5  # (d_q, h)
    w_K = torch.randn(d_k, d_hidden, generator=g, dtype=torch.float64) / d_k**0.5  # (d_k, h)
    values = torch.arange(num_keys, dtype=torch.float64).reshape(
        1, num_keys, 1
    )  # (1, S, 1): v_j = j - 1
    labels = [f"k{j + 1}" for j in range(num_keys)]
    scale = 1.0 / math.sqrt(d_hidden)

    def both(q: torch.Tensor):
        """Scores and weights of queries ``q`` ``(1, L, d_q)`` under both scores."""
        with torch.no_grad():
            feats = attn.features(q, keys)  # (1, L, S, h)
            add_s = attn.scores(q, keys)  # (1, L, S)
            _, add_w = attn(q, keys, values)  # (1, L, S)
            dot_s = dot_score(q @ w_Q, keys @ w_K) * scale  # (1, L, S)
            _, dot_w = dot_product_attention(q @ w_Q, keys @ w_K, values, scale=scale)  # (1, L, S)
        return feats, add_s, add_w, dot_s, dot_w

    # the two score surfaces of one key over the (q1, q2) plane: row = q2, column = q1
    axis = torch.linspace(
        -_Q_LIM, _Q_LIM, int(round(2 * _Q_LIM / _Q_STEP)) + 1, dtype=torch.float64
    )  # (n,)
    n = axis.numel()
    q2g, q1g = torch.meshgrid(axis, axis, indexing="ij")  # (n, n) each
    plane = torch.zeros(1, n * n, d_q, dtype=torch.float64)  # (1, n*n, d_q)
    plane[0, :, 0], plane[0, :, 1] = q1g.reshape(-1), q2g.reshape(-1)
    _, add_plane, add_w_plane, dot_plane, dot_w_plane = both(plane)  # (1, n*n, S) each
    steps = [round(-_Q_LIM + i * _Q_STEP, 10) for i in range(n)]  # the sliders' values
    n_drawn = (n - 1) // _DRAW + 1  # cells per side of the drawn heatmaps
    surfaces = {
        "add": add_plane[0].T.reshape(num_keys, n, n).numpy(),
        "dot": dot_plane[0].T.reshape(num_keys, n, n).numpy(),
    }  # (S, n, n) each: surfaces[name][j] is the score of key j + 1
    # one colour scale per score, shared by all keys; contour levels: 9 across each key's own range
    ranges = {name: (float(z.min()), float(z.max())) for name, z in surfaces.items()}
    contour_sets = {
        name: _padded(
            [_contours(z, np.linspace(z.min(), z.max(), 11)[1:-1]) for z in surfaces[name]], 0.8
        )
        for name in surfaces
    }  # name -> ((S, N, 2, 2) segments, (S, N) widths)

    controls = {
        "q1": float_slider(
            "query q₁",
            -_Q_LIM,
            _Q_LIM,
            float(query[0]),
            step=_Q_STEP,
            readout_format=".1f",
            width="260px",
        ),
        "q2": float_slider(
            "query q₂",
            -_Q_LIM,
            _Q_LIM,
            float(query[1]),
            step=_Q_STEP,
            readout_format=".1f",
            width="260px",
        ),
        "key": dropdown("surface of key", [(lab, j + 1) for j, lab in enumerate(labels)], key),
    }

    with torch.no_grad():
        feature_shape = str(
            tuple(attn.features(plane[:, :1], keys).shape)
        )  # (B, L, S, h) for one query

    def compute(q1, q2, key):
        check_int("key", key, min=1, max=num_keys)
        i, j = round((float(q1) + _Q_LIM) / _Q_STEP), round((float(q2) + _Q_LIM) / _Q_STEP)
        if 0 <= i < n and 0 <= j < n and abs(steps[i] - q1) < 1e-9 and abs(steps[j] - q2) < 1e-9:
            flat = j * n + i  # a slider step: computed at build time, with the whole plane
            add_s, a_w, dot_s, d_w = (
                t[0, flat] for t in (add_plane, add_w_plane, dot_plane, dot_w_plane)
            )
        else:
            q = torch.zeros(1, 1, d_q, dtype=torch.float64)  # (B=1, L=1, d_q)
            q[0, 0, 0], q[0, 0, 1] = float(q1), float(q2)
            _, add_s, add_w, dot_s, dot_w = both(q)
            add_s, a_w, dot_s, d_w = add_s[0, 0], add_w[0, 0], dot_s[0, 0], dot_w[0, 0]  # (S,) each
        cell = _Q_STEP * _DRAW
        at = [
            [(float(q1) + _Q_LIM) / cell, (float(q2) + _Q_LIM) / cell]
        ]  # the query in the drawn heatmap's cell units
        row = [[-0.5, at[0][1]], [n_drawn - 0.5, at[0][1]]]  # the line of queries with this q₂
        arrays = {"query": at, "row": row, "w_add": a_w, "w_dot": d_w}
        for name in surfaces:
            xy, widths = contour_sets[name]
            arrays[f"{name}_surface"] = surfaces[name][key - 1, ::_DRAW, ::_DRAW]  # (31, 31)
            arrays[f"{name}_contours"] = xy[key - 1]
            arrays[f"{name}_widths"] = widths[key - 1]
        return Frame(
            arrays=arrays,
            texts={"which": f"k{key}"},
            readout={
                "feature shape (B, L, S, h)": feature_shape,
                "additive score e_j": add_s,
                "additive weight": a_w,
                "dot score (qW_Q)·(kW_K)/√h": dot_s,
                "dot weight": d_w,
                "additive output Σ α_j v_j": float(a_w @ values[0, :, 0]),
                "dot output Σ α_j v_j": float(d_w @ values[0, :, 0]),
            },
        )

    ticks = [(t + _Q_LIM) / (_Q_STEP * _DRAW) for t in _TICKS]
    tick_labels = [f"{t:g}" for t in _TICKS]

    def surface_panel(name: str, title: str) -> Panel:
        vmin, vmax = ranges[name]
        return Panel(
            [
                Heatmap(f"{name}_surface", vmin=vmin, vmax=vmax, cmap="viridis", colorbar=True),
                Segments(f"{name}_contours", color="white", widths=f"{name}_widths"),
                Line("row", color="C3", width=1.0, dash=True),
                Points("query", color="C3", size=5),
                Text(0.03, 0.93, key="which", color="white", size=10, axes=True),
            ],
            xlim=(-0.5, n_drawn - 0.5),
            ylim=(-0.5, n_drawn - 0.5),
            title=title,
            xlabel="q₁",
            ylabel="q₂",
            xticks=ticks,
            xticklabels=tick_labels,
            yticks=ticks,
            yticklabels=tick_labels,
        )

    S = num_keys
    bars = Panel(
        [
            Bars("w_add", x=np.arange(S) - 0.2, width=0.4, color="C0", label="additive"),
            Bars("w_dot", x=np.arange(S) + 0.2, width=0.4, color="C1", label="projected dot"),
        ],
        xlim=(-0.6, S - 0.4),
        ylim=(0.0, 1.05),
        title="weights of every key",
        xlabel="key",
        ylabel="weight",
        xticks=list(range(S)),
        xticklabels=labels,
        legend="upper right",
    )
    scene = Scene(
        [
            surface_panel("add", "additive score of one key: curved"),
            surface_panel("dot", "projected dot score of that key: a plane"),
            bars,
        ],
        cols=3,
        width=960,
        height=300,
        col_widths=[1.15, 1.15, 1.0],
    )
    args = dict(
        num_keys=num_keys,
        d_q=d_q,
        d_k=d_k,
        d_hidden=d_hidden,
        seed=seed,
        key=key,
        query=[float(v) for v in query],
    )
    ex = Explorer(
        controls,
        compute,
        scene,
        # one precomputed set per slider (not a joint q1 x q2 grid): every frame carries the
        # chosen key's two surfaces, and 61 x 61 such frames would be far too large to send
        name="additive_attention",
        args=args,
        title=f"Additive attention vs a projected dot product, d_q={d_q} ≠ d_k={d_k}",
        columns=labels,
        digits=3,
    )
    ex.data = {
        "model": attn,
        "keys": keys,
        "w_Q": w_Q,
        "w_K": w_K,
        "surfaces": surfaces,
        "contours": {name: xy for name, (xy, _) in contour_sets.items()},
    }  # for tests and readers
    return ex
