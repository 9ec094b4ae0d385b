"""Concept panels: one picture of one idea, drawn from data the math modules computed.

Each panel takes results (weights, Jacobians, tables), never logits: no panel calls the math.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from attnlib.plotting._core import math_text, to_numpy
from attnlib.plotting.curves import curves
from attnlib.plotting.matrices import cell_labels, heatmap
from attnlib.util.i18n import _

__all__ = [
    "kernel_regression_panels",
    "score_asymmetry_panels",
    "variance_errorbars",
    "sharpness_curves",
    "jacobian_panels",
]

_JACOBIAN_CLIM = 0.25  # every entry of a softmax Jacobian lies in [-1/4, 1/4]


def _new_axes(n: int, figsize):
    import matplotlib.pyplot as plt

    _, axes = plt.subplots(1, n, figsize=figsize, layout="constrained")
    return axes


def _edges(c: np.ndarray) -> np.ndarray:
    """Cell edges around sorted centres ``c``
    (midpoints; the end cells as wide as their neighbour).
    """
    if len(c) == 1:
        return np.array([c[0] - 0.5, c[0] + 0.5])
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate([[2 * c[0] - mid[0]], mid, [2 * c[-1] - mid[-1]]])


def kernel_regression_panels(
    x_train,
    y_train,
    grid,
    fits: Mapping[str, object],
    weights,
    axes=None,
    *,
    y_true=None,
    weights_title: str | None = None,
    vmax: float | None = None,
):
    """Draw fitted curves over the data (left) and the weight matrix of one fit (right).

    The weight matrix is drawn in x units: the key x_i across (each column centred on its x_i),
    the query x down, so "each query looks at the keys near it" is the diagonal x = x_i. Its colour
    scale stops at ``vmax`` (default: the largest weight of a query *inside* the data's range), so
    queries outside the data, where one end key takes almost all the weight, do not wash out the
    interior; larger weights show in the top colour (the colour bar's arrow).

    Args:
        x_train, y_train: ``(S,)`` training inputs (keys, sorted) and targets (values).
        grid: ``(G,)`` query positions where the curves are evaluated (sorted).
        fits: ``label -> (G,)`` fitted curves, e.g. one per kernel width.
        weights: ``(G, S)`` weights of one fit: row = query on the grid, column = key.
        axes: two axes (None: a new pyplot figure).
        y_true: optional ``(G,)`` noiseless function, drawn dashed.
        weights_title: title of the right panel (default "weights α(x, x_i)", translated).
        vmax: top of the weights' colour scale (None: see above).

    Returns:
        ``(lines, mesh)``: the fitted curves' ``Line2D`` list and the weights' ``QuadMesh``.
    """
    if axes is None:
        axes = _new_axes(2, (10.0, 3.6))
    if len(axes) != 2:
        raise ValueError(f"axes must hold 2 axes, got {len(axes)}")
    ax_fit, ax_w = axes
    x, y, g = to_numpy(x_train), to_numpy(y_train), to_numpy(grid)
    if y_true is not None:
        ax_fit.plot(g, to_numpy(y_true), "--", color="0.5", label=_("true function"))
    ax_fit.scatter(x, y, s=14, color="C0", alpha=0.7, label=_("training points"))
    styles = [f"C{i + 1}-" for i in range(len(fits))]  # C0 is the data's colour
    lines = curves(
        g,
        dict(fits),
        ax=ax_fit,
        xlabel="x",
        ylabel="y",
        styles=styles,
        title=_("Nadaraya–Watson fits for several kernel widths σ"),
    )
    ax_fit.legend(fontsize="x-small")
    w = to_numpy(weights)
    if vmax is None:
        inside = (g >= x.min()) & (g <= x.max())
        vmax = float(w[inside].max()) if inside.any() else float(w.max())
    mesh = ax_w.pcolormesh(_edges(x), _edges(g), w, cmap="viridis", vmin=0.0, vmax=vmax)
    ax_w.set_ylim(g[-1], g[0])
    ax_w.set_title(_("weights α(x, x_i)") if weights_title is None else weights_title)
    ax_w.set_xlabel(_("key x_i (training points)"))
    ax_w.set_ylabel(_("query x"))
    ax_w.figure.colorbar(
        mesh, ax=ax_w, label=_("weight"), extend="max" if w.max() > vmax else "neither"
    )
    return lines, mesh


def score_asymmetry_panels(
    asym, axes=None, *, labels: Sequence[str] | None = None, fmt: str = "{:.1f}"
):
    """Draw E, Eᵀ and E − Eᵀ side by side on one colour scale.

    Entry (i, j) of the first panel is e_ij ("token i reads token j"); of the second, e_ji (the
    same pair read the other way). The third panel is zero everywhere only if E is symmetric.

    Args:
        asym: a :class:`attnlib.core.scoring.ScoreAsymmetry` (``scores``, ``transposed``,
            ``difference``, each ``(L, L)``).
        axes: three axes to draw into (None: a new pyplot figure with three panels).
        labels: one label per token (default ``x1 .. xL``).
        fmt: format of the numbers written in the cells.

    Returns:
        ``(images, texts)``: the three ``AxesImage`` and their cell-label texts.
    """
    panels = [
        (
            to_numpy(asym.scores),
            _("{e_ij}: token i reads token j", e_ij=math_text("$e_{ij}$", "eᵢⱼ")),
        ),
        (
            to_numpy(asym.transposed),
            _("{e_ji}: the same pair, reversed", e_ji=math_text("$e_{ji}$", "eⱼᵢ")),
        ),
        (to_numpy(asym.difference), "$e_{ij} - e_{ji}$"),
    ]
    n = panels[0][0].shape[0]
    labels = list(labels) if labels is not None else [f"x{i + 1}" for i in range(n)]
    if len(labels) != n:
        raise ValueError(f"labels has {len(labels)} entries but scores is {n}x{n}")
    if axes is None:
        axes = _new_axes(3, (10.5, 3.4))
    if len(axes) != 3:
        raise ValueError(f"axes must hold 3 axes, got {len(axes)}")
    vmax = float(np.abs(np.concatenate([p.ravel() for p, _ in panels])).max()) or 1.0
    images, texts = [], []
    for ax, (mat, title) in zip(axes, panels):
        im = heatmap(
            mat,
            ax=ax,
            row_labels=labels,
            col_labels=labels,
            title=title,
            xlabel="j",
            ylabel="i",
            cmap="RdBu_r",
            vmin=-vmax,
            vmax=vmax,
            colorbar=ax is axes[-1],
        )
        images.append(im)
        texts.append(cell_labels(ax, mat, fmt, threshold=-np.inf))
    return images, texts


def variance_errorbars(table, ax=None):
    """Plot a :class:`~attnlib.course.scaling.VarianceTable` as Var(q·k)/d_k ± 2 SE against d_k.

    Var(q·k)/d_k is also the variance of the scaled score q·k/√d_k (the same samples), so one
    series shows both; the y-axis is linear around the theory's 1, where the error bars and the
    agreement can be seen; the x-axis is logarithmic.

    Args:
        table: result of :func:`attnlib.course.scaling.dot_product_variance`.
        ax: axes to draw into (None: a new pyplot figure).

    Returns:
        The ``ErrorbarContainer`` of the measured ratios.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _fig, ax = plt.subplots(figsize=(4.5, 3.4), layout="constrained")
    d = np.asarray(table.d_k, dtype=np.float64)
    ratio, se = to_numpy(table.variance) / d, to_numpy(table.stderr) / d
    ax.axhline(1.0, ls=":", color="0.4", lw=1, label=_("theory: 1"))
    bars = ax.errorbar(
        d,
        ratio,
        yerr=2 * se,
        fmt="o",
        color="C0",
        capsize=4,
        ms=5,
        label=_("Var(q·k) / d_k = Var(q·k / √d_k), sampled"),
    )
    ax.set_xscale("log", base=2)
    half = max(0.1, float(np.max(np.abs(ratio - 1) + 2 * se)) * 1.3)
    ax.set_ylim(1 - half, 1 + half)
    ax.set_xlabel("d_k")
    ax.set_ylabel(_("sampled variance / d_k"))
    ax.set_title(_("Monte-Carlo, n = {n} pairs, bars ±2 SE", n=table.num_samples))
    ax.legend(fontsize="small", loc="upper right")
    return bars


def sharpness_curves(unscaled, scaled, ax=None):
    """Plot mean entropy and mean max weight of softmax rows against d_k, raw and scaled.

    Args:
        unscaled: a :class:`~attnlib.course.scaling.SharpnessTable` with ``scaled=False``.
        scaled: the same with ``scaled=True``.
        ax: two axes ``(entropy, max weight)``, or one axes for both, or None (a new pyplot
            figure with two panels).

    Returns:
        ``list[Line2D]``: unscaled entropy, scaled entropy, unscaled max weight, scaled max weight.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _fig, ax = plt.subplots(1, 2, figsize=(8.4, 3.4), layout="constrained")
    ax_e, ax_m = (ax[0], ax[1]) if isinstance(ax, (list, tuple, np.ndarray)) else (ax, ax)
    d = np.asarray(unscaled.d_k, dtype=np.float64)
    S = unscaled.num_keys
    log_s = math.log(S)
    lines = []
    # per panel: its axes, the table's field, the title, the y label, and the uniform row's value
    # (a dotted guide), its label and the top of the y axis
    for a, name, title, ylabel, uniform, label, top in (
        (
            ax_e,
            "entropy",
            _("mean entropy of a row (S = {S} keys)", S=S),
            _("entropy (nats)"),
            log_s,
            "log S",
            1.15 * log_s,
        ),
        (
            ax_m,
            "max_weight",
            _("mean max weight of a row (S = {S} keys)", S=S),
            _("max weight"),
            1 / S,
            "1/S",
            1.05,
        ),
    ):
        lines += curves(
            d,
            {"q·k": getattr(unscaled, name), "q·k / √d_k": getattr(scaled, name)},
            ax=a,
            logx=True,
            styles=["C3o-", "C0s-"],
            title=title,
            xlabel="d_k",
            ylabel=ylabel,
        )
        a.axhline(uniform, color="0.6", ls=":", lw=1)
        a.text(
            d[0],
            uniform,
            _("uniform row: {value}", value=label),
            va="bottom",
            fontsize=8,
            color="0.4",
        )
        a.set_ylim(0.0, top)
    for a in {id(ax_e): ax_e, id(ax_m): ax_m}.values():
        a.set_xscale("log", base=2)
        a.legend(fontsize="small", loc="center right")
    return lines


def jacobian_panels(table, axes=None):
    """Draw softmax Jacobians for several spreads σ of the same logits, on one colour scale.

    Args:
        table: a :class:`~attnlib.course.scaling.SpreadJacobians` (``spreads (N,)``, ``weights (N,
            S)``, ``jacobians (N, S, S)``, ``norms (N,)``).
        axes: N axes (None: a new pyplot figure).

    Returns:
        ``list[AxesImage]``, one per panel.
    """
    spreads = list(table.spreads)
    if axes is None:
        axes = _new_axes(len(spreads), (3.3 * len(spreads), 3.2))
    if len(axes) != len(spreads):
        raise ValueError(f"axes has {len(axes)} entries but the table has {len(spreads)} spreads")
    weights, jacobians, norms = (to_numpy(t) for t in (table.weights, table.jacobians, table.norms))
    S = weights.shape[-1]
    labels = [f"z{j + 1}" for j in range(S)]
    images = []
    for i, (ax, sigma) in enumerate(zip(axes, spreads)):
        jac = jacobians[i]  # (S, S)
        title = _(
            "σ = {sigma:g}: max a = {a:.2f}, ‖J‖ = {norm:.3f}",
            sigma=sigma,
            a=float(weights[i].max()),
            norm=float(norms[i]),
        )
        im = heatmap(
            jac,
            ax=ax,
            row_labels=[f"a{j + 1}" for j in range(S)],
            col_labels=labels,
            title=title,
            xlabel="∂ / ∂z_r",
            ylabel="a_j" if i == 0 else "",
            cmap="cividis",  # as the Jacobian explorer: one colour map for J in notebook 03
            vmin=-_JACOBIAN_CLIM,
            vmax=_JACOBIAN_CLIM,
            colorbar=i == len(spreads) - 1,
        )
        # + 0.0: no "-0.00"; black text on the bright (positive) cells, white on the dark ones
        dark_below = 0.1 * _JACOBIAN_CLIM  # where the explorer switches too
        cell_labels(ax, np.round(jac, 2) + 0.0, "{:.2f}", fontsize=7, threshold=dark_below)
        images.append(im)
    return images
