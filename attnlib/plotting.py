"""Plotting helpers: take data (tensors or arrays, any device), return matplotlib artists.

Every function here draws into an ``ax`` you pass (or a fresh one from pyplot when ``ax`` is
None, so a notebook cell shows it), titles and labels what it draws, and returns the artists so a
widget can later update them in place (``set_data`` / ``set_offsets`` / ``set_height``) instead of
drawing a new figure. Nothing here calls ``plt.show()`` or touches the global ``rcParams``.

Tensors are moved to the CPU (as float64 numpy arrays) at the boundary by :func:`to_numpy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

__all__ = [
    "to_numpy",
    "heatmap",
    "masked",
    "cell_labels",
    "set_cell_labels",
    "weight_bars",
    "set_bar_heights",
    "convex_hull",
    "qkv_points",
    "QKVArtists",
    "curves",
    "hist_bars",
    "set_hist",
]


def to_numpy(x) -> np.ndarray:
    """Return ``x`` as a float64 numpy array on the CPU (tensors of any device/dtype, arrays, lists)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        # bfloat16/float16 have no numpy dtype: go through float64 on the CPU.
        return x.detach().to(device="cpu", dtype=torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _axes(ax, figsize=(4.0, 3.2)):
    """Return ``ax``, or a new axes from pyplot (so a notebook cell displays it)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _as_matrix(name: str, x) -> np.ndarray:
    a = to_numpy(x)
    while a.ndim > 2 and a.shape[0] == 1:  # drop leading batch/head dims of size 1
        a = a[0]
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (L, S) (leading size-1 dims are dropped), got shape {tuple(a.shape)}")
    return a


def masked(weights, mask=None) -> np.ma.MaskedArray:
    """Return ``weights`` as a masked array hiding cells where ``mask`` is False (True = may attend).

    Args:
        weights: ``(L, S)`` values.
        mask: bool ``(L, S)`` or broadcastable, True = visible; None hides nothing.
    Returns:
        ``np.ma.MaskedArray`` of shape ``(L, S)`` for ``AxesImage.set_data``.
    """
    w = _as_matrix("weights", weights)
    if mask is None:
        return np.ma.masked_array(w, mask=np.zeros_like(w, dtype=bool))
    m = np.broadcast_to(to_numpy(mask).astype(bool), w.shape)
    return np.ma.masked_array(w, mask=~m)


def heatmap(
    weights,
    ax=None,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    title: str = "Attention weights",
    xlabel: str = "key position j",
    ylabel: str = "query position i",
    colorbar: bool = True,
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    mask=None,
    hidden_color: str = "0.85",
    colorbar_label: str | None = None,
):
    """Draw a matrix (e.g. attention weights ``(L, S)``) as an image with labelled rows and columns.

    Args:
        weights: ``(L, S)`` tensor/array (leading size-1 dims are dropped); row i = query i.
        ax: axes to draw into (None: a new pyplot figure).
        row_labels, col_labels: tick labels for rows (queries) and columns (keys).
        title, xlabel, ylabel: text for the axes.
        colorbar: add a colorbar beside the axes.
        cmap: colormap name.
        vmin, vmax: colour limits (None: from the data). Widgets should fix them so colours
            mean the same thing after ``set_data``.
        mask: optional bool ``(L, S)``, True = may attend; hidden cells are drawn in ``hidden_color``.
        hidden_color: colour of hidden (masked) cells.
        colorbar_label: label of the colorbar.
    Returns:
        The ``AxesImage``; update it with ``im.set_data(masked(new, mask))``.
    """
    import matplotlib

    w = _as_matrix("weights", weights)
    L, S = w.shape
    if row_labels is not None and len(row_labels) != L:
        raise ValueError(f"row_labels has {len(row_labels)} entries but weights has {L} rows")
    if col_labels is not None and len(col_labels) != S:
        raise ValueError(f"col_labels has {len(col_labels)} entries but weights has {S} columns")
    ax = _axes(ax)
    cm = matplotlib.colormaps[cmap].with_extremes(bad=hidden_color)
    im = ax.imshow(masked(w, mask), cmap=cm, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(S), labels=list(col_labels) if col_labels is not None else [str(j) for j in range(S)])
    ax.set_yticks(range(L), labels=list(row_labels) if row_labels is not None else [str(i) for i in range(L)])
    if S > 16 and col_labels is None:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(8, integer=True))
    if L > 16 and row_labels is None:
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(8, integer=True))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax)
        if colorbar_label:
            cb.set_label(colorbar_label)
    return im


def cell_labels(ax, values, fmt: str = "{:.2f}", *, fontsize: float = 8, threshold: float | None = None):
    """Write each cell's value on a heatmap drawn by :func:`heatmap` in ``ax``.

    Args:
        ax: the heatmap's axes.
        values: ``(L, S)`` numbers to write.
        fmt: format string for one number.
        fontsize: text size.
        threshold: values above it are written in black, below in white (None: the middle of the range).
    Returns:
        ``list[list[Text]]`` of shape ``(L, S)``; update with :func:`set_cell_labels`.
    """
    v = _as_matrix("values", values)
    texts = [
        [ax.text(j, i, "", ha="center", va="center", fontsize=fontsize) for j in range(v.shape[1])]
        for i in range(v.shape[0])
    ]
    set_cell_labels(texts, v, fmt, threshold=threshold)
    return texts


def set_cell_labels(texts, values, fmt: str = "{:.2f}", *, threshold: float | None = None) -> None:
    """Update the texts made by :func:`cell_labels` in place (``NaN`` and masked cells are left blank)."""
    v = np.ma.filled(np.ma.masked_invalid(_as_matrix("values", values)), np.nan)
    finite = v[np.isfinite(v)]
    if threshold is None:
        threshold = 0.5 * (finite.min() + finite.max()) if finite.size else 0.0
    for i, row in enumerate(texts):
        for j, t in enumerate(row):
            x = v[i, j]
            t.set_text("" if not np.isfinite(x) else fmt.format(x))
            t.set_color("black" if np.isfinite(x) and x > threshold else "white")


def weight_bars(
    weights,
    ax=None,
    labels: Sequence[str] | None = None,
    *,
    title: str = "Attention weights",
    xlabel: str = "key",
    ylabel: str = "weight",
    ylim: tuple[float, float] | None = (0.0, 1.0),
    color: str | Sequence[str] | None = "C0",
):
    """Draw one row of weights ``(S,)`` as bars, one per key.

    Args:
        weights: ``(S,)`` (or ``(1, S)``) weights.
        ax: axes (None: a new pyplot figure).
        labels: one label per key (default ``k1 .. kS``).
        title, xlabel, ylabel: axes text.
        ylim: fixed y-limits so the bars can move in place (None: autoscale).
        color: bar colour(s).
    Returns:
        The ``BarContainer``; update it with :func:`set_bar_heights`.
    """
    w = to_numpy(weights).reshape(-1)
    S = w.shape[0]
    if labels is None:
        labels = [f"k{j + 1}" for j in range(S)]
    if len(labels) != S:
        raise ValueError(f"labels has {len(labels)} entries but weights has {S}")
    ax = _axes(ax)
    bars = ax.bar(range(S), w, color=color, tick_label=list(labels))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    return bars


def set_bar_heights(bars, heights) -> None:
    """Set the heights of a ``BarContainer`` in place (bars from :func:`weight_bars` or :func:`hist_bars`)."""
    h = to_numpy(heights).reshape(-1)
    if len(h) != len(bars.patches):
        raise ValueError(f"heights has {len(h)} entries but there are {len(bars.patches)} bars")
    for patch, value in zip(bars.patches, h):
        patch.set_height(value)


def convex_hull(points) -> np.ndarray:
    """Return the vertices of the convex hull of 2-D ``points`` ``(N, 2)`` in counter-clockwise order.

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

    lower, upper = [], []
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
    """The artists drawn by :func:`qkv_points`; :meth:`update` moves them in place."""

    ax: object
    query: object  # PathCollection, (L, 2) offsets
    keys: object  # PathCollection
    values: object | None  # PathCollection
    output: object | None  # PathCollection
    hull: object | None  # Polygon of the values' convex hull
    query_arrows: list = field(default_factory=list)  # FancyArrowPatch from the origin to each query
    key_arrows: list = field(default_factory=list)  # FancyArrowPatch from the origin to each key
    mix_lines: object | None = None  # LineCollection output -> each value, width ~ weight
    key_texts: list = field(default_factory=list)
    value_texts: list = field(default_factory=list)

    def update(self, query=None, output=None, weights=None, keys=None, values=None) -> None:
        """Move the query/output points (and optionally keys/values) in place.

        Args:
            query: ``(2,)`` or ``(L, 2)`` new query positions.
            output: ``(2,)`` or ``(L, 2)`` new output positions.
            weights: ``(S,)`` or ``(L, S)`` weights; sets the width of the output→value lines.
            keys, values: ``(S, 2)`` new key/value positions.
        """
        if keys is not None:
            k = _points("keys", keys)
            self.keys.set_offsets(k)
            for arrow, p in zip(self.key_arrows, k):
                arrow.set_positions((0.0, 0.0), tuple(p))
            for t, p in zip(self.key_texts, k):
                t.set_position(tuple(p))
        if values is not None and self.values is not None:
            v = _points("values", values)
            self.values.set_offsets(v)
            if self.hull is not None:
                self.hull.set_xy(_closed(convex_hull(v)))
            for t, p in zip(self.value_texts, v):
                t.set_position(tuple(p))
        if query is not None:
            q = _points("query", query)
            self.query.set_offsets(q)
            for arrow, p in zip(self.query_arrows, q):
                arrow.set_positions((0.0, 0.0), tuple(p))
        if output is not None and self.output is not None:
            self.output.set_offsets(_points("output", output))
        if self.mix_lines is not None and (weights is not None or output is not None or values is not None):
            o = np.asarray(self.output.get_offsets())[0]
            v = np.asarray(self.values.get_offsets())
            self.mix_lines.set_segments([[tuple(o), tuple(p)] for p in v])
            if weights is not None:
                w = to_numpy(weights).reshape(-1, v.shape[0])[0]
                self.mix_lines.set_linewidths(0.5 + 5.0 * w)


def _points(name, x) -> np.ndarray:
    a = to_numpy(x)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"{name} must have shape (2,) or (N, 2) (2-D points), got {tuple(to_numpy(x).shape)}")
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
    title: str = "Query, keys, values and output",
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
        title: axes title.
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
        value_labels = list(value_labels) if value_labels is not None else [f"v{j + 1}" for j in range(S)]
        if hull:
            art.hull = ax.add_patch(
                Polygon(_closed(convex_hull(v)), closed=True, facecolor="C2", alpha=0.15,
                        edgecolor="C2", linestyle="--", label="hull of values")
            )
        if output is not None:
            o = _points("output", output)
            w = np.full(S, 1.0 / S) if weights is None else to_numpy(weights).reshape(-1, S)[0]
            art.mix_lines = ax.add_collection(
                LineCollection([[tuple(o[0]), tuple(p)] for p in v], colors="0.4",
                               linewidths=0.5 + 5.0 * w, alpha=0.6, zorder=1)
            )
        art.values = ax.scatter(v[:, 0], v[:, 1], marker="^", s=70, color="C2", zorder=3, label="values")
        art.value_texts = [ax.annotate(t, tuple(p), xytext=(5, -12), textcoords="offset points", color="C2")
                           for t, p in zip(value_labels, v)]
    if arrows:
        style = dict(arrowstyle="-|>", mutation_scale=10, linewidth=1.2, shrinkA=0, shrinkB=0)
        art.key_arrows = [ax.add_patch(FancyArrowPatch((0, 0), tuple(p), color="C0", alpha=0.6, **style)) for p in k]
        art.query_arrows = [ax.add_patch(FancyArrowPatch((0, 0), tuple(p), color="C3", **style)) for p in q]
    art.keys = ax.scatter(k[:, 0], k[:, 1], marker="s", s=50, color="C0", zorder=3, label="keys")
    art.key_texts = [ax.annotate(t, tuple(p), xytext=(5, 5), textcoords="offset points", color="C0")
                     for t, p in zip(key_labels, k)]
    art.query = ax.scatter(q[:, 0], q[:, 1], marker="o", s=60, color="C3", zorder=4, label="query")
    if values is not None and output is not None:
        o = _points("output", output)
        art.output = ax.scatter(o[:, 0], o[:, 1], marker="*", s=160, color="black", zorder=5, label="output")

    if lim is not None:
        x0, x1, y0, y1 = (-lim, lim, -lim, lim) if np.isscalar(lim) else lim
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
    ax.set_aspect("equal", adjustable="box")
    ax.axhline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.axvline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    ax.set_title(title)
    # zorder below the points: a moving point passes over the legend, not under it.
    ax.legend(loc="upper left", fontsize=7, markerscale=0.6, handlelength=1.2, labelspacing=0.3,
              borderpad=0.3, framealpha=0.7).set_zorder(0.5)
    return art


