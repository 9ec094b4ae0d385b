"""The scaling explorer: grow d_k and watch the scores spread and the softmax row saturate.

Teaches C05 (Var(q·k) = d_k; 1 after dividing by sqrt(d_k)), C06 (without the scale a larger d_k
gives a sharper row: max weight up, entropy down) and C14 (a saturated row has a tiny Jacobian).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlib import plotting
from attnlib.softmax import masked_softmax
from attnlib.scaling import (entropy, jacobian_norm, max_weight, scores_for_widths,
                                softmax_sharpness)
from attnlib.widgets.controls import selection_slider, toggle
from attnlib.widgets.explorer import Explorer
from attnlib.widgets.scene import Bars, Frame, Line, Panel, Points, Scene, Text

__all__ = ["scaling_explorer", "WIDTHS"]

#: The d_k values the slider offers: 1, 2, 4, ..., 1024.
WIDTHS = tuple(2**e for e in range(11))
_HIST_RANGE = 60.0  # scores beyond ±60 are counted in the end bins
_BIN_WIDTH = 0.5


def _normal_pdf(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-0.5 * x**2 / var) / math.sqrt(2 * math.pi * var)


def scaling_explorer(d_k: int = 256, scaled: bool = False, *, num_keys: int = 16,
                     num_pairs: int = 2000, seed: int = 0) -> Explorer:
    """A d_k slider (1 ... 1024, powers of 2) and a scale toggle (C05, C06, C14).

    Left: a histogram of ``num_pairs`` random scores q·k (components i.i.d. N(0, 1)) with the
    normal curve of variance d_k (unscaled) or 1 (scaled). Middle: the softmax row of one query
    over ``num_keys`` keys. Right: the mean entropy of such rows against d_k, both ways, with
    the current setting marked. All random numbers are drawn once, at build time, from a local
    generator seeded with ``seed``; width d_k uses the first d_k components of the same draws.

    Args:
        d_k: starting width, a power of 2 from 1 to 1024.
        scaled: start with the scores divided by sqrt(d_k).
        num_keys: keys in the softmax row (2 ... 64).
        num_pairs: query–key pairs in the histogram (>= 100).
        seed: seed of the local generator (the global one is untouched).
    Returns:
        An :class:`~attnlib.widgets.explorer.Explorer` with controls ``d_k`` and ``scaled`` and a
        readout of the scores' sample variance, the row's max weight, entropy and Jacobian norm.
    """
    if d_k not in WIDTHS:
        raise ValueError(f"d_k must be a power of 2 from 1 to 1024, got {d_k!r}")
    if not (isinstance(num_keys, int) and 2 <= num_keys <= 64):
        raise ValueError(f"num_keys must be an int in [2, 64], got {num_keys!r}")
    if not (isinstance(num_pairs, int) and num_pairs >= 100):
        raise ValueError(f"num_pairs must be an int >= 100, got {num_pairs!r}")
    gen = torch.Generator().manual_seed(seed)
    width = WIDTHS[-1]
    q_pool = torch.randn(num_pairs, width, generator=gen)  # (N, D)
    k_pool = torch.randn(num_pairs, width, generator=gen)  # (N, D)
    prefix = (q_pool * k_pool).cumsum(dim=-1)  # (N, D): column d-1 = q·k using d components
    widths = torch.tensor(WIDTHS, dtype=torch.float64)
    raw = prefix[:, [d - 1 for d in WIDTHS]].T.double()  # (K, N) unscaled scores per width
    pair_scores = {False: raw, True: raw / widths.sqrt()[:, None]}  # (K, N) each

    q_row = torch.randn(1, width, generator=gen, dtype=torch.float64)  # (1, D)
    keys = torch.randn(num_keys, width, generator=gen, dtype=torch.float64)  # (S, D)
    rows = {s: masked_softmax(scores_for_widths(q_row, keys, WIDTHS, scaled=s))[:, 0]
            for s in (False, True)}  # (K, S) each
    curves = {s: softmax_sharpness(WIDTHS, scaled=s, num_keys=num_keys, num_queries=256,
                                   generator=gen) for s in (False, True)}

    edges = np.arange(-_HIST_RANGE, _HIST_RANGE + _BIN_WIDTH / 2, _BIN_WIDTH)
    hists = {s: np.stack([np.histogram(np.clip(x.numpy(), edges[0], edges[-1]), bins=edges,
                                       density=True)[0] for x in pair_scores[s]])
             for s in (False, True)}  # (K, nbins)
    centres = 0.5 * (edges[:-1] + edges[1:])
    ymax = 1.1 * max(float(h.max()) for h in hists.values())
    x = np.log2(np.array(WIDTHS, dtype=np.float64))
    ent = {s: plotting.to_numpy(curves[s].entropy) for s in (False, True)}

    def compute(d_k, scaled):
        i = WIDTHS.index(int(d_k))
        scaled = bool(scaled)
        row = rows[scaled][i]  # (S,)
        pdf = _normal_pdf(centres, 1.0 if scaled else float(d_k))
        return Frame(
            arrays={"hist": hists[scaled][i], "pdf": np.stack([centres, pdf], 1), "row": row,
                    "marker": [[x[i], ent[scaled][i]]]},
            readout={
                "d_k": int(d_k),
                "Var(score), sampled": pair_scores[scaled][i].var(),
                "Var(score), theory": 1.0 if scaled else float(d_k),
                "max weight": max_weight(row),
                "entropy (nats)": entropy(row),
                "Jacobian norm ||J||_F": jacobian_norm(row),
            })

    log_s = math.log(num_keys)
    hist_panel = Panel([Bars("hist", x=centres, width=_BIN_WIDTH, color="C0", label="sampled q·k"),
                        Line("pdf", color="C3", width=1.2, label="N(0, theory)")],
                       xlim=(edges[0], edges[-1]), ylim=(0.0, ymax), title="scores of random (q, k) pairs",
                       xlabel="score", ylabel="density", legend="upper right")
    ticks = list(range(0, num_keys, 5))
    row_panel = Panel([Bars("row", color="C0")], xlim=(-0.6, num_keys - 0.4), ylim=(0.0, 1.0),
                      title="softmax row of one query", xlabel="key j", xticks=ticks,
                      xticklabels=[str(j + 1) for j in ticks])
    curve_artists = [Line([[x[0], log_s], [x[-1], log_s]], color="0.6", width=1, dash=True),
                     Text(0.0, log_s, " uniform: log S", color="0.4", size=7, va="bottom")]
    for s, color, name in ((False, "C3", "q·k (unscaled)"), (True, "C0", "q·k / √d_k")):
        xy = np.stack([x, ent[s]], 1)
        curve_artists += [Line(xy, color=color, width=1.5, label=name), Points(xy, color=color, size=2.5)]
    curve_artists.append(Points("marker", color="black", size=7, filled=False))
    curve_panel = Panel(curve_artists, xlim=(-0.5, 10.5), ylim=(0.0, 1.12 * log_s), title="mean entropy of a row",
                        xlabel="d_k (log scale)", ylabel="entropy (nats)", xticks=list(x[::2]),
                        xticklabels=[str(d) for d in WIDTHS[::2]], legend="lower left")
    scene = Scene([hist_panel, row_panel, curve_panel], cols=3, width=900, height=300, col_widths=[1.2, 1.0, 1.0])
    controls = {"d_k": selection_slider("d_k", WIDTHS, d_k, width="320px"),
                "scaled": toggle("divide scores by √d_k", scaled)}
    return Explorer(controls, compute, scene, name="scaling",
                    args=dict(d_k=d_k, scaled=scaled, num_keys=num_keys, num_pairs=num_pairs, seed=seed), digits=3)
