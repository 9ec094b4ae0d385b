"""Key picture of notebook 00: Nadaraya–Watson kernel regression as attention pooling (C22)."""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.core.pooling import toy_function, toy_regression_data
from attnlib.core.scoring import nadaraya_watson
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["kernel_regression_figure"]


@register_figure("kernel_regression", formats=("png", "svg"))
def kernel_regression_figure(
    n_train: int = 40, bandwidths=(0.05, 0.2, 1.0), heatmap_bandwidth: float = 0.2, seed: int = 0
):
    """The key picture: fits for several kernel widths, and the weight matrix of one of them.

    Args:
        n_train: number of training points.
        bandwidths: kernel widths σ whose fits are drawn.
        heatmap_bandwidth: the width whose weights ``(G, S)`` are shown.
        seed: seed of a private CPU generator for the data (the global one is left alone).

    Returns:
        The matplotlib ``Figure``.
    """
    from matplotlib.figure import Figure

    g = torch.Generator().manual_seed(seed)
    x_train, y_train = toy_regression_data(n_train, generator=g, dtype=torch.float64)
    grid = torch.linspace(0.0, 5.0, 101, dtype=torch.float64)  # (G,)
    fits = {
        f"σ = {s:g}": nadaraya_watson(grid, x_train, y_train, bandwidth=s)[0] for s in bandwidths
    }
    _fit, weights = nadaraya_watson(grid, x_train, y_train, bandwidth=heatmap_bandwidth)  # (G, S)
    fig = Figure(figsize=(10.0, 3.6), layout="constrained")
    plotting.kernel_regression_panels(
        x_train,
        y_train,
        grid,
        fits,
        weights,
        fig.subplots(1, 2),
        y_true=toy_function(grid),
        weights_title=_("weights α(x, x_i), σ = {sigma:g}", sigma=heatmap_bandwidth),
    )
    fig.suptitle(_("Attention pooling: f(x) = Σ softmax_i(−(x − x_i)² / 2σ²) y_i"))
    return fig
