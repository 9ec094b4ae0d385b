"""The picture of an explorer: a static scene of panels and artists, drawn by the browser or
matplotlib.

A :class:`Scene` is a grid of :class:`Panel` (axes with limits, ticks, labels, a title); each
panel holds artists from a small vocabulary. Every numeric field of an artist is either
**static** (a number / nested list / tensor / array, fixed at build time) or **dynamic**: a
string naming an array of the :class:`Frame` that the explorer's ``compute`` returns. The
browser front end (``explorer.js``) and :func:`render` (matplotlib, for the stored PNG and the
tests) draw the same scene from the same frame: first every static artist, then every dynamic
one, each group in the order listed. Colours: any matplotlib colour (``"C0"``, ``"black"``,
``"#1f77b4"``, ``"0.6"``); colour maps: ``viridis``, ``cividis``, ``greys`` (readable in grey and
for colour-blind readers).

The vocabulary (``xy`` arrays are ``(N, 2)`` points; segments/arrows ``(N, 2, 2)``: start, end)::

    Heatmap(values, vmin=0, vmax=1, cmap="viridis", hidden=None, annotate=False, digits=2,
            colorbar=False)      # values (L, S); cell (i, j) spans x in j±0.5, y in i±0.5;
                                 # hidden (L, S) bool/0-1: True cells are greyed and hatched
    Bars(heights, x=None, width=0.8, color="C0", colors=None, bottom=0.0, label=None)
    Points(xy, color="C0", size=5, marker="o"|"s"|"^"|"*", filled=True, labels=None, label=None)
    Line(xy, color="C0", width=1.5, dash=False, label=None)          # a polyline / curve
    Segments(xy, color="0.4", width=1.0, widths=None)                 # widths (N,) may be dynamic
    Arrows(xy, color="C0", width=1.5)
    Polygon(xy, color="C2", alpha=0.15, edge=None)                    # e.g. plotting.convex_hull(v)
    Text(x, y, text="", key=None, color="black", size=9, ha="left", va="center", axes=False)
                                 # key: a dynamic string from Frame.texts; axes=True: x, y in 0..1
    Panel(artists, xlim, ylim, title="", xlabel="", ylabel="", xticks=None, xticklabels=None,
          yticks=None, yticklabels=None, equal=False, legend=None|"upper right"|"upper left"|
          "lower right"|"lower left")      # ticks None: chosen here; [] none; ylim (hi, lo) flips y
    cells(n_rows, n_cols, row_labels=None, col_labels=None)  # Panel keyword args for a heatmap
    bar_slots(n, labels=None, every=1)  # ... for n bars at 0..n-1; square(lim): a vector plane
    weights_panel(key, n, labels=None, title=..., xlabel=None, ylabel=None, every=1)
                                 # a Panel: one row of softmax weights as bars on 0..1
    Scene(panels, cols=1, width=720, height=300, col_widths=None, row_heights=None)

The artists live in :mod:`attnlib.widgets.framework.artists`; :class:`Frame`, :class:`Panel`,
:func:`cells`, :func:`bar_slots`, :func:`square`, :func:`weights_panel` and :class:`Scene`
here.

Example (two small multiples of a heatmap, one with hatched hidden cells, and a bar panel)::

    scene = Scene([
        Panel([Heatmap("w", hidden="hidden", annotate=True)], title="weights", **cells(4, 4)),
        Panel([Heatmap("w2", cmap="cividis", colorbar=True)], title="other", **cells(4, 4)),
        Panel([Bars("row"), Points("mark", color="black")], xlim=(-0.6, 3.6), ylim=(0, 1)),
    ], cols=3, width=780, height=260)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from attnlib.util.fonts import CANVAS_FONTS
from attnlib.util.i18n import _, get_language
from attnlib.widgets.framework.artists import HATCH_FILL, Artist, Bars, Heatmap, Text, mpl_cmap

__all__ = ["Scene", "Panel", "Frame", "cells", "bar_slots", "square", "weights_panel"]

_LEGEND_LOCS = (None, "upper right", "upper left", "lower right", "lower left")


@dataclass
class Frame:
    """What ``compute`` returns: the dynamic artists' arrays and the readout's numbers.

    Args:
        arrays: ``{key: array}`` named by the scene's dynamic fields (tensors, arrays, lists);
            sent to the browser as float32.
        readout: ``{label: value}`` shown beside the picture: floats, ints, bools, str, 1-D or
            2-D tensors/arrays of numbers (kept in float64 for the readout).
        texts: ``{key: str}`` for ``Text(..., key=...)`` artists.
    """

    arrays: dict[str, Any] = field(default_factory=dict)
    readout: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


def _ticks(lo: float, hi: float) -> list[float]:
    from matplotlib.ticker import MaxNLocator

    a, b = sorted((lo, hi))
    return [float(t) for t in MaxNLocator(nbins=5).tick_values(a, b) if a - 1e-9 <= t <= b + 1e-9]


def _label(t: float) -> str:
    return f"{t:g}" if abs(t) >= 1e-12 else "0"


@dataclass
class Panel:
    """One axes of the grid: limits, ticks, texts and the artists drawn in it (see module doc)."""

    artists: Sequence[Artist]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    xticks: Sequence[float] | None = None
    xticklabels: Sequence[str] | None = None
    yticks: Sequence[float] | None = None
    yticklabels: Sequence[str] | None = None
    equal: bool = False
    legend: str | None = None

    def __post_init__(self):
        for name in ("xlim", "ylim"):
            lim = getattr(self, name)
            if len(lim) != 2 or not all(math.isfinite(float(v)) for v in lim) or lim[0] == lim[1]:
                raise ValueError(f"Panel {name} must be two different finite numbers, got {lim!r}")
        if self.legend not in _LEGEND_LOCS:
            raise ValueError(f"Panel legend must be one of {_LEGEND_LOCS}, got {self.legend!r}")
        for a in self.artists:
            if not isinstance(a, Artist):
                raise TypeError(
                    "Panel artists must be scene artists (Heatmap, Bars, ...), "
                    f"got {type(a).__name__}"
                )
        for axis in "xy":
            ticks, labels = getattr(self, f"{axis}ticks"), getattr(self, f"{axis}ticklabels")
            ticks = (
                _ticks(*getattr(self, f"{axis}lim")) if ticks is None else [float(t) for t in ticks]
            )
            labels = [_label(t) for t in ticks] if labels is None else [str(s) for s in labels]
            if len(labels) != len(ticks):
                raise ValueError(
                    f"Panel {axis}ticklabels has {len(labels)} labels for {len(ticks)} ticks"
                )
            setattr(self, f"{axis}ticks", ticks)
            setattr(self, f"{axis}ticklabels", labels)

    @property
    def has_colorbar(self) -> bool:
        return any(isinstance(a, Heatmap) and a.colorbar for a in self.artists)


def cells(n_rows: int, n_cols: int, row_labels=None, col_labels=None) -> dict:
    """Panel keyword arguments for an ``(n_rows, n_cols)`` heatmap: limits
    (row 0 on top) and ticks.
    """
    return dict(
        xlim=(-0.5, n_cols - 0.5),
        ylim=(n_rows - 0.5, -0.5),
        xticks=list(range(n_cols)),
        yticks=list(range(n_rows)),
        xticklabels=list(col_labels) if col_labels is not None else [str(j) for j in range(n_cols)],
        yticklabels=list(row_labels) if row_labels is not None else [str(i) for i in range(n_rows)],
    )


def bar_slots(n: int, labels: Sequence[str] | None = None, *, every: int = 1) -> dict:
    """Panel keyword arguments for ``n`` bars at x = 0 .. n-1 (e.g. the weights over the keys):
    the x limits ``(-0.6, n - 0.4)`` and a tick under every ``every``-th bar, labelled from
    ``labels`` (one per bar; None: the index).
    """
    ticks = list(range(0, n, every))
    return dict(
        xlim=(-0.6, n - 0.4),
        xticks=ticks,
        xticklabels=None if labels is None else [list(labels)[j] for j in ticks],
    )


def square(lim: float) -> dict:
    """Panel keyword arguments for a plane of vectors: x and y in ``(-lim, lim)``, one scale."""
    return dict(xlim=(-lim, lim), ylim=(-lim, lim), equal=True)


def weights_panel(
    key: str,
    n: int,
    labels: Sequence[str] | None = None,
    *,
    title: str,
    xlabel: str | None = None,
    ylabel: str | None = None,
    every: int = 1,
) -> Panel:
    """The course's picture of one row of softmax weights: a bar per key (the frame's array
    ``key``, ``(n,)``, colour C0) on a 0..1 scale, ticked as :func:`bar_slots` ticks them; the
    axes say "key" and "weight" (in the current language) unless given."""
    return Panel(
        [Bars(key, color="C0")],
        ylim=(0.0, 1.0),
        title=title,
        xlabel=_("key") if xlabel is None else xlabel,
        ylabel=_("weight") if ylabel is None else ylabel,
        **bar_slots(n, labels, every=every),
    )


class Scene:
    """Panels in a grid of ``cols`` columns (row-major), ``width`` x ``height`` CSS pixels."""

    def __init__(
        self,
        panels: Sequence[Panel],
        *,
        cols: int = 1,
        width: int = 720,
        height: int = 300,
        col_widths: Sequence[float] | None = None,
        row_heights: Sequence[float] | None = None,
    ):
        self.panels = list(panels)
        if not self.panels or not all(isinstance(p, Panel) for p in self.panels):
            raise TypeError("Scene panels must be a non-empty list of Panel")
        if not (isinstance(cols, int) and cols >= 1):
            raise ValueError(f"Scene cols must be an int >= 1, got {cols!r}")
        if not (200 <= width <= 1600 and 100 <= height <= 1200):
            raise ValueError(
                f"Scene size must be 200..1600 x 100..1200 pixels, got {width} x {height}"
            )
        self.cols, self.width, self.height = cols, int(width), int(height)
        self.rows = math.ceil(len(self.panels) / cols)
        self.col_widths = list(col_widths) if col_widths is not None else [1.0] * cols
        self.row_heights = list(row_heights) if row_heights is not None else [1.0] * self.rows
        if len(self.col_widths) != cols or len(self.row_heights) != self.rows:
            raise ValueError(
                f"Scene col_widths needs {cols} and row_heights {self.rows} entries, got "
                f"{len(self.col_widths)} and {len(self.row_heights)}"
            )
        self.keys()  # a key read both as a text and as an array is refused here
        # the canvas's font stack, for the language the scene's words were made in
        self.font = CANVAS_FONTS[get_language()]

    def keys(self) -> dict[str, tuple[Any, str]]:
        """``{frame key: (artist, field)}`` for every dynamic field
        (Text keys: field ``"text"``).
        """
        out: dict[str, tuple[Any, str]] = {}
        for p in self.panels:
            for a in p.artists:
                for f in a.numeric:
                    if isinstance(getattr(a, f), str):
                        _add_key(out, getattr(a, f), a, f)
                if isinstance(a, Text) and a.key:
                    _add_key(out, a.key, a, "text")
        return out

    def rects(self) -> list[tuple[float, float, float, float]]:
        """The plot area of each panel, ``(left, top, width, height)`` in pixels
        (both renderers use it).
        """
        return _rects(
            self.panels, self.cols, self.width, self.height, self.col_widths, self.row_heights
        )

    def narrow(self) -> dict:
        """The same panels in one column, :data:`NARROW_WIDTH` pixels wide, each as tall as its
        cell of the grid: ``{"width", "height", "rects"}``. ``explorer.js`` reflows to it where the
        whole scene would be scaled below :data:`NARROW_BELOW` of its size (a phone): the same
        drawing, each panel's plot area laid out by the same rule as :meth:`rects`."""
        H = np.diff(np.cumsum([0.0, *self.row_heights]) / sum(self.row_heights) * self.height)
        heights = [float(H[i // self.cols]) for i in range(len(self.panels))]
        total = round(sum(heights))
        rects = _rects(self.panels, 1, NARROW_WIDTH, total, [1.0], heights)
        return {"width": NARROW_WIDTH, "height": total, "below": NARROW_BELOW, "rects": rects}

    def to_json(self) -> dict:
        """What the front end draws from
        (static data inline, dynamic fields as ``{"key": name}``); ``font``: the canvas's font
        stack for the language the scene was made in (a CJK stack for Chinese,
        :data:`~attnlib.util.fonts.CANVAS_FONTS`).
        """
        from matplotlib import colormaps
        from matplotlib.colors import to_hex

        used = sorted({a.cmap for p in self.panels for a in p.artists if isinstance(a, Heatmap)})
        luts = {c: [to_hex(colormaps[mpl_cmap(c)](i / 255)) for i in range(256)] for c in used}
        # a NaN cell's colour, as imshow draws it (the map's "bad" colour, by default transparent)
        bad = {c: to_hex(tuple(colormaps[mpl_cmap(c)].get_bad()), keep_alpha=True) for c in used}
        panels = []
        for p, rect in zip(self.panels, self.rects()):
            d = {f.name: getattr(p, f.name) for f in fields(p) if f.name != "artists"}
            d = {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
            d["rect"] = rect
            d["artists"] = [a.to_json() for a in sorted(p.artists, key=lambda a: a.dynamic)]
            panels.append(d)
        return {
            "width": self.width,
            "height": self.height,
            "panels": panels,
            "luts": luts,
            "bad": bad,
            "narrow": self.narrow(),
            "hatch": HATCH_FILL,
            "font": self.font,
        }


#: The one-column layout's width (``Scene.narrow``): a phone's 390 CSS pixels less the page's
#: margins; and the scale below which the front end reflows to it rather than shrink the scene.
NARROW_WIDTH = 340
NARROW_BELOW = 0.75


def _rects(panels, cols, width, height, col_widths, row_heights) -> list:
    """Each panel's plot area in a grid of ``cols`` columns (:meth:`Scene.rects`)."""
    W = np.cumsum([0.0, *col_widths]) / sum(col_widths) * width
    H = np.cumsum([0.0, *row_heights]) / sum(row_heights) * height
    out = []
    for i, p in enumerate(panels):
        r, c = divmod(i, cols)
        longest = max((len(s) for s in p.yticklabels or ()), default=0)
        left = W[c] + 8 + (16 if p.ylabel else 0) + (8 + 6.5 * longest if p.yticks else 0)
        right = W[c + 1] - 10 - (52 if p.has_colorbar else 0)
        top = H[r] + 6 + (20 if p.title else 0)
        bottom = H[r + 1] - 6 - (16 if p.xticks else 0) - (16 if p.xlabel else 0)
        w, h = max(right - left, 10.0), max(bottom - top, 10.0)
        if p.equal:
            dx, dy = abs(p.xlim[1] - p.xlim[0]), abs(p.ylim[1] - p.ylim[0])
            s = min(w / dx, h / dy)
            left, top = left + (w - s * dx) / 2, top + (h - s * dy) / 2
            w, h = s * dx, s * dy
        out.append((round(left, 1), round(top, 1), round(w, 1), round(h, 1)))
    return out


def _add_key(out: dict[str, tuple[Any, str]], key: str, artist: Any, field: str) -> None:
    """Record that ``artist.field`` reads frame key ``key``; a key read both as a text and as an
    array is refused (one of the two would never be sent).
    """
    if key in out and (out[key][1] == "text") != (field == "text"):
        raise ValueError(
            f"Scene key {key!r} is read as a text by one artist and as an array by another "
            f"({type(out[key][0]).__name__}.{out[key][1]} and {type(artist).__name__}.{field}): "
            "give the text its own key"
        )
    out[key] = (artist, field)