def curves(
    x,
    ys,
    ax=None,
    *,
    labels: Sequence[str] | None = None,
    title: str = "",
    xlabel: str = "x",
    ylabel: str = "y",
    logx: bool = False,
    logy: bool = False,
    styles: Sequence[str] | None = None,
    legend: bool | None = None,
) -> list:
    """Draw one or more curves over the same x.

    Args:
        x: ``(N,)`` x values.
        ys: ``(N,)``, ``(K, N)`` or a dict ``label -> (N,)``.
        ax: axes (None: a new pyplot figure).
        labels: one legend label per curve (dict keys are used when ``ys`` is a dict).
        title, xlabel, ylabel: axes text.
        logx, logy: log-scaled axes.
        styles: matplotlib format strings per curve (e.g. ``"o-"``, ``"--"``).
        legend: draw a legend (default: when there are labels).
    Returns:
        ``list[Line2D]``, one per curve; update with ``line.set_ydata(...)``.
    """
    xs = to_numpy(x).reshape(-1)
    if isinstance(ys, dict):
        labels = list(ys.keys()) if labels is None else labels
        ys = [to_numpy(v).reshape(-1) for v in ys.values()]
    else:
        a = to_numpy(ys)
        ys = [a] if a.ndim == 1 else list(a)
    for i, y in enumerate(ys):
        if y.shape[0] != xs.shape[0]:
            raise ValueError(f"x has {xs.shape[0]} points but curve {i} of ys has {y.shape[0]}")
    if labels is not None and len(labels) != len(ys):
        raise ValueError(f"labels has {len(labels)} entries but there are {len(ys)} curves")
    ax = _axes(ax)
    lines = []
    for i, y in enumerate(ys):
        fmt = styles[i] if styles is not None else "-"
        (line,) = ax.plot(xs, y, fmt, label=labels[i] if labels is not None else None)
        lines.append(line)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend or (legend is None and labels is not None):
        ax.legend(fontsize="small")
    return lines


