"""Key picture of notebook 02: Var(q·k) grows like d_k, and unscaled softmax rows saturate (C05, C06)."""

from __future__ import annotations

import math

import numpy as np

from attnlib import plotting
from attnlib.figures import register_figure

__all__ = ["variance_errorbars", "sharpness_curves", "scaling_variance_figure"]


def variance_errorbars(table, ax=None):
    """Plot a :class:`~attnlib.statistics.VarianceTable`: Var(q·k) and Var(q·k/√d_k) against d_k.

    Both axes are logarithmic; error bars are ±2 standard errors; dotted lines are the theory
    (d_k unscaled, 1 scaled).

    Args:
        table: result of :func:`attnlib.statistics.dot_product_variance`.
        ax: axes to draw into (None: a new pyplot figure).

    Returns:
        ``(unscaled, scaled)``: the two ``ErrorbarContainer``.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(4.5, 3.4), layout="constrained")
    d = np.asarray(table.d_k, dtype=np.float64)
    var, se = plotting.to_numpy(table.variance), plotting.to_numpy(table.stderr)
    var_s, se_s = plotting.to_numpy(table.variance_scaled), plotting.to_numpy(table.stderr_scaled)
    ax.plot(d, d, ":", color="C3", lw=1, label="theory: d_k")
    ax.plot(d, np.ones_like(d), ":", color="C0", lw=1, label="theory: 1")
    unscaled = ax.errorbar(d, var, yerr=2 * se, fmt="o", color="C3", capsize=3, ms=4,
                           label="Var(q·k), sampled")
    scaled = ax.errorbar(d, var_s, yerr=2 * se_s, fmt="s", color="C0", capsize=3, ms=4,
                         label="Var(q·k / √d_k), sampled")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("d_k")
    ax.set_ylabel("variance of the score")
    ax.set_title(f"Monte-Carlo, n = {table.num_samples} pairs, ±2 SE")
    ax.legend(fontsize="small", loc="upper left")
    return unscaled, scaled


def sharpness_curves(unscaled, scaled, ax=None):
    """Plot the mean entropy of softmax rows against d_k from two :class:`~attnlib.statistics.SharpnessTable`.

    Args:
        unscaled: :func:`~attnlib.statistics.softmax_sharpness` with ``scaled=False``.
        scaled: the same with ``scaled=True``.
        ax: axes (None: a new pyplot figure).

    Returns:
        ``list[Line2D]``: unscaled entropy, scaled entropy, unscaled max weight, scaled max weight.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(4.5, 3.4), layout="constrained")
    d = np.asarray(unscaled.d_k, dtype=np.float64)
    ys = {
        "entropy, q·k": unscaled.entropy,
        "entropy, q·k/√d_k": scaled.entropy,
        "max weight, q·k": unscaled.max_weight,
        "max weight, q·k/√d_k": scaled.max_weight,
    }
    lines = plotting.curves(d, ys, ax=ax, logx=True, styles=["C3o-", "C0o-", "C3s--", "C0s--"],
                            title=f"softmax rows over S = {unscaled.num_keys} keys",
                            xlabel="d_k", ylabel="nats  /  weight")
    ax.set_xscale("log", base=2)
    ax.axhline(math.log(unscaled.num_keys), color="0.6", ls=":", lw=1)
    ax.text(d[0], math.log(unscaled.num_keys), "uniform row: log S", va="bottom", fontsize=8, color="0.4")
    ax.set_ylim(0.0, 1.15 * math.log(unscaled.num_keys))
    ax.legend(fontsize="small", loc="center right")
    return lines


@register_figure("scaling_variance", formats=("png", "svg"))
def scaling_variance_figure(seed: int = 0):
    """The key picture: the variance experiment next to the sharpness curves (private generator)."""
    import torch
    from matplotlib.figure import Figure

    from attnlib.statistics import dot_product_variance, softmax_sharpness

    widths = [1, 4, 16, 64, 256, 1024]
    g = torch.Generator().manual_seed(seed)
    table = dot_product_variance(widths, 10_000, generator=g)
    all_widths = [2**e for e in range(11)]
    unscaled = softmax_sharpness(all_widths, scaled=False, generator=g)
    scaled = softmax_sharpness(all_widths, scaled=True, generator=g)
    fig = Figure(figsize=(10.0, 3.8), layout="constrained")
    ax_var, ax_sharp = fig.subplots(1, 2)
    variance_errorbars(table, ax_var)
    sharpness_curves(unscaled, scaled, ax_sharp)
    fig.suptitle("Var(q·k) = d_k, so unscaled softmax rows saturate as d_k grows (C05, C06)")
    return fig
