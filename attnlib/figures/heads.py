"""Key picture of notebook 06: four heads attend differently; one wide head gives a single map
(C28, C17).
"""

from __future__ import annotations

from attnlib import plotting
from attnlib.core.multihead import head_weight_maps
from attnlib.course.examples import DEFAULT_TOKENS, demo_projections
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["heads_weight_maps_figure"]

#: Number of heads in the multi-head panels.
NUM_HEADS = 4


@register_figure("heads_weight_maps", formats=("png", "svg"))
def heads_weight_maps_figure(fig=None):
    """The heads explorer's sentence: one wide head (h = 1) next to the 4 heads of the same
    projections.

    Args:
        fig: an empty figure to draw into (e.g. ``plt.figure(...)`` in a notebook); None makes one.

    Returns:
        The matplotlib ``Figure``.
    """
    from matplotlib.figure import Figure

    tokens = list(DEFAULT_TOKENS)
    data = demo_projections(tokens)
    d_model = data.x.shape[-1]
    wide = head_weight_maps(data.x, data.w_q, data.w_k, 1)[0]  # (L, S)
    heads = head_weight_maps(data.x, data.w_q, data.w_k, NUM_HEADS)  # (H, L, S)
    if fig is None:
        fig = Figure(figsize=(14.0, 3.3), layout="constrained")
    axes = fig.subplots(1, NUM_HEADS + 1)
    plotting.heatmap(
        wide,
        ax=axes[0],
        row_labels=tokens,
        col_labels=tokens,
        vmin=0.0,
        vmax=1.0,
        colorbar=False,
        title=_("one wide head (Dh = {Dh})", Dh=d_model),
        xlabel=_("key"),
        ylabel=_("query"),
    )
    for r in range(NUM_HEADS):
        plotting.heatmap(
            heads[r],
            ax=axes[r + 1],
            row_labels=tokens,
            col_labels=tokens,
            vmin=0.0,
            vmax=1.0,
            colorbar=(r == NUM_HEADS - 1),
            title=_("head {r} of {H} (Dh = {Dh})", r=r + 1, H=NUM_HEADS, Dh=d_model // NUM_HEADS),
            xlabel=_("key"),
            ylabel="",
        )
    fig.suptitle(
        _(
            "Same W_Q, W_K cut into {H} heads: each head has its own map per query; "
            "one wide head has one. Both 'the' rows match: no positions yet.",
            H=NUM_HEADS,
        )
    )
    return fig
