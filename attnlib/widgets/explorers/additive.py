"""Explorer for additive attention against a projected dot product (C24).

- :func:`additive_attention_explorer` — a 2-D query against 3-D keys (d_q ≠ d_k), scored two ways:
  additive attention a(q, k) = w_vᵀ tanh(W_q q + W_k k), and a dot product of projections
  (q W_Q)·(k W_K)/√h on the same shapes. The score of one key (chosen in a menu) over the whole
  (q₁, q₂) plane is drawn for both, with contour lines: the projected dot product is a plane in q
  (straight, evenly spaced contours), the additive score is curved (C24).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib.core.additive import AdditiveAttention
from attnlib.core.attention import dot_product_attention
from attnlib.core.scoring import default_scale, scaled_scores
from attnlib.util._checks import check_int
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Bars, Heatmap, Line, Points, Segments, Text
from attnlib.widgets.framework.controls import dropdown, float_slider
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.frames import slider_axis
from attnlib.widgets.framework.scene import Frame, Panel, Scene, bar_slots
from attnlib.widgets.framework.tables import grid_table

__all__ = ["additive_attention_explorer"]


_Q_LIM, _Q_STEP = 3.0, 0.1
_DRAW = 2  # the heatmaps show every 2nd grid point (31 x 31 cells of 0.2): each frame carries them
_TICKS = (-3.0, -1.5, 0.0, 1.5, 3.0)
_CELL = _Q_STEP * _DRAW  # a drawn heatmap cell, in query units


def _contours(z: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Iso-lines of ``z`` ``(n, n)`` (row = q₂ index, column = q₁ index) at ``levels``, in the
    drawn heatmap's cell coordinates (grid index / ``_DRAW``), as segments ``(N, 2, 2)``.

    Every 2nd vertex is kept (and the last), which halves what each frame carries; the lines
    are smooth on this grid, so the picture does not change.
    """
    import contourpy

    gen = contourpy.contour_generator(z=z)
    segs = []
    for lev in levels:
        for line in gen.lines(lev):
            if len(line) < 2:
                continue
            line = np.asarray(line)
            keep = line[sorted({*range(0, len(line), 2), len(line) - 1})] / _DRAW
            segs.append(np.stack([keep[:-1], keep[1:]], 1))
    return np.concatenate(segs) if segs else np.zeros((0, 2, 2))


def _padded(segments: list[np.ndarray], width: float) -> tuple[np.ndarray, np.ndarray]:
    """Pad each key's segments ``(N_j, 2, 2)`` to one length: ``(S, N, 2, 2)`` and widths
    ``(S, N)``, 0 for the padding (every frame of an explorer has the same shapes).
    """
    n = max(len(seg) for seg in segments)
    xy, widths = np.zeros((len(segments), n, 2, 2)), np.zeros((len(segments), n))
    for j, seg in enumerate(segments):
        xy[j, : len(seg)], widths[j, : len(seg)] = seg, width
    return xy, widths


