"""Key picture of notebook 05: a padding mask and a causal mask combine, and hidden cells get
weight 0 (C37, C11).
"""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.core.attention import dot_product_attention
from attnlib.core.masks import causal_mask, padding_mask
from attnlib.course.examples import demo_batch
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["masking_combined_figure"]

#: Tokens per row and the valid length of the row drawn.
NUM_TOKENS, VALID_LEN = 6, 4


def _hatched_heatmap(ax, values, visible, **kwargs):
    """A (query, key) heatmap with the hidden cells (``visible`` False) hatched on top."""
    n_q, n_k = visible.shape[-2:]
    plotting.heatmap(
        values,
        ax=ax,
        vmin=kwargs.pop("vmin", 0.0),
        vmax=1.0,
        xlabel=_("key j"),
        ylabel=_("query i"),
        **kwargs,
    )
    ax.imshow(
        plotting.hatch_overlay(visible),
        extent=(-0.5, n_k - 0.5, n_q - 0.5, -0.5),
        interpolation="nearest",
        aspect="auto",
        zorder=3,
    )


@register_figure("masking_combined", formats=("png", "svg"))
def masking_combined_figure(fig=None):
    """Padding mask, causal mask, their AND, and the weights under it (hidden cells hatched).

    Args:
        fig: an empty figure to draw into (e.g. ``plt.figure(...)`` in a notebook); None makes one.

    Returns:
        The matplotlib ``Figure``.
    """
    from matplotlib.figure import Figure

    L = NUM_TOKENS
    demo = demo_batch(batch=1, num_tokens=L)  # q (1, L, Dk), k (1, S, Dk), v (1, S, Dv)
    lens = torch.tensor([VALID_LEN])
    pad = padding_mask(lens, L).expand(L, L)  # (L, S): the same keys hidden for every query
    causal = causal_mask(L)  # (L, S)
    both = pad & causal  # (L, S)
    _out, w = dot_product_attention(
        demo.q, demo.k, demo.v, valid_lens=lens, is_causal=True
    )  # (1, L, S)

    if fig is None:
        fig = Figure(figsize=(12.0, 3.3), layout="constrained")
    axes = fig.subplots(1, 4)
    panels = [
        (pad, _("padding mask (valid_len = {n})", n=VALID_LEN)),
        (causal, _("causal mask (j ≤ i)")),
        (both, _("padding AND causal")),
    ]
    for ax, (m, title) in zip(axes, panels):
        _hatched_heatmap(ax, m.double(), m, cmap="Greys_r", vmin=-0.3, colorbar=False, title=title)
        plotting.cell_labels(ax, m.double(), fmt="{:.0f}", threshold=0.5)
    ax = axes[3]
    _hatched_heatmap(ax, w[0], both, mask=both, title=_("weights (hidden: hatched)"))
    plotting.cell_labels(
        ax, plotting.masked(w[0], both).filled(float("nan")), fmt="{:.2f}", fontsize=7
    )
    fig.suptitle(
        _(
            "True = may attend. Query i sees key j only if j is a real token AND j ≤ i; "
            "every visible row sums to 1"
        )
    )
    return fig
