"""The output as a mix of the values: notebook 04's worked example, drawn from its computed weights
(a segment between two values with the output on it, and one query's weights as grouped bars)."""

from __future__ import annotations

import numpy as np

from attnlib.plotting._core import to_numpy
from attnlib.util.i18n import _

__all__ = ["mixing_segment", "two_query_weights"]


def mixing_segment(scores, weights, output, values, ax=None, *, lim: float = 4.8):
    """Draw two 2-D values, the segment between them and the output weights · values.

    Args:
        scores: ``(2,)`` scores of the two keys (shown in the title).
        weights: ``(2,)`` their softmax.
        output: ``(2,)`` the output ``weights @ values``.
        values: ``(2, 2)`` the two value vectors (rows).
        ax: axes (None: a new pyplot figure).
        lim: the view is ``[-0.5, lim]`` on both axes.

    Returns:
        ``(segment Line2D, output PathCollection)``.
    """
    z, a, o, vv = (to_numpy(t) for t in (scores, weights, output, values))
    if z.shape != (2,) or a.shape != (2,) or o.shape != (2,) or vv.shape != (2, 2):
        raise ValueError(
            f"scores, weights and output must be (2,) and values (2, 2), got "
            f"{z.shape}, {a.shape}, {o.shape} and {vv.shape}"
        )
    if ax is None:
        import matplotlib.pyplot as plt

        _fig, ax = plt.subplots(figsize=(4.0, 4.0), layout="constrained")
    (segment,) = ax.plot(vv[:, 0], vv[:, 1], "--", color="C2", lw=1.5)
    ax.scatter(vv[:, 0], vv[:, 1], marker="^", s=80, color="C2", zorder=3)
    for j in range(2):
        ax.annotate(
            _(
                "v{j} = ({x:g}, {y:g})\nweight {w:.2f}",
                j=j + 1,
                x=vv[j, 0],
                y=vv[j, 1],
                w=float(a[j]),
            ),
            tuple(vv[j]),
            xytext=(8, -4),
            textcoords="offset points",
            color="C2",
            fontsize=9,
        )
    point = ax.scatter([o[0]], [o[1]], marker="*", s=220, color="black", zorder=4)
    ax.annotate(
        f"o = ({o[0]:.2f}, {o[1]:.2f})",
        tuple(o),
        xytext=(10, 4),
        textcoords="offset points",
        fontsize=10,
    )
    ax.set_xlim(-0.5, lim)
    ax.set_ylim(-0.5, lim)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(_("dimension 1"))
    ax.set_ylabel(_("dimension 2"))
    ax.set_title(
        _(
            "scores ({z1:.2f}, {z2:.2f}) → weights ({a1:.2f}, {a2:.2f})",
            z1=float(z[0]),
            z2=float(z[1]),
            a1=float(a[0]),
            a2=float(a[1]),
        )
    )
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
    w = to_numpy(weights)
    if w.ndim != 2 or w.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"weights must be (L, S) = ({len(query_labels)}, {len(key_labels)}), "
            f"got {tuple(w.shape)}"
        )
    if ax is None:
        import matplotlib.pyplot as plt

        _fig, ax = plt.subplots(figsize=(4.0, 3.4), layout="constrained")
    L, S = w.shape
    width = 0.8 / S
    x = np.arange(L)
    containers = []
    for j in range(S):
        bars = ax.bar(
            x + (j - (S - 1) / 2) * width, w[:, j], width, label=key_labels[j], color=f"C{j}"
        )
        ax.bar_label(bars, fmt="%.2f", fontsize=9)
        containers.append(bars)
    ax.set_xticks(x, labels=list(query_labels))
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel(_("weight"))
    ax.legend(fontsize="small")
    return containers
