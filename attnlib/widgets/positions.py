"""The positions explorer: an offset k turns each (sin, cos) pair of the sinusoidal encoding.

Teaches C31 (the table PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i)) and C32 (for
every frequency, moving from pos to pos + k rotates the pair by the angle w_i k, whatever pos
is). Sliders pick the position, the offset and the frequency index; the unit circle shows the
two points and the 2x2 matrix, the table shows which rows and columns they come from.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.positional import (offset_rotation, sinusoidal_encoding, sinusoidal_frequencies,
                                sinusoidal_pair)
from attnlib.widgets.base import Explorer, int_slider, new_figure, register

__all__ = ["positions_explorer"]


@register("positions")
def positions_explorer(*, d_model: int = 16, num_positions: int = 64, pos: int = 3, offset: int = 5,
                       freq: int = 1, base: float = 10000.0) -> Explorer:
    """Sliders for the position, the offset k and the frequency index i of the sinusoidal encoding.

    Args:
        d_model: D (even, 4..64); there are D/2 frequencies.
        num_positions: rows of the table drawn (16..256); pos and pos + k stay inside it.
        pos: starting position.
        offset: starting offset k.
        freq: starting frequency index i (0 = fastest).
        base: the wavelength base.

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``pos``, ``k``, ``i`` and a readout
        of w_i, the angle w_i k, the matrix R(k), the pair at pos, R(k) times it, the pair at
        pos + k and the difference of the last two.
    """
    if d_model % 2 or not 4 <= d_model <= 64:
        raise ValueError(f"d_model must be even and in [4, 64], got {d_model}")
    if not 16 <= num_positions <= 256:
        raise ValueError(f"num_positions must be in [16, 256], got {num_positions}")
    max_k = num_positions // 2
    max_pos = num_positions - 1 - max_k
    if not 0 <= pos <= max_pos or not 0 <= offset <= max_k:
        raise ValueError(f"pos must be in [0, {max_pos}] and offset in [0, {max_k}], got {pos}, {offset}")
    if not 0 <= freq < d_model // 2:
        raise ValueError(f"freq must be in [0, {d_model // 2 - 1}], got {freq}")
    pe = sinusoidal_encoding(num_positions, d_model, base=base, dtype=torch.float64)  # (P, D)
    omegas = sinusoidal_frequencies(d_model, base=base, dtype=torch.float64)  # (D/2,)
    all_pos = torch.arange(num_positions)

    controls = {
        "pos": int_slider("position pos", 0, max_pos, pos, width="230px"),
        "k": int_slider("offset k", 0, max_k, offset, width="230px"),
        "i": int_slider("frequency index i", 0, d_model // 2 - 1, freq, width="230px"),
    }

    fig, (ax_c, ax_t) = new_figure(1, 2, figsize=(8.4, 3.6), width_ratios=[1.0, 1.25])
    theta = np.linspace(0, 2 * np.pi, 200)
    ax_c.plot(np.sin(theta), np.cos(theta), color="0.75", linewidth=1)
    trail = ax_c.scatter(*sinusoidal_pair(all_pos, omegas[freq]).T.numpy(), s=8, color="0.6", zorder=2,
                         label="all positions")
    (arm0,) = ax_c.plot([0, 0], [0, 0], "-", color="C0", linewidth=2)
    (arm1,) = ax_c.plot([0, 0], [0, 0], "-", color="C3", linewidth=2)
    pt0 = ax_c.scatter([0], [0], s=60, color="C0", zorder=4, label="pair at pos")
    pt1 = ax_c.scatter([0], [0], s=60, color="C3", zorder=4, label="pair at pos + k")
    rot = ax_c.scatter([0], [0], s=150, facecolors="none", edgecolors="black", zorder=5,
                       label="R(k) · pair at pos")
    matrix_text = ax_c.text(-1.3, -1.32, "", fontsize=8, family="monospace", va="bottom")
    ax_c.set_xlim(-1.35, 1.35)
    ax_c.set_ylim(-1.35, 1.35)
    ax_c.set_aspect("equal", adjustable="box")
    ax_c.set_xlabel("sin(w_i pos)  (column 2i)")
    ax_c.set_ylabel("cos(w_i pos)  (column 2i+1)")
    ax_c.legend(loc="upper right", fontsize=6, framealpha=0.8)
    ax_c.set_title("unit circle of columns (2i, 2i+1)")

    plotting.heatmap(pe, ax=ax_t, cmap="RdBu_r", vmin=-1.0, vmax=1.0, title="PE[pos, column]",
                     xlabel="column (2i = sin, 2i+1 = cos)", ylabel="position pos", colorbar=True)
    from matplotlib.patches import Rectangle

    band = ax_t.add_patch(Rectangle((2 * freq - 0.5, -0.5), 2.0, num_positions, fill=False,
                                    edgecolor="black", linewidth=1.5))
    line0 = ax_t.axhline(pos, color="C0", linewidth=1.5)
    line1 = ax_t.axhline(pos + offset, color="C3", linewidth=1.5)

    def update(pos, k, i):
        w = omegas[i]
        p0, p1 = sinusoidal_pair(pos, w), sinusoidal_pair(pos + k, w)  # (2,), (2,)
        r = offset_rotation(float(k), float(w))  # (2, 2)
        moved = r @ p0  # (2,)
        trail.set_offsets(sinusoidal_pair(all_pos, w).numpy())
        arm0.set_data([0.0, float(p0[0])], [0.0, float(p0[1])])
        arm1.set_data([0.0, float(p1[0])], [0.0, float(p1[1])])
        pt0.set_offsets(p0.numpy()[None, :])
        pt1.set_offsets(p1.numpy()[None, :])
        rot.set_offsets(moved.numpy()[None, :])
        c, s = float(r[0, 0]), float(r[0, 1])
        matrix_text.set_text(f"R(k) = [[{c:+.2f} {s:+.2f}]\n        [{-s:+.2f} {c:+.2f}]]")
        band.set_x(2 * i - 0.5)
        line0.set_ydata([pos, pos])
        line1.set_ydata([pos + k, pos + k])
        # the table's own entries, to show the pair is read from PE itself
        from_table = pe[pos + k, 2 * i: 2 * i + 2]
        return {
            "w_i": float(w),
            "angle w_i k (rad)": float(w) * k,
            "R(k)": r,
            "pair at pos": p0,
            "R(k) @ pair at pos": moved,
            "PE[pos + k, 2i:2i+2]": from_table,
            "max |R(k) p(pos) - p(pos+k)|": float((moved - from_table).abs().max()),
        }

    ex = Explorer(controls, update, fig, columns=["sin", "cos"], digits=4,
                  dynamic=[band, line0, line1, trail, arm0, arm1, pt0, pt1, rot, matrix_text])
    ex.data = {"pe": pe, "omegas": omegas}  # the table and the frequencies, for tests
    return ex
