"""2-D points: queries, keys, values and outputs in the plane, and the hull the output stays in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlib.plotting._core import _axes, to_numpy
from attnlib.util.i18n import _

__all__ = ["convex_hull", "qkv_points", "QKVArtists"]


def convex_hull(points) -> np.ndarray:
    """Return the vertices of the convex hull of 2-D ``points`` ``(N, 2)``, counter-clockwise.

    Andrew's monotone chain; collinear points are dropped. One or two distinct points give
    themselves back (a point or a segment).
    """
    p = to_numpy(points)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"points must have shape (N, 2), got {tuple(p.shape)}")
    pts = sorted(set(map(tuple, p.tolist())))
    if len(pts) <= 2:
        return np.array(pts, dtype=np.float64).reshape(-1, 2)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple] = []
    upper: list[tuple] = []
    for q in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    for q in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1], dtype=np.float64)


@dataclass
class QKVArtists:
    """The artists drawn by :func:`qkv_points`."""

    ax: Any
    query: Any  # PathCollection, (L, 2) offsets
    keys: Any  # PathCollection
    values: Any | None  # PathCollection
    output: Any | None  # PathCollection
    hull: Any | None  # Polygon of the values' convex hull
    query_arrows: list = field(default_factory=list)  # FancyArrowPatch, origin -> each query
    key_arrows: list = field(default_factory=list)  # FancyArrowPatch from the origin to each key
    mix_lines: Any | None = None  # LineCollection output -> each value, width ~ weight
    key_texts: list = field(default_factory=list)
    value_texts: list = field(default_factory=list)


def _points(name, x) -> np.ndarray:
    a = to_numpy(x)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(
            f"{name} must have shape (2,) or (N, 2) (2-D points), got {tuple(to_numpy(x).shape)}"
        )
    return a


def _closed(hull: np.ndarray) -> np.ndarray:
    return np.vstack([hull, hull[:1]]) if len(hull) else np.zeros((1, 2))


def qkv_points(
    query,
    keys,
    values=None,
    output=None,
    ax=None,
    *,
    weights=None,
    key_labels: Sequence[str] | None = None,
    value_labels: Sequence[str] | None = None,
    hull: bool = True,
    arrows: bool = True,
    lim: float | tuple[float, float, float, float] | None = 3.2,
    title: str | None = None,
) -> QKVArtists:
    """Draw 2-D queries, keys, values and the attention output in one plane.

    Keys (blue squares) and the query (red dot) are drawn as arrows from the origin, so the score
    q·k can be read as "how far k points along q". Values (green triangles) are joined by their
    convex hull (shaded); the output (black star) is a weighted mean of the values, so with
    softmax weights it lies inside that hull. Lines from the output to each value are as thick as
    that value's weight.

    Args:
        query: ``(2,)`` or ``(L, 2)`` query point(s).
        keys: ``(S, 2)`` key points.
        values: ``(S, 2)`` value points, or None to skip values, hull and output.
        output: ``(2,)`` or ``(L, 2)`` output point(s), or None.
        ax: axes (None: a new pyplot figure).
        weights: ``(S,)`` weights of the first query, for the output→value line widths.
        key_labels, value_labels: text beside each key/value (default ``k1..``, ``v1..``).
        hull: shade the values' convex hull.
        arrows: draw arrows from the origin to the query and the keys.
        lim: half-width of a square view around the origin, or ``(xmin, xmax, ymin, ymax)``,
            or None to autoscale. Fixed limits let a widget move points in place.
        title: axes title (default "Query, keys, values and output", in the current language).
    Returns:
        A :class:`QKVArtists`; call its ``update(query=..., output=..., weights=...)`` to move it.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.patches import FancyArrowPatch, Polygon

    q = _points("query", query)
    k = _points("keys", keys)
    ax = _axes(ax, figsize=(4.0, 4.0))
    S = k.shape[0]
    key_labels = list(key_labels) if key_labels is not None else [f"k{j + 1}" for j in range(S)]
    art = QKVArtists(ax=ax, query=None, keys=None, values=None, output=None, hull=None)

    if values is not None:
        v = _points("values", values)
        if v.shape[0] != S:
            raise ValueError(f"keys has S={S} points but values has {v.shape[0]}")
        if value_labels is None:
            value_labels = [f"v{j + 1}" for j in range(S)]
        value_labels = list(value_labels)
        if hull:
            art.hull = ax.add_patch(
                Polygon(
                    _closed(convex_hull(v)),
                    closed=True,
                    facecolor="C2",
                    alpha=0.15,
                    edgecolor="C2",
                    linestyle="--",
                    label=_("hull of values"),
                )
            )
        if output is not None:
            o = _points("output", output)
            w = np.full(S, 1.0 / S) if weights is None else to_numpy(weights).reshape(-1, S)[0]
            art.mix_lines = ax.add_collection(
                LineCollection(
                    [[tuple(o[0]), tuple(p)] for p in v],
                    colors="0.4",
                    linewidths=0.5 + 5.0 * w,
                    alpha=0.6,
                    zorder=1,
                )
            )
        art.values = ax.scatter(
            v[:, 0], v[:, 1], marker="^", s=70, color="C2", zorder=3, label=_("values")
        )
        art.value_texts = [
            ax.annotate(t, tuple(p), xytext=(5, -12), textcoords="offset points", color="C2")
            for t, p in zip(value_labels, v)
        ]
    if arrows:
        style: dict[str, Any] = dict(
            arrowstyle="-|>", mutation_scale=10, linewidth=1.2, shrinkA=0, shrinkB=0
        )
        art.key_arrows = [
            ax.add_patch(FancyArrowPatch((0, 0), tuple(p), color="C0", alpha=0.6, **style))
            for p in k
        ]
        art.query_arrows = [
            ax.add_patch(FancyArrowPatch((0, 0), tuple(p), color="C3", **style)) for p in q
        ]
    art.keys = ax.scatter(k[:, 0], k[:, 1], marker="s", s=50, color="C0", zorder=3, label=_("keys"))
    art.key_texts = [
        ax.annotate(t, tuple(p), xytext=(5, 5), textcoords="offset points", color="C0")
        for t, p in zip(key_labels, k)
    ]
    art.query = ax.scatter(
        q[:, 0], q[:, 1], marker="o", s=60, color="C3", zorder=4, label=_("query")
    )
    if values is not None and output is not None:
        o = _points("output", output)
        art.output = ax.scatter(
            o[:, 0], o[:, 1], marker="*", s=160, color="black", zorder=5, label=_("output")
        )

    if lim is not None:
        if isinstance(lim, (int, float)):
            x0, x1, y0, y1 = -lim, lim, -lim, lim
        else:
            x0, x1, y0, y1 = lim
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
    ax.set_aspect("equal", adjustable="box")
    ax.axhline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.axvline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xlabel(_("dimension 1"))
    ax.set_ylabel(_("dimension 2"))
    ax.set_title(_("Query, keys, values and output") if title is None else title)
    # zorder below the points: a moving point passes over the legend, not under it.
    ax.legend(
        loc="upper left",
        fontsize=7,
        markerscale=0.6,
        handlelength=1.2,
        labelspacing=0.3,
        borderpad=0.3,
        framealpha=0.7,
    ).set_zorder(0.5)
    return art
