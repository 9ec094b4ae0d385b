"""Matrices as pictures: heatmaps, cell labels, and hidden (masked) cells drawn hatched."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnlib.plotting._core import _as_matrix, _axes, masked, to_numpy
from attnlib.util.i18n import _

__all__ = ["heatmap", "cell_labels", "hatch_overlay", "weights_rgba"]


def heatmap(
    weights,
    ax=None,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
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
        title, xlabel, ylabel: text for the axes (default "Attention weights", "key position j",
            "query position i", in the current language).
        colorbar: add a colorbar beside the axes.
        cmap: colormap name.
        vmin, vmax: colour limits (None: from the data). Widgets should fix them so colours
            mean the same thing after ``set_data``.
        mask: optional bool ``(L, S)``, True = may attend; hidden cells are drawn in
            ``hidden_color``.
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
    im = ax.imshow(
        masked(w, mask), cmap=cm, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest"
    )
    cols = list(col_labels) if col_labels is not None else [str(j) for j in range(S)]
    rows = list(row_labels) if row_labels is not None else [str(i) for i in range(L)]
    ax.set_xticks(range(S), labels=cols)
    ax.set_yticks(range(L), labels=rows)
    if S > 16 and col_labels is None:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(8, integer=True))
    if L > 16 and row_labels is None:
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(8, integer=True))
    ax.set_title(_("Attention weights") if title is None else title)
    ax.set_xlabel(_("key position j") if xlabel is None else xlabel)
    ax.set_ylabel(_("query position i") if ylabel is None else ylabel)
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax)
        if colorbar_label:
            cb.set_label(colorbar_label)
    return im


def cell_labels(
    ax, values, fmt: str = "{:.2f}", *, fontsize: float = 8, threshold: float | None = None
):
    """Write each cell's value on a heatmap drawn by :func:`heatmap` in ``ax``.

    Args:
        ax: the heatmap's axes.
        values: ``(L, S)`` numbers to write.
        fmt: format string for one number.
        fontsize: text size.
        threshold: values above it are written in black, below in white (None: the middle of
            the range).
    Returns:
        ``list[list[Text]]`` of shape ``(L, S)``.
    """
    v = _as_matrix("values", values)
    texts = [
        [ax.text(j, i, "", ha="center", va="center", fontsize=fontsize) for j in range(v.shape[1])]
        for i in range(v.shape[0])
    ]
    _write_cell_labels(texts, v, fmt, threshold)
    return texts


def _write_cell_labels(texts, values, fmt: str, threshold: float | None) -> None:
    """Write ``values`` into the texts of :func:`cell_labels` (``NaN`` and masked cells blank)."""
    v = np.ma.filled(np.ma.masked_invalid(_as_matrix("values", values)), np.nan)
    finite = v[np.isfinite(v)]
    if threshold is None:
        threshold = 0.5 * (finite.min() + finite.max()) if finite.size else 0.0
    for i, row in enumerate(texts):
        for j, t in enumerate(row):
            x = v[i, j]
            t.set_text("" if not np.isfinite(x) else fmt.format(x))
            t.set_color("black" if np.isfinite(x) and x > threshold else "white")


_CELL_PX = 8  # pixels per cell in the hatch overlay


def hatch_overlay(
    visible, *, cell_px: int = _CELL_PX, color=(0.25, 0.25, 0.25), alpha: float = 0.45
) -> np.ndarray:
    """An RGBA image with diagonal stripes over the hidden cells (transparent elsewhere).

    Args:
        visible: boolean ``(L, S)``, True = may attend (left clear).
        cell_px: pixels per cell side.
        color: RGB of the stripes.
        alpha: opacity of the stripes.

    Returns:
        ``(L * cell_px, S * cell_px, 4)`` float array for ``imshow(..., extent=...)`` or
        ``set_data``.
    """
    vis = np.asarray(to_numpy(visible), dtype=bool)
    if vis.ndim != 2:
        raise ValueError(f"visible must be 2-D (L, S), got shape {vis.shape}")
    if cell_px < 2:
        raise ValueError(f"cell_px must be >= 2, got {cell_px}")
    rows, cols = np.indices((cell_px, cell_px))
    stripe = ((rows + cols) % 4) < 2  # (cell_px, cell_px) diagonal stripes
    hidden = np.kron(~vis, np.ones((cell_px, cell_px), dtype=bool)).astype(bool)  # (L*px, S*px)
    tiled = np.tile(stripe, vis.shape)
    rgba = np.zeros(hidden.shape + (4,))
    rgba[..., :3] = color
    rgba[..., 3] = np.where(hidden & tiled, alpha, 0.0)
    return rgba


def weights_rgba(
    weights,
    visible,
    *,
    cmap: str = "viridis",
    vmin: float = 0.0,
    vmax: float = 1.0,
    hidden_color=(0.85, 0.85, 0.85),
    cell_px: int = _CELL_PX,
) -> np.ndarray:
    """One RGBA picture of a weight matrix: visible cells in ``cmap``, hidden ones grey, hatched.

    Drawing this single image is cheaper than a masked heatmap plus a hatch overlay.

    Args:
        weights: ``(L, S)`` weights.
        visible: boolean ``(L, S)``, True = may attend.
        cmap, vmin, vmax: colour map and its limits for the visible cells.
        hidden_color: RGB of the hidden cells (under the stripes).
        cell_px: pixels per cell side.

    Returns:
        ``(L * cell_px, S * cell_px, 4)`` float array for ``AxesImage.set_data``.
    """
    import matplotlib

    w = to_numpy(weights)
    vis = np.asarray(to_numpy(visible), dtype=bool)
    if w.ndim != 2 or w.shape != vis.shape:
        raise ValueError(f"weights {w.shape} and visible {vis.shape} must both be (L, S)")
    norm = np.clip((w - vmin) / (vmax - vmin), 0.0, 1.0)
    rgba = matplotlib.colormaps[cmap](norm)  # (L, S, 4)
    rgba[~vis] = (*hidden_color, 1.0)
    big = np.kron(rgba, np.ones((cell_px, cell_px, 1)))  # (L*px, S*px, 4)
    stripes = hatch_overlay(vis, cell_px=cell_px)  # (L*px, S*px, 4)
    a = stripes[..., 3:4]
    big[..., :3] = big[..., :3] * (1.0 - a) + stripes[..., :3] * a
    return big
