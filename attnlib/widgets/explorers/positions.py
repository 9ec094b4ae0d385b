"""The positions explorer: an offset k turns every (sin, cos) pair of the sinusoidal encoding.

Teaches C31 (the table PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i)) and C32 (for
every frequency, moving from pos to pos + k rotates the pair by the angle w_i k, whatever pos
is). Sliders pick the position, the offset, the frequency index and the wavelength base. The
unit circle shows the two points of one pair; the bars show the angle w_i k of *every* pair (the
offset's fingerprint); the curve PE(pos)·PE(pos + k) = Σ_i cos(w_i k) depends on k only, so the
dots read from the table at the current pos stay on it while pos moves (平移不变).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlib.core.positional import (
    offset_rotation,
    sinusoidal_encoding,
    sinusoidal_frequencies,
    sinusoidal_pair,
)
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Arrows, Bars, Heatmap, Line, Points, Text
from attnlib.widgets.framework.controls import int_slider, selection_slider
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells

__all__ = ["positions_explorer", "BASES"]


def _signed(x: float) -> str:
    """``x`` to 2 decimals with its sign, never ``-0.00`` (a rounded zero is ``+0.00``)."""
    return f"{round(x, 2) + 0.0:+.2f}"


#: The wavelength bases the base slider offers (10000 is the original Transformer's).
BASES = (100, 1000, 10000, 100000)


@builder(N_("positions"))
def positions_explorer(
    *,
    d_model: int = 16,
    num_positions: int = 64,
    pos: int = 3,
    offset: int = 5,
    freq: int = 1,
    base: float = 10000,
) -> Explorer:
    """Sliders for the position, the offset k, the frequency index i and the base of the encoding.

    Args:
        d_model: D (even, 4..64); there are D/2 frequencies.
        num_positions: rows of the table drawn (16..256); pos and pos + k stay inside it.
        pos: starting position.
        offset: starting offset k.
        freq: starting frequency index i (0 = fastest).
        base: starting wavelength base, one of :data:`BASES`.

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``pos``, ``k``,
        ``i``, ``base`` and a readout of w_i, its wavelength, the angle w_i k, the matrix R(k), the
        pairs at pos and pos + k, and the dot product PE(pos)·PE(pos + k) beside its closed form Σ_i
        cos(w_i k).
    """
    max_k, max_pos = _check_arguments(d_model, num_positions, pos, offset, freq, base)
    base = int(base)
    half = d_model // 2
    tables = {
        b: sinusoidal_encoding(num_positions, d_model, base=float(b), dtype=torch.float64)
        for b in BASES
    }
    omegas = {
        b: sinusoidal_frequencies(d_model, base=float(b), dtype=torch.float64) for b in BASES
    }  # (D/2,)
    all_pos = torch.arange(num_positions)
    ks = torch.arange(max_k + 1, dtype=torch.float64)  # (K,)
    closed = {
        b: torch.cos(ks[:, None] * omegas[b][None]).sum(-1) for b in BASES
    }  # (K,): Σ_i cos(w_i k)

    def compute(pos, k, i, base):
        pos, k, i, b = int(pos), int(k), int(i), int(base)
        pe, w_all = tables[b], omegas[b]
        w = w_all[i]
        p0, p1 = (
            pe[pos, 2 * i : 2 * i + 2],
            pe[pos + k, 2 * i : 2 * i + 2],
        )  # (2,), (2,) read from the table
        r = offset_rotation(float(k), float(w))  # (2, 2)
        moved = r @ p0  # (2,)
        origin = torch.zeros(2, dtype=torch.float64)
        dots = pe[pos : pos + max_k + 1] @ pe[pos]  # (K,): PE(pos)·PE(pos + k') for every k'
        angles = torch.remainder(w_all * k, 2 * math.pi)  # (D/2,)
        c, s = float(r[0, 0]), float(r[0, 1])
        band = [
            [2 * i - 0.5, -0.5],
            [2 * i + 1.5, -0.5],
            [2 * i + 1.5, num_positions - 0.5],
            [2 * i - 0.5, num_positions - 0.5],
            [2 * i - 0.5, -0.5],
        ]
        return Frame(
            arrays={
                "trail": sinusoidal_pair(all_pos, w),  # (P, 2)
                "arm0": torch.stack([origin, p0])[None],
                "arm1": torch.stack([origin, p1])[None],
                "p0": p0[None],
                "p1": p1[None],
                "moved": moved[None],
                "table": pe,
                "band": band,
                "row0": [[-0.5, pos], [d_model - 0.5, pos]],
                "row1": [[-0.5, pos + k], [d_model - 0.5, pos + k]],
                "angles": angles,
                "angle_mark": [[i, float(angles[i])]],
                "curve": torch.stack([ks, closed[b]], 1),
                "dots": torch.stack([ks, dots], 1),
                "dot_mark": [[k, float(dots[k])]],
            },
            readout={
                "w_i": float(w),
                N_("wavelength 2π / w_i"): 2 * math.pi / float(w),
                N_("angle w_i k (rad, not reduced mod 2π)"): float(w) * k,
                N_("angle w_i k mod 2π (as plotted)"): (float(w) * k) % (2 * math.pi),
                N_("R(k), clockwise by w_i k"): r,
                N_("pair at pos"): p0,
                N_("R(k) @ pair at pos"): moved,
                N_("pair at pos + k"): p1,
                "PE(pos)·PE(pos + k)": float(dots[k]),
                "Σ_i cos(w_i k)": float(closed[b][k]),
            },
            texts={"matrix": "R(k) = [[{} {}], [{} {}]]".format(*map(_signed, (c, s, -s, c)))},
        )

    scene = _scene(num_positions, d_model, max_k)
    controls = {
        "pos": int_slider(_("position pos"), 0, max_pos, pos, width="205px"),
        "k": int_slider(_("offset k"), 0, max_k, offset, width="205px"),
        "i": int_slider(_("frequency index i"), 0, half - 1, freq, width="205px"),
        "base": selection_slider(_("base"), BASES, base, width="205px"),
    }
    data = {"pe": tables[base], "omegas": omegas[base]}  # the starting table, for tests
    return Explorer(
        controls,
        compute,
        scene,
        columns=["sin", "cos"],
        digits=4,
        data=data,
    )


def _check_arguments(d_model, num_positions, pos, offset, freq, base) -> tuple[int, int]:
    """Raise on a bad argument; return the largest offset and starting position."""
    if not isinstance(d_model, int) or d_model % 2 or not 4 <= d_model <= 64:
        raise ValueError(f"d_model must be an even int in [4, 64], got {d_model!r}")
    if not isinstance(num_positions, int) or not 16 <= num_positions <= 256:
        raise ValueError(f"num_positions must be an int in [16, 256], got {num_positions!r}")
    max_k = num_positions // 2
    max_pos = num_positions - 1 - max_k
    if not 0 <= pos <= max_pos or not 0 <= offset <= max_k:
        raise ValueError(
            f"pos must be in [0, {max_pos}] and offset in [0, {max_k}], "
            f"got pos={pos}, offset={offset}"
        )
    if not 0 <= freq < d_model // 2:
        raise ValueError(f"freq must be in [0, {d_model // 2 - 1}], got {freq}")
    if base not in BASES:
        raise ValueError(f"base must be one of {BASES}, got {base!r}")
    return max_k, max_pos


def _scene(num_positions: int, d_model: int, max_k: int) -> Scene:
    """The pair on the unit circle, the table, the angles and the dot products."""
    half = d_model // 2
    theta = np.linspace(0, 2 * np.pi, 181)
    circle = Panel(
        [
            Line(np.stack([np.sin(theta), np.cos(theta)], 1), color="0.8", width=1),
            Points("trail", color="0.6", size=2.5, label=_("every pos")),
            Arrows("arm0", color="C0", width=2),
            Arrows("arm1", color="C3", width=2),
            Points("p0", color="C0", size=6, label=_("pair at pos")),
            Points("p1", color="C3", size=6, label=_("pair at pos + k")),
            Points("moved", color="black", size=10, filled=False, label=_("R(k) · pair at pos")),
            Text(0.02, 0.04, key="matrix", axes=True, size=8),
        ],
        # room right of the circle for the whole legend (about 2.4 units wide in matplotlib's 7 pt
        # and the browser's 10 px font), so it covers no point of the circle; the panel's height,
        # not its width, sets the scale, so the circle keeps its size
        xlim=(-1.35, 4.0),
        ylim=(-1.35, 1.35),
        xticks=[-1.0, 0.0, 1.0],
        yticks=[-1.0, 0.0, 1.0],
        equal=True,
        title=_("pair i on the unit circle"),
        xlabel=_("sin(w_i pos), column 2i"),
        ylabel=_("cos(w_i pos), column 2i+1"),
        legend="upper right",
    )
    ticks = sorted(
        {0, num_positions // 4, num_positions // 2, 3 * num_positions // 4, num_positions - 1}
    )
    grid = cells(num_positions, d_model)
    grid.update(yticks=ticks, yticklabels=[str(t) for t in ticks])
    table = Panel(
        [
            Heatmap("table", vmin=-1.0, vmax=1.0, cmap="cividis", colorbar=True),
            Line("band", color="black", width=2),
            Line("row0", color="C0", width=2),
            Line("row1", color="C3", width=2),
        ],
        title=_("PE[pos, column]: rows pos, pos + k"),
        xlabel=_("column (2i: sin, 2i+1: cos)"),
        ylabel=_("position"),
        **grid,
    )
    fingerprint = Panel(
        [Bars("angles", color="C0"), Points("angle_mark", color="C3", size=6)],
        xlim=(-0.6, half - 0.4),
        ylim=(-0.3, 2 * math.pi),  # a mark at angle 0 drawn whole
        title=_("angle w_i·k mod 2π of every pair"),
        xlabel=_("frequency index i"),
        ylabel=_("angle (rad)"),
        xticks=list(range(half)),
        xticklabels=[str(j) for j in range(half)],
        yticks=[0.0, math.pi, 2 * math.pi],
        yticklabels=["0", "π", "2π"],
    )
    similarity = Panel(
        [
            Line("curve", color="0.5", width=1.5, label="Σ_i cos(w_i k)"),
            Points("dots", color="C0", size=3.5, label="PE(pos)·PE(pos + k)"),
            Points("dot_mark", color="C3", size=7),
        ],
        xlim=(-1.0, max_k + 0.5),  # the k = 0 dot drawn whole
        ylim=(-0.62 * d_model, 0.62 * d_model),  # a mark at d_model / 2 drawn whole
        title=_("PE(pos)·PE(pos + k): depends on k only"),
        xlabel=_("offset k"),
        ylabel=_("dot product"),
        legend="lower right",
    )
    # Within the notebook's width and short enough that controls, picture and the readout below
    # it fit 620 px (a 1280 x 720 browser, issue 16); narrow enough that the site's wider page
    # puts the readout beside it; the top row taller, for the circle.
    scene = Scene(
        [circle, table, fingerprint, similarity],
        cols=2,
        width=770,
        height=380,
        row_heights=[1.3, 1.0],
    )
    return scene
