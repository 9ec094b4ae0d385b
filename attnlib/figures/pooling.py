"""Key picture of notebook 00: Nadaraya–Watson kernel regression as attention pooling (C22)."""

from __future__ import annotations

from typing import Mapping

from attnlib import plotting
from attnlib.figures import register_figure

__all__ = ["kernel_regression_panels", "kernel_regression_figure"]


def kernel_regression_panels(x_train, y_train, grid, fits: Mapping[str, object], weights,
                             axes=None, *, y_true=None, weights_title: str = "weights α(x, x_i)"):
    """Draw fitted curves over the data (left) and the weight matrix of one fit (right).

    Args:
        x_train, y_train: ``(S,)`` training inputs (keys, sorted) and targets (values).
        grid: ``(G,)`` query positions where the curves are evaluated.
        fits: ``label -> (G,)`` fitted curves, e.g. one per kernel width.
        weights: ``(G, S)`` weights of one fit: row = query on the grid, column = key.
        axes: two axes (None: a new pyplot figure).
        y_true: optional ``(G,)`` noiseless function, drawn dashed.
        weights_title: title of the right panel.

    Returns:
        ``(lines, image)``: the fitted curves' ``Line2D`` list and the weights' ``AxesImage``.
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(10.0, 3.6), layout="constrained")
    if len(axes) != 2:
        raise ValueError(f"axes must hold 2 axes, got {len(axes)}")
    ax_fit, ax_w = axes
    x, y, g = plotting.to_numpy(x_train), plotting.to_numpy(y_train), plotting.to_numpy(grid)
    if y_true is not None:
        ax_fit.plot(g, plotting.to_numpy(y_true), "--", color="0.5", label="true function")
    ax_fit.scatter(x, y, s=14, color="C0", alpha=0.7, label="training points")
    styles = [f"C{i + 1}-" for i in range(len(fits))]  # C0 is the data's colour
    lines = plotting.curves(g, dict(fits), ax=ax_fit, xlabel="x", ylabel="y", styles=styles,
                            title="Nadaraya–Watson fits for several kernel widths h")
    ax_fit.legend(fontsize="x-small")
    w = plotting.to_numpy(weights)
    im = plotting.heatmap(w, ax=ax_w, title=weights_title, xlabel="key i (training points, by x_i)",
                          ylabel="query (grid point)", colorbar_label="weight")
    return lines, im


@register_figure("kernel_regression", formats=("png", "svg"))
def kernel_regression_figure(n_train: int = 40, bandwidths=(0.05, 0.2, 1.0), heatmap_bandwidth: float = 0.2,
                             seed: int = 0):
    """The key picture: fits for several kernel widths, and the weight matrix of one of them.

    Args:
        n_train: number of training points.
        bandwidths: kernel widths whose fits are drawn.
        heatmap_bandwidth: the width whose weights ``(G, S)`` are shown.
        seed: seed of a private CPU generator for the data (the global one is left alone).

    Returns:
        The matplotlib ``Figure``.
    """
    import torch
    from matplotlib.figure import Figure

    from attnlib import nadaraya_watson
    from attnlib.pooling import toy_function, toy_regression_data

    g = torch.Generator().manual_seed(seed)
    x_train, y_train = toy_regression_data(n_train, generator=g, dtype=torch.float64)
    grid = torch.linspace(0.0, 5.0, 101, dtype=torch.float64)
    fits = {f"h = {h:g}": nadaraya_watson(grid, x_train, y_train, bandwidth=h)[0] for h in bandwidths}
    _, weights = nadaraya_watson(grid, x_train, y_train, bandwidth=heatmap_bandwidth)  # (G, S)
    fig = Figure(figsize=(10.0, 3.6), layout="constrained")
    kernel_regression_panels(x_train, y_train, grid, fits, weights, fig.subplots(1, 2),
                             y_true=toy_function(grid),
                             weights_title=f"weights α(x, x_i), h = {heatmap_bandwidth:g}")
    fig.suptitle("Attention pooling: f(x) = Σ softmax_i(−(x − x_i)² / 2h²) y_i")
    return fig
