"""Key picture of the query explorer: as the query moves, the output moves inside the values' hull
(C19, C07).
"""

from __future__ import annotations

import math

import torch

from attnlib import plotting
from attnlib.core.attention import dot_product_attention
from attnlib.course.examples import DEFAULT_KEYS, DEFAULT_VALUES
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["query_output_hull_figure"]

#: The three query positions shown, one per panel.
QUERIES = ((1.0, 2.0), (-2.0, -0.5), (2.5, -1.5))


@register_figure("query_output_hull", formats=("png", "svg"))
def query_output_hull_figure():
    """Three positions of a 2-D query over the query explorer's keys and values.

    Each panel shows the keys, the values and their convex hull, the query, and the output
    softmax(q·K/√2)V with lines to each value as thick as its weight; the title gives the weights.

    Returns:
        The matplotlib ``Figure``.
    """
    from matplotlib.figure import Figure

    k = torch.tensor(DEFAULT_KEYS, dtype=torch.float64)  # (S, 2)
    v = torch.tensor(DEFAULT_VALUES, dtype=torch.float64)  # (S, 2)
    fig = Figure(figsize=(10.5, 3.9), layout="constrained")
    axes = fig.subplots(1, len(QUERIES))
    for ax, (x, y) in zip(axes, QUERIES):
        q = torch.tensor([[x, y]], dtype=torch.float64)  # (1, 2)
        out, w = dot_product_attention(q, k, v, scale=1 / math.sqrt(2))  # (1, 2), (1, S)
        weights = ", ".join(f"{float(a):.2f}" for a in w[0])
        plotting.qkv_points(
            q,
            k,
            v,
            out,
            ax=ax,
            weights=w[0],
            lim=3.2,
            title=_("q = ({x:g}, {y:g}): weights ({weights})", x=x, y=y, weights=weights),
        )
        ax.title.set_fontsize(9)
    fig.suptitle(_("The output (★) is a weighted mean of the values: it stays inside their hull"))
    return fig
