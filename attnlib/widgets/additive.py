"""Explorer for additive attention against a projected dot product (C24).

- :func:`additive_attention_explorer` — a 2-D query against 3-D keys (d_q ≠ d_k), scored two ways:
  additive attention a(q, k) = w_vᵀ tanh(W_q q + W_k k), and a dot product of projections
  (q W_Q)·(k W_K)/√h on the same shapes. The score of one key over the whole (q₁, q₂) plane is
  drawn for both, with contour lines: the projected dot product is a plane in q (straight, evenly
  spaced contours), the additive score is curved (C24).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlib._checks import check_int
from attnlib.additive import AdditiveAttention
from attnlib.attention import dot_product_attention
from attnlib.scoring import dot_score
from attnlib.widgets.artists import Bars, Heatmap, Line, Points
from attnlib.widgets.controls import float_slider
from attnlib.widgets.explorer import Explorer
from attnlib.widgets.scene import Frame, Panel, Scene

__all__ = ["additive_attention_explorer"]


_Q_LIM, _Q_STEP = 3.0, 0.1
_TICKS = (-3.0, -1.5, 0.0, 1.5, 3.0)


def _contours(z: np.ndarray, n_levels: int = 9) -> list[np.ndarray]:
    """Iso-lines of ``z`` ``(n, n)`` (row = q₂ index, column = q₁ index) in cell coordinates:
    ``[(N, 2)]``.
    """
    import contourpy

    gen = contourpy.contour_generator(z=z)
    levels = np.linspace(z.min(), z.max(), n_levels + 2)[1:-1]
    return [line for lev in levels for line in gen.lines(lev) if len(line) > 1]


def additive_attention_explorer(
    num_keys: int = 5,
    d_q: int = 2,
    d_k: int = 3,
    d_hidden: int = 6,
    *,
    seed: int = 0,
    key: int = 1,
    query=(1.0, -0.5),
) -> Explorer:
    """Additive attention against a projected dot product, on queries and keys of different widths
    (C24).

    A fixed, randomly initialised :class:`attnlib.AdditiveAttention` scores one query of width
    ``d_q`` (its first two components on sliders, the rest 0) against ``num_keys`` keys of width
    ``d_k``: ``e_j = w_vᵀ tanh(W_q q + W_k k_j)``. Beside it, a dot product of projections onto the
    same width h, ``(q W_Q)·(k_j W_K)/√h``, handles the same shapes. Left and middle: the score of
    key ``key`` as a function of (q₁, q₂) for each (a heatmap with contour lines; the query is the
    dot).
    Right: the weights of every key under both scores, for the current query.

    Args:
        num_keys: S, the number of keys (2..8).
        d_q, d_k: query width (>= 2) and key width; they may differ.
        d_hidden: h, the hidden (shared) width of both scores.
        seed: seed of the private generator for the keys and the parameters.
        key: which key's score surface is drawn (1-based).
        query: the starting first two query components, each in [-3, 3] (on the 0.1 grid).

    Returns:
        An :class:`~attnlib.widgets.explorer.Explorer` with controls ``q1``, ``q2``.
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
    surfaces = {
        "add": add_plane[0, :, key - 1].reshape(n, n).numpy(),
        "dot": dot_plane[0, :, key - 1].reshape(n, n).numpy(),
    }  # (n, n) each

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
    }

    with torch.no_grad():
        feature_shape = str(
            tuple(attn.features(plane[:, :1], keys).shape)
        )  # (B, L, S, h) for one query

    def compute(q1, q2):
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
        at = [
            [(float(q1) + _Q_LIM) / _Q_STEP, (float(q2) + _Q_LIM) / _Q_STEP]
        ]  # the query in cell units
        return Frame(
            arrays={"query": at, "w_add": a_w, "w_dot": d_w},
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

    ticks = [(t + _Q_LIM) / _Q_STEP for t in _TICKS]
    tick_labels = [f"{t:g}" for t in _TICKS]

    def surface_panel(name: str, title: str) -> Panel:
        z = surfaces[name]
        lines = [Line(c, color="white", width=0.8) for c in _contours(z)]
        return Panel(
            [
                Heatmap(z, vmin=float(z.min()), vmax=float(z.max()), cmap="viridis", colorbar=True),
                *lines,
                Points("query", color="C3", size=5),
            ],
            xlim=(-0.5, n - 0.5),
            ylim=(-0.5, n - 0.5),
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
        xticks=list(range(S)),
        xticklabels=labels,
        legend="upper right",
    )
    scene = Scene(
        [
            surface_panel("add", f"additive score of k{key}: curved"),
            surface_panel("dot", f"projected dot score of k{key}: a plane"),
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
        grid=[("q1", "q2")],
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
    }  # for tests and readers
    return ex