@builder(N_("additive_attention"))
def additive_attention_explorer(
    num_keys: int = 5,
    d_q: int = 2,
    d_k: int = 3,
    d_hidden: int = 6,
    *,
    seed: int = 260,
    key: int = 4,
    query=(0.0, -1.5),
) -> Explorer:
    """Additive attention against a projected dot product, on queries and keys of different widths
    (C24).

    A fixed, randomly initialised :class:`attnlib.AdditiveAttention` scores one query of width
    ``d_q`` (its first two components on sliders, the rest 0) against ``num_keys`` keys of width
    ``d_k``: ``e_j = w_vᵀ tanh(W_q q + W_k k_j)``. Beside it, a dot product of projections onto the
    same width h, ``(q W_Q)·(k_j W_K)/√h``, handles the same shapes. Left and middle: the score of
    the key chosen in the menu as a function of (q₁, q₂) for each (a heatmap with contour lines;
    the query is the dot; the dashed line, the queries with the same q₂). All keys share one colour
    scale per score; the 9 contour levels span the chosen key's own range. Right: the weights of
    every key under both scores, for the current query.

    The default seed (260) is one where the reversal that only a curved score allows is plain to
    see: along the line q₂ = −1.5 the additive weights are won by k4, then k1, then k4 again, each
    time by a wide margin, while under the dot product each key wins on one interval at most.

    Args:
        num_keys: S, the number of keys (2..8).
        d_q, d_k: query width (>= 2) and key width; they may differ.
        d_hidden: h, the hidden (shared) width of both scores.
        seed: seed of the private generator for the keys and the parameters.
        key: which key's score surface is drawn first (1-based); the menu ``key`` changes it.
        query: the starting first two query components, each in [-3, 3] (on the 0.1 grid).

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``q1``, ``q2`` (two
        fast sliders, each precomputed over its range) and ``key`` (the menu).
    """
    check_int("d_q", d_q, min=2)  # two sliders
    check_int("num_keys", num_keys, min=2, max=8)
    check_int("key", key, min=1, max=num_keys)
    attn, keys, w_Q, w_K = _model(num_keys, d_q, d_k, d_hidden, seed)
    values = torch.arange(num_keys, dtype=torch.float64).reshape(1, num_keys, 1)  # v_j = j - 1
    labels = [f"k{j + 1}" for j in range(num_keys)]
    scale = default_scale(d_hidden)
    controls = {
        "q1": _query_slider(_("query q₁"), query[0]),
        "q2": _query_slider(_("query q₂"), query[1]),
        "key": dropdown(_("surface of key"), [(lab, j + 1) for j, lab in enumerate(labels)], key),
    }

    @grid_table(controls, "q2", "q1")  # the whole (q1, q2) plane, row = q2: one batched call
    def both(q2, q1):
        """Scores and weights ``(N, S)`` of the queries ``(q1, q2, 0, ...)`` under both scores,
        and both outputs ``(N,)``."""
        q = torch.zeros(1, len(q1), d_q, dtype=torch.float64)  # (B=1, N, d_q)
        q[0, :, 0], q[0, :, 1] = q1, q2
        with torch.no_grad():
            _out, add_w = attn(q, keys, values)  # (1, N, S)
            dot_s = scaled_scores(q @ w_Q, keys @ w_K, scale)  # (1, N, S)
            _out, dot_w = dot_product_attention(q @ w_Q, keys @ w_K, values, scale=scale)
            v = values[0, :, 0]  # (S,)
            return attn.scores(q, keys)[0], add_w[0], dot_s[0], dot_w[0], add_w[0] @ v, dot_w[0] @ v

    n = len(slider_axis(controls["q1"]).values)
    # the two score surfaces of every key over the (q1, q2) plane: row = q2, column = q1
    add_plane, _add_w, dot_plane, *_rest = both.table()  # (n*n, S) each
    surfaces = {
        "add": add_plane.T.reshape(num_keys, n, n).numpy(),
        "dot": dot_plane.T.reshape(num_keys, n, n).numpy(),
    }  # (S, n, n) each: surfaces[name][j] is the score of key j + 1
    # contour levels: 9 across each key's own range
    contour_sets = {name: _key_contours(zs) for name, zs in surfaces.items()}
    with torch.no_grad():  # (B, L, S, h) for one query
        feature_shape = str(tuple(attn.features(torch.zeros(1, 1, d_q).double(), keys).shape))
    n_drawn = (n - 1) // _DRAW + 1  # cells per side of the drawn heatmaps

    def layer(key):
        """The chosen key's surfaces and contours: sent once per menu value, not per frame."""
        arrays = {}
        for name, (xy, widths) in contour_sets.items():
            arrays[f"{name}_surface"] = surfaces[name][key - 1, ::_DRAW, ::_DRAW]  # (31, 31)
            arrays[f"{name}_contours"] = xy[key - 1]
            arrays[f"{name}_widths"] = widths[key - 1]
        return arrays

    def compute(q1, q2, key):
        check_int("key", key, min=1, max=num_keys)
        add_s, a_w, dot_s, d_w, add_o, dot_o = both(q1=q1, q2=q2)  # (S,) each, then ()
        at = [[(float(q1) + _Q_LIM) / _CELL, (float(q2) + _Q_LIM) / _CELL]]  # in drawn cells
        row = [[-0.5, at[0][1]], [n_drawn - 0.5, at[0][1]]]  # the line of queries with this q₂
        return Frame(
            arrays={"query": at, "row": row, "w_add": a_w, "w_dot": d_w},
            texts={"which": f"k{key}"},
            readout={
                N_("feature shape (B, L, S, h)"): feature_shape,
                N_("additive score e_j"): add_s,
                N_("additive weight"): a_w,
                N_("dot score (qW_Q)·(kW_K)/√h"): dot_s,
                N_("dot weight"): d_w,
                N_("additive output Σ α_j v_j"): float(add_o),
                N_("dot output Σ α_j v_j"): float(dot_o),
            },
        )

    scene = _scene(surfaces, n_drawn, labels)
    data = {"model": attn, "keys": keys, "w_Q": w_Q, "w_K": w_K, "surfaces": surfaces}
    data["contours"] = {name: xy for name, (xy, _widths) in contour_sets.items()}
    # one precomputed set per slider (not a joint q1 x q2 grid, too many frames); the surfaces
    # are a layer (they depend on the menu only): sent once per key, not in every frame
    return Explorer(
        controls,
        compute,
        scene,
        layer=layer,
        data=data,
        title=_(
            "Additive attention vs a projected dot product, d_q={d_q} ≠ d_k={d_k}", d_q=d_q, d_k=d_k
        ),
        columns=labels,
        digits=3,
    )


