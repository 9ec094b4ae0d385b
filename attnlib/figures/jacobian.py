"""Key picture of notebook 03: the softmax Jacobian diag(a) − a aᵀ fades as the row saturates
(C13, C14)."""

from __future__ import annotations

from attnlib import plotting
from attnlib.course.examples import DEFAULT_LOGITS
from attnlib.course.scaling import spread_jacobians
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["softmax_jacobian_figure"]


@register_figure("softmax_jacobian", formats=("png", "svg"))
def softmax_jacobian_figure():
    """The key picture: J for a soft, a peaked and a saturated row of the same five logits."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 3.6), layout="constrained")
    plotting.jacobian_panels(spread_jacobians(DEFAULT_LOGITS, [0.5, 2.0, 6.0]), fig.subplots(1, 3))
    fig.suptitle(
        _("Softmax Jacobian J = diag(a) − a aᵀ: rows sum to 0, and it fades as the row saturates")
    )
    return fig
