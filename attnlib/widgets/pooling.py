"""Explorers for attention pooling: Nadaraya–Watson kernel regression and additive attention.

- :func:`kernel_regression_explorer` — 1-D data, a query slider, a kernel-width slider and a score
  selector (Gaussian, −distance, dot, cosine, and the wrong +distance): the weight of every key,
  the fitted curve and the prediction at the query (C19–C23).
- :func:`additive_attention_explorer` — a 2-D query against 3-D keys (d_q ≠ d_k) through
  a(q, k) = vᵀ tanh(W_q q + W_k k): the broadcast feature tensor ``(B, L, S, h)`` for that query
  and the weights (C24).
"""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib._checks import check_int
from attnlib.additive import AdditiveAttention
from attnlib.pooling import attention_pooling, toy_function, toy_regression_data
from attnlib.widgets.base import Explorer, dropdown, float_slider, log_slider, new_figure, register

__all__ = ["kernel_regression_explorer", "additive_attention_explorer", "SCORE_LABELS"]

#: Dropdown labels for the score functions of :func:`attnlib.pooling.pooling_scores`.
SCORE_LABELS = (
    ("Gaussian: −(x−xᵢ)²/2h²", "gaussian"),
    ("−distance: −|x−xᵢ|/h", "neg_euclidean"),
    ("dot: x·xᵢ/h", "dot"),
    ("cosine: cos(x, xᵢ)/h", "cosine"),
    ("+distance (wrong): +|x−xᵢ|/h", "distance (wrong)"),
)


def _stems(x: torch.Tensor, heights: torch.Tensor):
    """Vertical segments from (x_i, 0) to (x_i, height_i): ``(S, 2, 2)`` for ``LineCollection``."""
    xs, hs = x.numpy(), heights.numpy()
    return [((a, 0.0), (a, b)) for a, b in zip(xs, hs)]


def _sizes(weights: torch.Tensor):
    """Marker areas for the training points: larger for a larger share of the largest weight."""
    return (8 + 120 * weights / weights.max()).numpy()


@register("kernel_regression")
def kernel_regression_explorer(n_train: int = 40, *, seed: int = 0, query: float = 2.5,
                               bandwidth: float = 0.5, score: str = "gaussian",
                               noise: float = 0.5, x_max: float = 5.0) -> Explorer:
    """Nadaraya–Watson regression on toy data with sliders for the query and the kernel width.

    Top panel: the training points (their size grows with their weight for the current query),
    the noiseless function, the fitted curve ``f(x) = Σ_i α(x, x_i) y_i`` and the prediction at
    the query. Bottom panel: the weight α(x, x_i) of every key, drawn at the key's position and
    divided by the largest weight (so narrow and wide kernels both fill the panel; the largest
    weight itself is in the readout).

    Args:
        n_train: number of training points (keys/values).
        seed: seed of the private generator that draws the data (the global one is untouched).
        query: starting query x in ``[0, x_max]``.
        bandwidth: starting kernel width / temperature h in ``[0.05, 5]``.
        score: starting score, one of the values of :data:`SCORE_LABELS`.
        noise: standard deviation of the noise on the targets.
        x_max: the data and the query lie in ``[0, x_max]``.

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``x``, ``h``, ``score``.
    """
    if score not in dict((v, k) for k, v in SCORE_LABELS):
        raise ValueError(f"score must be one of {[v for _, v in SCORE_LABELS]}, got {score!r}")
    g = torch.Generator().manual_seed(seed)
    x_train, y_train = toy_regression_data(n_train, x_max=x_max, noise=noise, generator=g,
                                           dtype=torch.float64)  # (S,), (S,)
    grid = torch.linspace(0.0, x_max, 201, dtype=torch.float64)  # (G,)
    y_true = toy_function(grid)  # (G,)
    controls = {
        "x": float_slider("query x", 0.0, x_max, float(query), step=0.05, width="280px"),
        "h": log_slider("width h", -1.3, 0.7, float(bandwidth), step=0.05, width="280px"),
        "score": dropdown("score", list(SCORE_LABELS), score, width="300px"),
    }

    curves: dict = {}  # (h, score) -> fitted curve (G,): moving only the query reuses it

    def compute(x, h, score):
        xq = torch.tensor([float(x)], dtype=torch.float64)  # (1,)
        pred, w = attention_pooling(xq, x_train, y_train, score, float(h))  # (1,), (1, S)
        key = (float(h), score)
        if key not in curves:
            if len(curves) > 64:
                curves.clear()
            curves[key] = attention_pooling(grid, x_train, y_train, score, float(h))[0]  # (G,)
        return pred[0], w[0], curves[key]

    p0, w0, c0 = compute(query, bandwidth, score)
    fig, (ax_fit, ax_w) = new_figure(2, 1, figsize=(8.0, 4.0), sharex=True, height_ratios=[1.6, 1.0])
    y_lo = float(min(y_train.min(), y_true.min())) - 0.5
    y_hi = float(max(y_train.max(), y_true.max())) + 0.5
    ax_fit.plot(grid.numpy(), y_true.numpy(), "--", color="0.5", label="true f(x) = 2 sin x + x^0.8")
    points = ax_fit.scatter(x_train.numpy(), y_train.numpy(), s=_sizes(w0), color="C0",
                            alpha=0.7, zorder=3, label="training points (x_i, y_i), size ~ weight")
    (fit_line,) = ax_fit.plot(grid.numpy(), c0.numpy(), color="C1", lw=2, label="fitted f(x)")
    q_line = ax_fit.axvline(float(query), color="C3", lw=1, alpha=0.8)
    pred_pt = ax_fit.scatter([float(query)], [float(p0)], marker="*", s=160, color="C3", zorder=4,
                             label="prediction at the query")
    ax_fit.set_ylim(y_lo, y_hi)
    ax_fit.set_xlim(-0.1, x_max + 0.1)
    ax_fit.set_ylabel("y")
    ax_fit.set_title("Nadaraya–Watson: f(x) = Σ softmax_i(score(x, x_i)) y_i")
    ax_fit.legend(fontsize="x-small", loc="upper right")
    # one LineCollection of vertical bars (one artist: cheap to redraw), not 40 Rectangles
    bars = ax_w.vlines(x_train.numpy(), 0.0, (w0 / w0.max()).numpy(), color="C0", lw=3.5)
    q_line_w = ax_w.axvline(float(query), color="C3", lw=1, alpha=0.8)
    ax_w.set_ylim(0.0, 1.05)
    ax_w.set_xlabel("x (keys x_i at the bars)")
    ax_w.set_ylabel("α(x, x_i) / largest α")

    def update(x, h, score):
        pred, w, curve = compute(x, h, score)
        points.set_sizes(_sizes(w))
        fit_line.set_ydata(curve.numpy())
        q_line.set_xdata([x, x])
        q_line_w.set_xdata([x, x])
        pred_pt.set_offsets([[x, float(pred)]])
        bars.set_segments(_stems(x_train, w / w.max()))
        j = int(w.argmax())
        return {
            "prediction f(x)": pred,
            "true f(x)": toy_function(torch.tensor(float(x), dtype=torch.float64)),
            "largest weight": w[j],
            "its key x_i": x_train[j],
            "distance |x − x_i|": abs(float(x) - float(x_train[j])),
            "sum of weights": w.sum(),
        }

    dynamic = [points, fit_line, q_line, q_line_w, pred_pt, bars]
    ex = Explorer(controls, update, fig, dynamic=dynamic, title="Attention pooling on 1-D data",
                  digits=3)
    ex.data = {"x_train": x_train, "y_train": y_train}  # for tests and curious readers
    return ex