def hist_bars(samples, bins, ax=None, *, density: bool = True, title: str = "Histogram",
              xlabel: str = "value", ylabel: str = "density", color: str = "C0"):
    """Draw a histogram of ``samples`` over fixed bin edges, as bars that can be updated in place.

    Args:
        samples: any-shape tensor/array (flattened).
        bins: ``(nbins + 1,)`` fixed bin edges.
        ax: axes (None: a new pyplot figure).
        density: normalise to a density (area 1) instead of counts.
        title, xlabel, ylabel: axes text.
        color: bar colour.
    Returns:
        The ``BarContainer``; update it with :func:`set_hist`.
    """
    edges = to_numpy(bins).reshape(-1)
    ax = _axes(ax)
    heights = _hist(samples, edges, density)
    bars = ax.bar(edges[:-1], heights, width=np.diff(edges), align="edge", color=color, alpha=0.8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return bars


def _hist(samples, edges, density):
    h, _ = np.histogram(to_numpy(samples).reshape(-1), bins=edges, density=density)
    return np.nan_to_num(h)


def set_hist(bars, samples, bins, *, density: bool = True) -> np.ndarray:
    """Update bars from :func:`hist_bars` with new ``samples`` (same ``bins``); returns the heights."""
    h = _hist(samples, to_numpy(bins).reshape(-1), density)
    set_bar_heights(bars, h)
    return h
