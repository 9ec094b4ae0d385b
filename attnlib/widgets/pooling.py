"""Explorers for attention pooling: Nadaraya–Watson kernel regression and additive attention.

- :func:`kernel_regression_explorer` — 1-D data, a query slider, a kernel-width slider and a score
  selector (Gaussian, −distance, dot, cosine, and the wrong +distance): the weight of every key,
  the fitted curve, the prediction at the query, the train / true MSE of the current width and the
  effective number of neighbours 1/Σα² (C19–C23).
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
from attnlib.pooling import attention_pooling, toy_function, toy_regression_data
from attnlib.scoring import dot_score
from attnlib.widgets.controls import dropdown, float_slider, log_slider
from attnlib.widgets.explorer import Explorer
from attnlib.widgets.scene import Bars, Frame, Heatmap, Line, Panel, Points, Scene

__all__ = ["kernel_regression_explorer", "additive_attention_explorer", "SCORE_LABELS"]

#: Dropdown labels for the score functions of :func:`attnlib.pooling.pooling_scores`
#: (σ: kernel width).
SCORE_LABELS = (
    ("Gaussian: −(x−xᵢ)²/2σ²", "gaussian"),
    ("−distance: −|x−xᵢ|/σ", "neg_euclidean"),
    ("dot: x·xᵢ/σ", "dot"),
    ("cosine: cos(x, xᵢ)/σ", "cosine"),
    ("+distance (wrong): +|x−xᵢ|/σ", "distance (wrong)"),
)
_SCORES = tuple(v for _, v in SCORE_LABELS)


def kernel_regression_explorer(
    n_train: int = 40,
    *,
    seed: int = 0,
    query: float = 2.5,
    bandwidth: float = 0.5,
    score: str = "gaussian",
    noise: float = 0.5,
    x_max: float = 5.0,
) -> Explorer:
    """Nadaraya–Watson regression on toy data with sliders for the query and the kernel width σ.

    Top panel: the training points, the noiseless function (dashed), the range [min yᵢ, max yᵢ]
    (dotted: a weighted mean of the yᵢ never leaves it), the fitted curve
    ``f(x) = Σ_i α(x, x_i) y_i`` and the prediction at the query. Bottom panel: the weight
    α(x, x_i) of every key at the key's position, divided by the largest weight (so narrow and
    wide kernels both fill the panel; the largest weight itself is in the readout).

    Args:
        n_train: number of training points (keys/values).
        seed: seed of the private generator that draws the data (the global one is untouched).
        query: starting query x in ``[0, x_max]`` (on the 0.05 grid).
        bandwidth: starting kernel width / temperature σ in ``[0.05, 5]``.
        score: starting score, one of the values of :data:`SCORE_LABELS`.
        noise: standard deviation of the noise on the targets.
        x_max: the data and the query lie in ``[0, x_max]``.

    Returns:
        An :class:`~attnlib.widgets.explorer.Explorer` with controls ``x``, ``width``, ``score``.
    """
    if score not in _SCORES:
        raise ValueError(f"score must be one of {list(_SCORES)}, got {score!r}")
    g = torch.Generator().manual_seed(seed)
    x_train, y_train = toy_regression_data(
        n_train, x_max=x_max, noise=noise, generator=g, dtype=torch.float64
    )  # (S,), (S,)
    grid = torch.linspace(0.0, x_max, 201, dtype=torch.float64)  # (G,) where the curve is drawn
    inside = torch.linspace(
        float(x_train.min()), float(x_train.max()), 200, dtype=torch.float64
    )  # (G',)
    y_true, y_inside = toy_function(grid), toy_function(inside)  # (G,), (G',)
    controls = {
        "x": float_slider("query x", 0.0, x_max, float(query), step=0.05, width="280px"),
        "width": log_slider(
            "kernel width σ", -1.3, 0.7, float(bandwidth), step=0.05, width="280px"
        ),
        "score": dropdown("score", list(SCORE_LABELS), score, width="300px"),
    }

    step = 0.05
    queries = [
        round(i * step, 10) for i in range(int(round(x_max / step)) + 1)
    ]  # the query slider's steps
    q_all = torch.tensor(queries, dtype=torch.float64)  # (Q,)
    # (σ, score) -> what the query does not change, and every slider query at once
    per_width: dict = {}

    def fit(width: float, score: str):
        key = (width, score)
        if key not in per_width:
            if len(per_width) > 256:
                per_width.clear()
            curve = attention_pooling(grid, x_train, y_train, score, width)[0]  # (G,)
            on_train = attention_pooling(x_train, x_train, y_train, score, width)[0]  # (S,)
            on_inside = attention_pooling(inside, x_train, y_train, score, width)[0]  # (G',)
            preds, weights = attention_pooling(
                q_all, x_train, y_train, score, width
            )  # (Q,), (Q, S)
            per_width[key] = (
                curve,
                float(((on_train - y_train) ** 2).mean()),
                float(((on_inside - y_inside) ** 2).mean()),
                preds,
                weights,
            )
        return per_width[key]

    def compute(x, width, score):
        x, width = float(x), float(width)
        curve, mse_train, mse_true, preds, weights = fit(width, score)
        i = round(x / step)
        if (
            0 <= i < len(queries) and abs(queries[i] - x) < 1e-9
        ):  # a slider step: batched once per (σ, score)
            pred, w = preds[i : i + 1], weights[i]  # (1,), (S,)
        else:
            pred, w = attention_pooling(
                torch.tensor([x], dtype=torch.float64), x_train, y_train, score, width
            )
            w = w[0]  # (S,)
        j = int(w.argmax())
        return Frame(
            arrays={
                "fit": torch.stack([grid, curve], 1),  # (G, 2)
                "bars": w / w[j],  # (S,)
                "pred": [[x, float(pred[0])]],
                "qline": [[x, -10.0], [x, 10.0]],
            },
            readout={
                "prediction f(x)": pred[0],
                "true f(x)": toy_function(torch.tensor(x, dtype=torch.float64)),
                "largest weight": w[j],
                "its key x_i": x_train[j],
                "distance |x − x_i|": abs(x - float(x_train[j])),
                "effective neighbours 1/Σα²": 1.0 / float((w**2).sum()),
                "sum of weights": w.sum(),
                "train MSE (this σ)": mse_train,
                "MSE vs true f (this σ)": mse_true,
            },
        )

    y_lo = float(min(y_train.min(), y_true.min())) - 0.5
    y_hi = float(max(y_train.max(), y_true.max())) + 2.2  # room for the legend above the data
    lo, hi = float(y_train.min()), float(y_train.max())
    xl = (-0.1, x_max + 0.1)
    top = Panel(
        [
            Line(
                [[xl[0], lo], [xl[1], lo]],
                color="0.6",
                width=1,
                dash=True,
                label="min / max of y_i",
            ),
            Line([[xl[0], hi], [xl[1], hi]], color="0.6", width=1, dash=True),
            Line(
                torch.stack([grid, y_true], 1),
                color="0.35",
                width=1.2,
                dash=True,
                label="true f(x) = 2 sin x + x^0.8",
            ),
            Points(
                torch.stack([x_train, y_train], 1),
                color="C0",
                size=3,
                label="training points (x_i, y_i)",
            ),
            Line("qline", color="C3", width=1),
            Line("fit", color="C1", width=2, label="fitted f(x)"),
            Points("pred", color="C3", marker="*", size=6, label="prediction at the query"),
        ],
        xlim=xl,
        ylim=(y_lo, y_hi),
        title="Nadaraya–Watson: f(x) = Σ softmax_i(score(x, x_i)) y_i",
        ylabel="y",
        legend="upper right",
    )
    bottom = Panel(
        [Bars("bars", x=x_train, width=0.05, color="C0"), Line("qline", color="C3", width=1)],
        xlim=xl,
        ylim=(0.0, 1.05),
        xlabel="x (keys x_i at the bars)",
        ylabel="α / largest α",
    )
    scene = Scene([top, bottom], cols=1, width=720, height=420, row_heights=[1.6, 1.0])
    args = dict(
        n_train=n_train,
        seed=seed,
        query=query,
        bandwidth=bandwidth,
        score=score,
        noise=noise,
        x_max=x_max,
    )
    ex = Explorer(
        controls,
        compute,
        scene,
        name="kernel_regression",
        args=args,
        title="Attention pooling on 1-D data",
        digits=3,
    )
    ex.data = {"x_train": x_train, "y_train": y_train}  # for tests and curious readers
    return ex


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
