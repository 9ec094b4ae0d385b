"""Key picture of notebook 04: the worked example [log 3, 0] → [3/4, 1/4] → [1.5, 1] and the 2-D example (C09, C26)."""

from __future__ import annotations

import math

import numpy as np

from attnlib import plotting
from attnlib.figures import register_figure

__all__ = ["mixing_segment", "two_query_weights", "worked_example_figure"]


def mixing_segment(scores, values, ax=None, *, lim: float = 4.8):
    """Draw two 2-D values, the segment between them and the output softmax(scores) · values.

    Args:
        scores: ``(2,)`` scores of the two keys.
        values: ``(2, 2)`` the two value vectors (rows).
        ax: axes (None: a new pyplot figure).
        lim: the view is ``[-0.5, lim]`` on both axes.

    Returns:
        ``(segment Line2D, output PathCollection)``.
    """
    import torch

    from attnlib.softmax import masked_softmax

    z = torch.as_tensor(scores, dtype=torch.float64)
    v = torch.as_tensor(values, dtype=torch.float64)
    if z.shape != (2,) or v.shape != (2, 2):
        raise ValueError(f"scores must be (2,) and values (2, 2), got {tuple(z.shape)} and {tuple(v.shape)}")
    a = masked_softmax(z)  # (2,)
    out = a @ v  # (2,)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(4.0, 4.0), layout="constrained")
    vv, o = plotting.to_numpy(v), plotting.to_numpy(out)
    (segment,) = ax.plot(vv[:, 0], vv[:, 1], "--", color="C2", lw=1.5)
    ax.scatter(vv[:, 0], vv[:, 1], marker="^", s=80, color="C2", zorder=3)
    for j in range(2):
        ax.annotate(f"v{j + 1} = ({vv[j, 0]:g}, {vv[j, 1]:g})\nweight {float(a[j]):.2f}", tuple(vv[j]),
                    xytext=(8, -4), textcoords="offset points", color="C2", fontsize=9)
    point = ax.scatter([o[0]], [o[1]], marker="*", s=220, color="black", zorder=4)
    ax.annotate(f"o = ({o[0]:.2f}, {o[1]:.2f})", tuple(o), xytext=(10, 4), textcoords="offset points",
                fontsize=10)
    ax.set_xlim(-0.5, lim)
    ax.set_ylim(-0.5, lim)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    ax.set_title(f"scores ({float(z[0]):.2f}, {float(z[1]):.2f}) → weights "
                 f"({float(a[0]):.2f}, {float(a[1]):.2f})")
    return segment, point


def two_query_weights(weights, ax=None, *, query_labels=("q1", "q2"), key_labels=("k1", "k2")):
    """Grouped bars: one group per query, one bar per key, the weight written on each bar.

    Args:
        weights: ``(L, S)`` attention weights.
        ax: axes (None: a new pyplot figure).
        query_labels, key_labels: names of the L queries and S keys.

    Returns:
        ``list[BarContainer]``, one per key.
    """
    w = plotting.to_numpy(weights)
    if w.ndim != 2 or w.shape != (len(query_labels), len(key_labels)):
        raise ValueError(f"weights must be (L, S) = ({len(query_labels)}, {len(key_labels)}), "
                         f"got {tuple(w.shape)}")
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(4.0, 3.4), layout="constrained")
    L, S = w.shape
    width = 0.8 / S
    x = np.arange(L)
    containers = []
    for j in range(S):
        bars = ax.bar(x + (j - (S - 1) / 2) * width, w[:, j], width, label=key_labels[j], color=f"C{j}")
        ax.bar_label(bars, fmt="%.2f", fontsize=9)
        containers.append(bars)
    ax.set_xticks(x, labels=list(query_labels))
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("weight")
    ax.legend(fontsize="small")
    return containers


@register_figure("worked_example", formats=("png", "svg"))
def worked_example_figure():
    """The key picture: [log 3, 0] mixing [2, 0] and [0, 4] into [1.5, 1], and the 2-D example's weights."""
    import torch
    from matplotlib.figure import Figure

    from attnlib.attention import dot_product_attention

    fig = Figure(figsize=(9.0, 4.2), layout="constrained")
    ax_seg, ax_bars = fig.subplots(1, 2, width_ratios=[1.2, 1.0])
    mixing_segment([math.log(3.0), 0.0], [[2.0, 0.0], [0.0, 4.0]], ax_seg)
    q = torch.tensor([[1.0, 2.0], [1.0, 1.0]], dtype=torch.float64)  # (L=2, d_k=2)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # (S=2, d_k=2)
    _, weights = dot_product_attention(q, k, k)  # values unused here: only the weights are drawn
    two_query_weights(weights, ax_bars, query_labels=("q1 = (1, 2)", "q2 = (1, 1)"),
                      key_labels=("k1 = (1, 0)", "k2 = (0, 1)"))
    ax_bars.set_title("softmax(q·k / √2) for the 2-D example")
    fig.suptitle("Weights mix the values: the output lies between them (C09, C07, C26)")
    return fig
