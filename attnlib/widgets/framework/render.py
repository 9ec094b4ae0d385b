"""The matplotlib renderer of a :class:`~attnlib.widgets.framework.scene.Scene`: the explorer's
static picture.

``render(scene, frame)`` draws on a new Agg ``Figure`` with the same panel rectangles
(``scene.rects()``) and drawing order (static artists, then dynamic ones) as the browser front
end; ``render_png`` encodes it. Used for the ``image/png`` stored beside each explorer (readers
without a kernel) and by tests.
"""

from __future__ import annotations

import io

import numpy as np

from attnlib.widgets.framework.artists import (
    HATCH_FILL,
    Arrows,
    Artist,
    Bars,
    Heatmap,
    Line,
    Points,
    Polygon,
    Segments,
    Text,
    mpl_cmap,
)
from attnlib.widgets.framework.scene import Frame, Scene

__all__ = ["render", "render_png", "DRAW"]


def render(scene: Scene, frame: Frame, *, dpi: int = 100):
    """Draw ``scene`` with ``frame``'s arrays on a new matplotlib ``Figure`` (Agg), same layout as
    the browser.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(scene.width / dpi, scene.height / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    pt = 72 / dpi  # points per pixel: sizes in the scene are pixels
    for p, (left, top, w, h) in zip(scene.panels, scene.rects()):
        ax = fig.add_axes(
            (left / scene.width, 1 - (top + h) / scene.height, w / scene.width, h / scene.height)
        )
        ax.set_xlim(*p.xlim)
        ax.set_ylim(*p.ylim)
        ax.set_xticks(p.xticks or [], labels=p.xticklabels, fontsize=8)
        ax.set_yticks(p.yticks or [], labels=p.yticklabels, fontsize=8)
        ax.set_title(p.title, fontsize=9)
        ax.set_xlabel(p.xlabel, fontsize=8, labelpad=1)
        ax.set_ylabel(p.ylabel, fontsize=8, labelpad=1)
        for a in sorted(p.artists, key=lambda a: a.dynamic):
            _draw(ax, a, frame, pt, fig, (left + w, top, h, scene))
        if p.legend and any(getattr(a, "label", None) for a in p.artists):
            ax.legend(loc=p.legend, fontsize=7, frameon=True)  # type: ignore[call-overload]
    return fig


def _get(a: Artist, name: str, frame: Frame):
    v = getattr(a, name)
    if isinstance(v, str):
        if v not in frame.arrays:
            raise KeyError(
                f"the frame has no array {v!r} for {a.kind}.{name}; it has {sorted(frame.arrays)}"
            )
        v = frame.arrays[v]
    return None if v is None else a.check(name, v)


def _heatmap(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    from matplotlib.patches import Rectangle

    v = _get(a, "values", frame)
    n, m = v.shape
    im = ax.imshow(
        v,
        cmap=mpl_cmap(a.cmap),
        vmin=a.vmin,
        vmax=a.vmax,
        interpolation="nearest",
        extent=(-0.5, m - 0.5, n - 0.5, -0.5),
        aspect="auto",
    )
    ax.set_xlim(ax.get_xlim())
    hidden = _get(a, "hidden", frame)
    if hidden is not None:
        for i, j in zip(*np.nonzero(hidden > 0.5)):
            ax.add_patch(
                Rectangle(
                    (j - 0.5, i - 0.5),
                    1,
                    1,
                    facecolor=HATCH_FILL,
                    edgecolor="0.45",
                    hatch="///",
                    lw=0,
                )
            )
    if a.annotate:
        for i in range(n):
            for j in range(m):
                if hidden is None or hidden[i, j] <= 0.5:
                    t = (v[i, j] - a.vmin) / (a.vmax - a.vmin)
                    label = round(float(v[i, j]), a.digits) + 0.0  # + 0.0: no "-0.00"
                    ax.text(
                        j,
                        i,
                        f"{label:.{a.digits}f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="black" if t > 0.55 else "white",
                    )
    if a.colorbar:
        right, top, h, scene = colorbar_at
        cax = fig.add_axes(
            (
                (right + 8) / scene.width,
                1 - (top + h) / scene.height,
                10 / scene.width,
                h / scene.height,
            )
        )
        fig.colorbar(im, cax=cax).ax.tick_params(labelsize=7)


def _bars(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    hts = _get(a, "heights", frame)
    x = _get(a, "x", frame)
    x = np.arange(len(hts)) if x is None else x
    ax.bar(
        x,
        hts,
        width=a.width,
        bottom=a.bottom,
        color=list(a.colors) if a.colors else a.color,
        label=a.label,
    )


def _points(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    xy = _get(a, "xy", frame)
    mk = {"o": "o", "s": "s", "^": "^", "*": "*"}[a.marker]
    ax.plot(
        xy[:, 0],
        xy[:, 1],
        ls="none",
        marker=mk,
        ms=2 * a.size * pt * (1.6 if mk == "*" else 1),
        mfc=a.color if a.filled else "none",
        mec=a.color,
        mew=1.5 * pt * 1.4,
        label=a.label,
    )
    for (x, y), s in zip(xy, a.labels or []):
        ax.annotate(
            s,
            (x, y),
            xytext=(a.size + 2, a.size + 2),
            textcoords="offset pixels",
            fontsize=8,
            color=a.color,
        )


def _line(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    xy = _get(a, "xy", frame)
    ax.plot(
        xy[:, 0],
        xy[:, 1],
        color=a.color,
        lw=a.width * pt,
        ls="--" if a.dash else "-",
        label=a.label,
    )


def _segments(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    from matplotlib.collections import LineCollection

    xy = _get(a, "xy", frame)
    widths = _get(a, "widths", frame)
    lw = (widths if widths is not None else np.full(len(xy), a.width)) * pt
    ax.add_collection(LineCollection(list(xy), colors=a.color, linewidths=lw))


def _arrows(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    for (x0, y0), (x1, y1) in _get(a, "xy", frame):
        ax.annotate(
            "",
            (x1, y1),
            (x0, y0),
            arrowprops=dict(
                arrowstyle="-|>",
                color=a.color,
                lw=a.width * pt,
                shrinkA=0,
                shrinkB=0,
                mutation_scale=10,
            ),
        )


def _polygon(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    from matplotlib.patches import Polygon as MplPolygon

    xy = _get(a, "xy", frame)
    ax.add_patch(MplPolygon(xy, closed=True, facecolor=a.color, alpha=a.alpha, lw=0))
    if a.edge is not None:
        ax.add_patch(MplPolygon(xy, closed=True, fill=False, edgecolor=a.edge, lw=pt))


def _text(ax, a, frame: Frame, pt: float, fig, colorbar_at) -> None:
    text = frame.texts.get(a.key, "") if a.key else a.text
    ax.text(
        a.x,
        a.y,
        text,
        color=a.color,
        fontsize=a.size * pt * 1.2,
        ha=a.ha,
        va={"middle": "center"}.get(a.va, a.va),
        transform=ax.transAxes if a.axes else ax.transData,
    )


#: One entry per artist kind (explorer.js's ARTISTS is the canvas twin): how matplotlib draws it.
DRAW = {
    Heatmap: _heatmap,
    Bars: _bars,
    Points: _points,
    Line: _line,
    Segments: _segments,
    Arrows: _arrows,
    Polygon: _polygon,
    Text: _text,
}


def _draw(ax, a: Artist, frame: Frame, pt: float, fig, colorbar_at) -> None:
    DRAW[type(a)](ax, a, frame, pt, fig, colorbar_at)


def render_png(scene: Scene, frame: Frame, *, dpi: int = 100) -> bytes:
    """:func:`render`, encoded as PNG bytes."""
    buf = io.BytesIO()
    render(scene, frame, dpi=dpi).savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
