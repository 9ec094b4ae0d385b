"""Key picture of notebook 03: the softmax Jacobian diag(a) − a aᵀ fades as the row saturates (C13, C14)."""

from __future__ import annotations

from typing import Sequence

from attnlib import plotting
from attnlib.figures import register_figure

__all__ = ["jacobian_panels", "softmax_jacobian_figure"]

_CLIM = 0.25  # every entry of a softmax Jacobian lies in [-1/4, 1/4]


def jacobian_panels(logits, spreads: Sequence[float], axes=None):
    """Draw the Jacobian of softmax(σ · z) for several spreads σ, on one colour scale.

    The logits are first rescaled to mean 0 and standard deviation σ
    (:func:`attnlib.statistics.spread_logits`).

    Args:
        logits: ``(S,)`` base logits (not all equal).
        spreads: the spreads σ, one panel each.
        axes: as many axes as spreads (None: a new pyplot figure).

    Returns:
        ``list[AxesImage]``, one per panel.
    """
    import torch

    from attnlib.softmax import masked_softmax, softmax_jacobian
    from attnlib.statistics import jacobian_norm, spread_logits

    z0 = torch.as_tensor(logits, dtype=torch.float64)
    spreads = list(spreads)
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, len(spreads), figsize=(3.3 * len(spreads), 3.2), layout="constrained")
    if len(axes) != len(spreads):
        raise ValueError(f"axes has {len(axes)} entries but spreads has {len(spreads)}")
    S = z0.shape[-1]
    labels = [f"z{j + 1}" for j in range(S)]
    images = []
    for i, (ax, sigma) in enumerate(zip(axes, spreads)):
        a = masked_softmax(spread_logits(z0, float(sigma)))  # (S,)
        jac = softmax_jacobian(a)  # (S, S)
        title = f"σ = {sigma:g}: max a = {float(a.max()):.2f}, ‖J‖ = {float(jacobian_norm(a)):.3f}"
        im = plotting.heatmap(jac, ax=ax, row_labels=[f"a{j + 1}" for j in range(S)], col_labels=labels,
                              title=title, xlabel="∂ / ∂z_r", ylabel="a_j" if i == 0 else "",
                              cmap="RdBu_r", vmin=-_CLIM, vmax=_CLIM, colorbar=i == len(spreads) - 1)
        plotting.cell_labels(ax, torch.round(jac, decimals=2) + 0.0, "{:.2f}", fontsize=7,
                            threshold=-1.0)  # + 0.0: no "-0.00"
        images.append(im)
    return images


@register_figure("softmax_jacobian", formats=("png", "svg"))
def softmax_jacobian_figure():
    """The key picture: J for a soft, a peaked and a saturated row of the same five logits."""
    from matplotlib.figure import Figure

    from attnlib.widgets.jacobian import DEFAULT_LOGITS

    fig = Figure(figsize=(11.0, 3.6), layout="constrained")
    jacobian_panels(DEFAULT_LOGITS, [0.5, 2.0, 6.0], fig.subplots(1, 3))
    fig.suptitle("Softmax Jacobian J = diag(a) − a aᵀ: rows sum to 0, and it fades as the row saturates "
                 "(C13, C14)")
    return fig