@register("additive_attention")
def additive_attention_explorer(num_keys: int = 5, d_q: int = 2, d_k: int = 3,
                                d_hidden: int = 6, *, seed: int = 0,
                                query=(1.0, -0.5)) -> Explorer:
    """Additive attention with queries and keys of different widths (C24).

    A fixed, randomly initialised :class:`attnlib.AdditiveAttention` scores one query of width
    ``d_q`` (its first two components on sliders, the rest 0) against ``num_keys`` keys of
    width ``d_k``. Left: the feature tensor tanh(W_q q + W_k k_j) for this query, ``(S, h)``
    (one slice of the broadcast ``(B, L, S, h)``). Right: the weights softmax_j(vᵀ tanh(...)).

    Args:
        num_keys: S, the number of keys.
        d_q, d_k: query width (>= 2) and key width; they may differ.
        d_hidden: h, the hidden width.
        seed: seed of the private generator for the keys and the parameters.
        query: the starting first two query components, each in [-3, 3].

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``q1``, ``q2``.
    """
    check_int("d_q", d_q, min=2)  # two sliders
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # leave torch's global generator as it was
        attn = AdditiveAttention(d_q, d_k, d_hidden).double()
    with torch.no_grad():  # parameters from the private generator, not torch's global one
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) / p.shape[-1] ** 0.5 * 1.5)
    keys = torch.randn(1, num_keys, d_k, generator=g, dtype=torch.float64)  # (B=1, S, d_k)
    values = torch.arange(num_keys, dtype=torch.float64).reshape(1, num_keys, 1)  # (1, S, 1)
    labels = [f"k{j + 1}" for j in range(num_keys)]
    controls = {
        "q1": float_slider("query q₁", -3.0, 3.0, float(query[0]), step=0.05, width="260px"),
        "q2": float_slider("query q₂", -3.0, 3.0, float(query[1]), step=0.05, width="260px"),
    }

    def compute(q1, q2):
        q = torch.zeros(1, 1, d_q, dtype=torch.float64)  # (B=1, L=1, d_q)
        q[0, 0, 0], q[0, 0, 1] = float(q1), float(q2)
        with torch.no_grad():
            feats = attn.features(q, keys)  # (1, 1, S, h)
            scores = attn.scores(q, keys)  # (1, 1, S)
            _, weights = attn(q, keys, values)  # (1, 1, S)
        return feats, scores[0, 0], weights[0, 0]

    f0, s0, w0 = compute(*query)
    fig, (ax_f, ax_w) = new_figure(1, 2, figsize=(8.0, 3.2), width_ratios=[1.2, 1.0])
    im = plotting.heatmap(f0[0, 0], ax=ax_f, row_labels=labels,
                          col_labels=[f"{r + 1}" for r in range(d_hidden)],
                          title=f"tanh(W_q q + W_k k_j): slice of {tuple(f0.shape)}",
                          xlabel="hidden unit r (h)", ylabel="key j", cmap="RdBu_r", vmin=-1.0,
                          vmax=1.0)
    bars = plotting.weight_bars(w0, ax=ax_w, labels=labels, ylim=(0.0, 1.05),
                                title=f"weights (d_q={d_q}, d_k={d_k})")

    def update(q1, q2):
        feats, scores, weights = compute(q1, q2)
        im.set_data(plotting.masked(feats[0, 0]))
        plotting.set_bar_heights(bars, weights)
        return {"feature shape (B, L, S, h)": str(tuple(feats.shape)), "scores": scores,
                "weights": weights}

    ex = Explorer(controls, update, fig, dynamic=[im, *bars.patches],
                  title="Additive attention, d_q ≠ d_k", columns=labels, digits=3)
    ex.data = {"model": attn, "keys": keys}  # for tests and curious readers
    return ex
