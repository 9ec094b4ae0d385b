"""Key picture of notebook 02: Var(q·k) grows like d_k, and unscaled softmax rows saturate
(claims C05, C06)."""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.course.scaling import dot_product_variance, softmax_sharpness
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["scaling_variance_figure"]


@register_figure("scaling_variance", formats=("png", "svg"))
def scaling_variance_figure(seed: int = 0):
    """The key picture: the variance experiment next to the sharpness curves (private generators).

    The raw and scaled sharpness curves use the same random draws (two generators with one seed),
    so they coincide at d_k = 1, where the scale is 1.
    """
    from matplotlib.figure import Figure

    widths = [1, 4, 16, 64, 256, 1024]
    table = dot_product_variance(widths, 10_000, generator=torch.Generator().manual_seed(seed))
    all_widths = [2**e for e in range(11)]
    same_draws = [torch.Generator().manual_seed(seed) for _ in range(2)]  # common random numbers
    unscaled = softmax_sharpness(all_widths, scaled=False, generator=same_draws[0])
    scaled = softmax_sharpness(all_widths, scaled=True, generator=same_draws[1])
    fig = Figure(figsize=(13.0, 3.8), layout="constrained")
    ax_var, ax_ent, ax_max = fig.subplots(1, 3)
    plotting.variance_errorbars(table, ax_var)
    plotting.sharpness_curves(unscaled, scaled, [ax_ent, ax_max])
    fig.suptitle(
        _("Var(q·k) = d_k, so without the 1/√d_k scale softmax rows saturate as d_k grows")
    )
    return fig