def _key_contours(surfaces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's contours at 9 levels across its own range: ``(S, N, 2, 2)`` segments and
    ``(S, N)`` widths (0 for padding)."""
    levels = [np.linspace(z.min(), z.max(), 11)[1:-1] for z in surfaces]
    return _padded([_contours(z, lev) for z, lev in zip(surfaces, levels)], 0.8)


def _model(num_keys: int, d_q: int, d_k: int, d_hidden: int, seed: int):
    """The fixed :class:`AdditiveAttention`, keys ``(1, S, d_k)`` and the projections ``W_Q``
    ``(d_q, h)``, ``W_K`` ``(d_k, h)``, all from a private generator (float64)."""
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # leave torch's global generator as it was
        attn = AdditiveAttention(d_q, d_k, d_hidden).double()
    with torch.no_grad():  # parameters from the private generator, not torch's global one
        for p in attn.parameters():
            p.copy_(
                torch.randn(p.shape, generator=g, dtype=torch.float64) / p.shape[-1] ** 0.5 * 1.5
            )
    keys = torch.randn(1, num_keys, d_k, generator=g, dtype=torch.float64)  # (B=1, S, d_k)
    w_Q = torch.randn(d_q, d_hidden, generator=g, dtype=torch.float64) / d_q**0.5  # (d_q, h)
    w_K = torch.randn(d_k, d_hidden, generator=g, dtype=torch.float64) / d_k**0.5  # (d_k, h)
    return attn, keys, w_Q, w_K


def _query_slider(label: str, value: float):
    return float_slider(
        label, -_Q_LIM, _Q_LIM, float(value), step=_Q_STEP, readout_format=".1f", width="260px"
    )


def _surface_panel(name: str, title: str, ranges: dict, n_drawn: int) -> Panel:
    """One key's score surface (a layer; one colour scale per score, shared by all keys), its
    contours, the query and its row."""
    vrange = ranges[name]
    ticks = [(t + _Q_LIM) / _CELL for t in _TICKS]
    tick_labels = [f"{t:g}" for t in _TICKS]
    return Panel(
        [
            Heatmap(f"{name}_surface", vmin=vrange[0], vmax=vrange[1], colorbar=True),
            Segments(f"{name}_contours", color="white", widths=f"{name}_widths"),
            Line("row", color="C3", width=1.0, dash=True),
            Points("query", color="C3", size=5),
            Text(0.03, 0.93, key="which", color="white", size=10, axes=True),
        ],
        xlim=(-0.5, n_drawn - 0.5),
        ylim=(-0.5, n_drawn - 0.5),
        title=title,
        xlabel="q₁",
        ylabel="q₂",
        xticks=ticks,
        xticklabels=tick_labels,
        yticks=ticks,
        yticklabels=tick_labels,
    )


def _bars_panel(labels: list[str]) -> Panel:
    S = len(labels)
    return Panel(
        [
            Bars("w_add", x=np.arange(S) - 0.2, width=0.4, color="C0", label=_("additive")),
            Bars("w_dot", x=np.arange(S) + 0.2, width=0.4, color="C1", label=_("projected dot")),
        ],
        ylim=(0.0, 1.05),
        title=_("weights of every key"),
        xlabel=_("key"),
        ylabel=_("weight"),
        **bar_slots(S, labels),
        legend="upper right",
    )


def _scene(surfaces: dict, n_drawn: int, labels: list[str]) -> Scene:
    """Both score surfaces of the chosen key (one colour scale per score) and the weights."""
    ranges = {name: (float(z.min()), float(z.max())) for name, z in surfaces.items()}
    scene = Scene(
        [
            _surface_panel("add", _("additive score of one key: curved"), ranges, n_drawn),
            _surface_panel("dot", _("projected dot score of that key: a plane"), ranges, n_drawn),
            _bars_panel(labels),
        ],
        cols=3,
        width=960,
        height=300,
        col_widths=[1.15, 1.15, 1.0],
    )
    return scene
