"""Bars and curves: weight bars, histograms and curves against a parameter."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnlib.plotting._core import _axes, to_numpy
from attnlib.util.i18n import _

__all__ = ["weight_bars", "curves", "hist_bars"]


def weight_bars(
    weights,
    ax=None,
    labels: Sequence[str] | None = None,
    *,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    ylim: tuple[float, float] | None = (0.0, 1.0),
    color: str | Sequence[str] | None = "C0",
):
    """Draw one row of weights ``(S,)`` as bars, one per key.

    Args:
        weights: ``(S,)`` (or ``(1, S)``) weights.
        ax: axes (None: a new pyplot figure).
        labels: one label per key (default ``k1 .. kS``).
        title, xlabel, ylabel: axes text (default "Attention weights", "key", "weight", in the
            current language).
        ylim: fixed y-limits so the bars can move in place (None: autoscale).
        color: bar colour(s).
    Returns:
        The ``BarContainer``.
    """
    w = to_numpy(weights).reshape(-1)
    S = w.shape[0]
    if labels is None:
        labels = [f"k{j + 1}" for j in range(S)]
    if len(labels) != S:
        raise ValueError(f"labels has {len(labels)} entries but weights has {S}")
    ax = _axes(ax)
    bars = ax.bar(range(S), w, color=color, tick_label=list(labels))
    ax.set_title(_("Attention weights") if title is None else title)
    ax.set_xlabel(_("key") if xlabel is None else xlabel)
    ax.set_ylabel(_("weight") if ylabel is None else ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    return bars


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


def hist_bars(
    samples,
    bins,
    ax=None,
    *,
    density: bool = True,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    color: str = "C0",
):
    """Draw a histogram of ``samples`` over fixed bin edges, as bars that can be updated in place.

    Args:
        samples: any-shape tensor/array (flattened).
        bins: ``(nbins + 1,)`` fixed bin edges.
        ax: axes (None: a new pyplot figure).
        density: normalise to a density (area 1) instead of counts.
        title, xlabel, ylabel: axes text (default "Histogram", "value", "density", in the
            current language).
        color: bar colour.
    Returns:
        The ``BarContainer``.
    """
    edges = to_numpy(bins).reshape(-1)
    ax = _axes(ax)
    heights = _hist(samples, edges, density)
    bars = ax.bar(edges[:-1], heights, width=np.diff(edges), align="edge", color=color, alpha=0.8)
    ax.set_title(_("Histogram") if title is None else title)
    ax.set_xlabel(_("value") if xlabel is None else xlabel)
    ax.set_ylabel(_("density") if ylabel is None else ylabel)
    return bars


def _hist(samples, edges, density):
    h, _ = np.histogram(to_numpy(samples).reshape(-1), bins=edges, density=density)
    return np.nan_to_num(h)
