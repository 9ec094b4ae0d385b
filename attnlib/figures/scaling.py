"""Key picture of notebook 02: Var(q·k) grows like d_k, and unscaled softmax rows saturate
(C05, C06)."""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.figures import register_figure
from attnlib.scaling import dot_product_variance, softmax_sharpness

__all__ = ["scaling_variance_figure"]


@register_figure("scaling_variance", formats=("png", "svg"))
def scaling_variance_figure(seed: int = 0):
    """The key picture: the variance experiment next to the sharpness curves (private generator)."""
    from matplotlib.figure import Figure

    widths = [1, 4, 16, 64, 256, 1024]
    g = torch.Generator().manual_seed(seed)
    table = dot_product_variance(widths, 10_000, generator=g)
    all_widths = [2**e for e in range(11)]
    unscaled = softmax_sharpness(all_widths, scaled=False, generator=g)
    scaled = softmax_sharpness(all_widths, scaled=True, generator=g)
    fig = Figure(figsize=(10.0, 3.8), layout="constrained")
    ax_var, ax_sharp = fig.subplots(1, 2)
    plotting.variance_errorbars(table, ax_var)
    plotting.sharpness_curves(unscaled, scaled, ax_sharp)
    fig.suptitle("Var(q·k) = d_k, so unscaled softmax rows saturate as d_k grows (C05, C06)")
    return fig
