"""Key picture of notebook 04: the worked example [log 3, 0] → [3/4, 1/4] → [1.5, 1] and the
2-D example (C09, C26)."""

from __future__ import annotations

import math

import torch

from attnlib import plotting
from attnlib.core.attention import dot_product_attention
from attnlib.core.softmax import masked_softmax
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["worked_example_figure"]


@register_figure("worked_example", formats=("png", "svg"))
def worked_example_figure():
    """The key picture: [log 3, 0] mixing [2, 0] and [0, 4] into [1.5, 1], and the 2-D
    example's weights."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 4.2), layout="constrained")
    ax_seg, ax_bars = fig.subplots(1, 2, width_ratios=[1.2, 1.0])
    z = torch.tensor([math.log(3.0), 0.0], dtype=torch.float64)  # (S=2,)
    values = torch.tensor([[2.0, 0.0], [0.0, 4.0]], dtype=torch.float64)  # (S=2, Dv=2)
    a = masked_softmax(z)  # (2,)
    plotting.mixing_segment(z, a, a @ values, values, ax_seg)
    ax_seg.set_title(_("scores (log 3 ≈ 1.10, 0) → weights (0.75, 0.25)"))
    q = torch.tensor([[1.0, 2.0], [1.0, 1.0]], dtype=torch.float64)  # (L=2, d_k=2)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # (S=2, d_k=2)
    _out, weights = dot_product_attention(q, k, k)  # values unused here: only the weights are drawn
    plotting.two_query_weights(
        weights,
        ax_bars,
        query_labels=("q1 = (1, 2)", "q2 = (1, 1)"),
        key_labels=("k1 = (1, 0)", "k2 = (0, 1)"),
    )
    ax_bars.set_title(_("softmax(q·k / √2) for the 2-D example"))
    fig.suptitle(_("Weights mix the values: the output lies between them"))
    return fig
