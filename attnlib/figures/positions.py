"""Key picture of notebook 07: the sinusoidal table, its columns' periods, and an offset as a
rotation (C31, C32).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.core.positional import (
    offset_rotation,
    sinusoidal_encoding,
    sinusoidal_frequencies,
    sinusoidal_pair,
)
from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["positions_rotation_figure"]

D_MODEL, NUM_POSITIONS = 16, 64
#: The frequency index, the offset and the starting positions drawn on the circle.
FREQ, OFFSET, STARTS = 2, 5, (0, 9, 23, 40)


@register_figure("positions_rotation", formats=("png", "svg"))
def positions_rotation_figure(fig=None):
    """PE table, a few columns as curves, and pos -> pos + k on the unit circle for several pos.

    Args:
        fig: an empty figure to draw into (e.g. ``plt.figure(...)`` in a notebook); None makes one.

    Returns:
        The matplotlib ``Figure``.
    """
    from matplotlib.figure import Figure

    pe = sinusoidal_encoding(NUM_POSITIONS, D_MODEL, dtype=torch.float64)  # (P, D)
    w = float(sinusoidal_frequencies(D_MODEL, dtype=torch.float64)[FREQ])
    if fig is None:
        fig = Figure(figsize=(13.0, 3.8), layout="constrained")
    ax_t, ax_c, ax_r = fig.subplots(1, 3, width_ratios=[1.1, 1.3, 1.0])
    plotting.heatmap(
        pe,
        ax=ax_t,
        cmap="cividis",
        vmin=-1.0,
        vmax=1.0,
        title=_("PE[pos, column]"),
        xlabel=_("column (even: sin, odd: cos)"),
        ylabel=_("position pos"),
    )
    # The sines are defined for every real pos; the table holds only the integer samples (dots).
    # Joining the dots of the fast column i = 0 (period 2π ≈ 6.3 positions) would draw a zigzag.
    dense = torch.linspace(0.0, NUM_POSITIONS - 1, 8 * (NUM_POSITIONS - 1) + 1, dtype=torch.float64)
    omegas = sinusoidal_frequencies(D_MODEL, dtype=torch.float64)
    pos = torch.arange(NUM_POSITIONS)
    for n, c in enumerate((0, 2, 4, 6)):
        ax_c.plot(
            dense.numpy(),
            torch.sin(dense * omegas[c // 2]).numpy(),
            color=f"C{n}",
            linewidth=1.0,
            label=_("column {c} (i = {i})", c=c, i=c // 2),
        )
        ax_c.plot(pos.numpy(), pe[:, c].numpy(), "o", color=f"C{n}", markersize=2.5)
    ax_c.set_title(_("sine columns, each i its own period (dots: integer pos)"), fontsize=9)
    ax_c.set_xlabel(_("position pos"))
    ax_c.set_ylabel(_("PE value"))
    ax_c.legend(fontsize=7, loc="lower left")
    theta = np.linspace(0, 2 * np.pi, 200)
    ax_r.plot(np.sin(theta), np.cos(theta), color="0.8", linewidth=1)
    r = offset_rotation(float(OFFSET), w)  # (2, 2)
    for n, p in enumerate(STARTS):
        a, b = sinusoidal_pair(p, w), sinusoidal_pair(p + OFFSET, w)  # (2,), (2,)
        moved = r @ a
        ax_r.annotate(
            "",
            xy=tuple(b.tolist()),
            xytext=tuple(a.tolist()),
            arrowprops=dict(arrowstyle="->", color=f"C{n}", connectionstyle="arc3,rad=-0.25"),
        )
        ax_r.scatter(*a.tolist(), color=f"C{n}", s=25, zorder=3)
        ax_r.scatter(*moved.tolist(), facecolors="none", edgecolors="black", s=80, zorder=4)
        ax_r.annotate(
            f"{p}→{p + OFFSET}",
            tuple(a.tolist()),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=8,
            color=f"C{n}",
        )
    ax_r.set_aspect("equal", adjustable="box")
    ax_r.set_xlim(-1.3, 1.3)
    ax_r.set_ylim(-1.3, 1.3)
    ax_r.set_xlabel(_("sin(w pos)  (column {c})", c=2 * FREQ))
    ax_r.set_ylabel(_("cos(w pos)  (column {c})", c=2 * FREQ + 1))
    # two lines: on one, the title is wider than the square axes and is clipped at the right edge
    ax_r.set_title(
        _(
            "d = {d}, i = {i}, k = {k}:\neach arrow turns {turn:.2f} rad clockwise",
            d=D_MODEL,
            i=FREQ,
            k=OFFSET,
            turn=w * OFFSET,
        ),
        fontsize=9,
    )
    fig.suptitle(
        _(
            "Sinusoidal positions: an offset k is the same 2×2 rotation R(k) at every position "
            "(circles: R(k) applied to the start)"
        )
    )
    return fig
