"""The scaling explorer: grow d_k, choose the scale factor, watch scores spread, rows saturate.

Teaches C05 (Var(q·k) = d_k; 1 after dividing by sqrt(d_k)), C06 (without the scale a larger d_k
gives a sharper row: max weight up, entropy down; dividing by d_k instead flattens it towards
uniform) and C14 (a saturated row has a tiny Jacobian, and ‖J‖ first rises before it falls).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlib.core.softmax import masked_softmax
from attnlib.course.scaling import entropy, jacobian_norm, max_weight, scores_for_widths
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Bars, Line, Points, Text
from attnlib.widgets.framework.controls import selection_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, bar_slots

__all__ = ["scaling_explorer", "WIDTHS", "SCALES"]

#: The d_k values the slider offers: 1, 2, 4, ..., 1024.
WIDTHS = tuple(2**e for e in range(11))
#: The scale factors the second slider offers (the raw score q·k is multiplied by one of them).
SCALES = ("1", "1/√d_k", "1/d_k")
_NBINS = 50  # histogram bins over ±_RANGE theoretical standard deviations
_RANGE = 5.0
_TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)  # x ticks, in units of the histogram's half-range
_YTICKS = (0.0, 0.25, 0.5, 0.75, 1.0)  # y ticks, as fractions of the per-setting y-limit


def scale_factor(scale: str, d_k: int) -> float:
    """The number the raw score q·k is multiplied by: 1, 1/sqrt(d_k) or 1/d_k."""
    factors = {"1": 1.0, "1/√d_k": 1.0 / math.sqrt(d_k), "1/d_k": 1.0 / d_k}
    if scale not in factors:
        raise ValueError(f"scale must be one of {sorted(factors)}, got {scale!r}")
    return factors[scale]


def _normal_pdf(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-0.5 * x**2 / var) / math.sqrt(2 * math.pi * var)


def _normal_bin_density(u: np.ndarray, edges: np.ndarray, R: float, var: float) -> np.ndarray:
    """The density a histogram with bins ``edges`` (in units of R) should show for a normal of
    variance ``var``: the normal density averaged over each bin, read off at the points ``u``
    (the mean of the two bins on an edge). Unlike the density itself it stays comparable with
    the bars even when the bell is far narrower than one bin."""
    cdf = torch.special.ndtr(torch.as_tensor(edges * R / math.sqrt(var), dtype=torch.float64))
    per_bin = (cdf[1:] - cdf[:-1]).numpy() / (np.diff(edges) * R)  # (nbins,)
    pos = (u - edges[0]) / (edges[1] - edges[0])  # (P,) position in bins
    on_edge = np.isclose(pos, np.round(pos), atol=1e-9)
    left = np.clip(np.where(on_edge, np.round(pos) - 1, np.floor(pos)), 0, len(per_bin) - 1)
    right = np.clip(np.where(on_edge, np.round(pos), np.floor(pos)), 0, len(per_bin) - 1)
    return 0.5 * (per_bin[left.astype(int)] + per_bin[right.astype(int)])


def axis_half_range(scale: str, d_k: int, fixed: bool) -> float:
    """Half-range of the histogram's x-axis, in score units: ±5 theoretical standard deviations
    of the current setting, or (``fixed``) of the widest setting of this scale factor over all
    widths (±160 for the raw score, ±5 for the other two), so that a change in spread shows."""
    sds = [math.sqrt(d) * scale_factor(scale, d) for d in (WIDTHS if fixed else (d_k,))]
    return _RANGE * max(sds)


def _nice_top(v: float) -> float:
    """The smallest of 1, 1.2, 1.6, 2, 2.4, 3.2, 4, 4.8, 6, 8 (times 10^k) >= v."""
    e = math.floor(math.log10(v))
    for m in (1.0, 1.2, 1.6, 2.0, 2.4, 3.2, 4.0, 4.8, 6.0, 8.0, 10.0):
        if m * 10.0**e >= v * (1 - 1e-12):
            return m * 10.0**e
    return 10.0 ** (e + 1)


def _fmt(v: float) -> str:
    return "0" if v == 0 else f"{v:.3g}".replace("-", "−")


@builder(N_("scaling"))
def scaling_explorer(
    d_k: int = 256,
    scale: str = "1",
    fixed_axis: bool = False,
    *,
    num_keys: int = 16,
    num_pairs: int = 2000,
    seed: int = 0,
) -> Explorer:
    """A d_k slider (1 ... 1024, powers of 2) and a scale-factor slider (1, 1/√d_k, 1/d_k).

    Teaches C05, C06 and C14.

    Top left: a histogram of ``num_pairs`` random scores c·q·k (components i.i.d. N(0, 1), c the
    scale factor) with the normal density of the theoretical variance c²·d_k; both axes follow
    the setting (x spans ±5 theoretical standard deviations, its tick labels change; scores
    beyond are counted in the readout, never clipped into the end bins). With ``fixed_axis`` the
    x-axis stays at the widest range this scale factor reaches over all widths (±160 raw), so
    the spread visibly grows or shrinks with d_k; the curve is then the normal density averaged
    over each bin, which the bars should match even where the bell is narrower than a bin.
    Top right: the softmax row of one query over ``num_keys`` keys. Bottom: the mean entropy and
    the mean Jacobian norm of 256 such rows against d_k, for the three scale factors, with the
    current setting marked.
    All random numbers are drawn once, at build time, from a local generator seeded with
    ``seed``; width d_k uses the first d_k components of the same draws, and the three scale
    factors divide the *same* raw scores (common random numbers: at d_k = 1 they agree exactly).

    Args:
        d_k: starting width, a power of 2 from 1 to 1024.
        scale: starting scale factor: ``"1"``, ``"1/√d_k"`` or ``"1/d_k"`` (see ``SCALES``).
        fixed_axis: start with the histogram's x-axis fixed per scale factor (a checkbox).
        num_keys: keys in the softmax row (2 ... 64).
        num_pairs: query–key pairs in the histogram (>= 100).
        seed: seed of the local generator (the global one is untouched).
    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``d_k``, ``scale``
        and ``fixed_axis`` and a readout of the histogram's half-range, the scores' sampled and
        theoretical variance, the row's max weight, entropy and Jacobian norm, and the mean entropy
        and Jacobian norm over the 256 rows.
    """
    _check_arguments(d_k, scale, fixed_axis, num_keys, num_pairs)
    gen = torch.Generator().manual_seed(seed)
    width = WIDTHS[-1]
    q_pool = torch.randn(num_pairs, width, generator=gen)  # (N, D)
    k_pool = torch.randn(num_pairs, width, generator=gen)  # (N, D)
    prefix = (q_pool.double() * k_pool.double()).cumsum(
        dim=-1
    )  # (N, D): column d-1 = q·k, d components
    raw_pairs = prefix[:, [d - 1 for d in WIDTHS]].T  # (K, N) unscaled scores per width

    q_row = torch.randn(1, width, generator=gen, dtype=torch.float64)  # (1, D)
    keys = torch.randn(num_keys, width, generator=gen, dtype=torch.float64)  # (S, D)
    raw_row = scores_for_widths(q_row, keys, WIDTHS, scaled=False)[:, 0]  # (K, S)
    q_many = torch.randn(256, width, generator=gen, dtype=torch.float64)  # (L, D)
    k_many = torch.randn(num_keys, width, generator=gen, dtype=torch.float64)  # (S, D)
    raw_many = scores_for_widths(q_many, k_many, WIDTHS, scaled=False)  # (K, L, S)

    names = list(SCALES)
    factors = {
        s: torch.tensor([scale_factor(s, d) for d in WIDTHS], dtype=torch.float64) for s in names
    }  # (K,)
    rows = {s: masked_softmax(raw_row * factors[s][:, None]) for s in names}  # (K, S) each
    many = {s: masked_softmax(raw_many * factors[s][:, None, None]) for s in names}  # (K, L, S)
    mean_ent = {s: entropy(many[s]).mean(-1).numpy() for s in names}  # (K,)
    mean_jac = {s: jacobian_norm(many[s]).mean(-1).numpy() for s in names}  # (K,)
    mean_top = {s: max_weight(many[s]).mean(-1).numpy() for s in names}  # (K,)
    x = np.log2(np.array(WIDTHS, dtype=np.float64))
    u = np.linspace(-1.0, 1.0, 201)  # histogram x axis in units of the half-range R
    edges = np.linspace(-1.0, 1.0, _NBINS + 1)
    centres = 0.5 * (edges[:-1] + edges[1:])

    def compute(d_k, scale, fixed_axis):
        i = WIDTHS.index(int(d_k))
        c = scale_factor(scale, int(d_k))
        var_theory = c * c * int(d_k)
        R = axis_half_range(scale, int(d_k), bool(fixed_axis))  # x half-range, in score units
        scores = (raw_pairs[i] * c).numpy()  # (N,)
        counts, _edges = np.histogram(scores / R, bins=edges)
        density = counts / (len(scores) * (2 * R / _NBINS))  # per unit of score
        if fixed_axis:  # the bell may be far narrower than a bin: average it over one bin
            pdf = _normal_bin_density(u, edges, R, var_theory)  # (201,)
        else:
            pdf = _normal_pdf(u * R, var_theory)  # (201,)
        # headroom above the peak (at most 1/1.35 of the axis) for the legend and the axis text
        ytop = _nice_top(1.35 * max(float(density.max()), float(pdf.max())))
        row = rows[scale][i]  # (S,)
        texts = {f"x{j}": _fmt(t * R) for j, t in enumerate(_TICKS)}
        texts.update({f"y{j}": _fmt(t * ytop) for j, t in enumerate(_YTICKS)})
        texts["axis"] = (
            _("x-axis fixed: ±{r}", r=_fmt(R))
            if fixed_axis
            else _("x-axis follows: ±{r}", r=_fmt(R))
        )
        return Frame(
            arrays={
                "hist": density / ytop,
                "pdf": np.stack([u, pdf / ytop], 1),
                "row": row,
                "m_ent": [[x[i], mean_ent[scale][i]]],
                "m_jac": [[x[i], mean_jac[scale][i]]],
                "mean_top": [[-0.5, mean_top[scale][i]], [num_keys - 0.5, mean_top[scale][i]]],
            },
            readout={
                "d_k": int(d_k),
                N_("scale factor"): c,
                N_("histogram half-range"): R,
                N_("Var(score), sampled"): float(np.var(scores, ddof=1)),
                N_("Var(score), theory"): var_theory,
                N_("sampled / theory"): float(np.var(scores, ddof=1)) / var_theory,
                N_("scores beyond ±5 sd (of N)"): int((np.abs(scores) > R).sum()),
                N_("row: max weight"): max_weight(row),
                N_("row: entropy (nats)"): entropy(row),
                N_("row: ||J||_F"): jacobian_norm(row),
                N_("256 rows: mean entropy"): float(mean_ent[scale][i]),
                N_("256 rows: mean ||J||_F"): float(mean_jac[scale][i]),
                N_("256 rows: mean max weight"): float(mean_top[scale][i]),
            },
            texts=texts,
        )

    scene = _scene(centres, x, mean_ent, mean_jac, num_keys)
    controls = {
        "d_k": selection_slider("d_k", WIDTHS, d_k, width="320px"),
        "scale": selection_slider(_("score ×"), SCALES, scale, width="260px"),
        "fixed_axis": toggle(_("fixed x-axis"), fixed_axis),
    }
    return Explorer(controls, compute, scene, grid=[("d_k", "scale")], digits=3)


def _check_arguments(d_k, scale, fixed_axis, num_keys, num_pairs) -> None:
    if d_k not in WIDTHS:
        raise ValueError(f"d_k must be a power of 2 from 1 to 1024, got {d_k!r}")
    scale_factor(scale, 1)
    if not isinstance(fixed_axis, bool):
        raise ValueError(f"fixed_axis must be a bool, got {fixed_axis!r}")
    if not (isinstance(num_keys, int) and 2 <= num_keys <= 64):
        raise ValueError(f"num_keys must be an int in [2, 64], got {num_keys!r}")
    if not (isinstance(num_pairs, int) and num_pairs >= 100):
        raise ValueError(f"num_pairs must be an int >= 100, got {num_pairs!r}")


def _scene(centres, x, mean_ent: dict, mean_jac: dict, num_keys: int) -> Scene:
    """The histogram, the row, and the mean entropy and Jacobian norm against d_k."""
    hist_artists = [
        Bars("hist", x=centres, width=2.0 / _NBINS, color="C0", label=_("sampled")),
        Line("pdf", color="C3", width=1.2, label=_("normal (theory)")),
    ]
    hist_artists.append(Text(0.02, 0.95, key="axis", size=7, color="0.3", axes=True))
    hist_artists += [
        Text(0.5 + t / 2, -0.03, key=f"x{j}", size=8, ha="center", va="top", axes=True)
        for j, t in enumerate(_TICKS)
    ]
    hist_artists += [
        Text(-0.015, t, key=f"y{j}", size=8, ha="right", va="center", axes=True)
        for j, t in enumerate(_YTICKS)
    ]
    hist_panel = Panel(
        hist_artists,
        xlim=(-1.0, 1.0),
        ylim=(0.0, 1.0),
        title=_("scores of random (q, k) pairs"),
        xlabel=_("score: q·k × the factor"),
        ylabel=_("density"),
        xticks=list(_TICKS),
        xticklabels=[" "] * 5,  # blank, but they keep room for the tick texts above the x label
        yticks=list(_YTICKS),
        yticklabels=["      "] * 5,  # room for the y tick texts (e.g. "0.016") beside the y label
        legend="upper right",  # short labels: it stays clear of the axis text, above the peak
    )
    row_panel = Panel(  # one row jumps about from width to width; the dashed line is the mean
        [
            Bars("row", color="C0"),
            Line(
                "mean_top", color="C3", width=1.2, dash=True, label=_("mean max weight, 256 rows")
            ),
        ],
        ylim=(0.0, 1.3),  # headroom above a one-hot row for the legend
        title=_("softmax row of one query"),
        xlabel=_("key j"),
        ylabel=_("weight"),
        legend="upper right",
        **bar_slots(num_keys, [str(j + 1) for j in range(num_keys)], every=5),
    )
    styles = {
        "1": ("C3", False, "q·k"),
        "1/√d_k": ("C0", False, "q·k / √d_k"),
        "1/d_k": ("0.35", True, "q·k / d_k"),
    }
    log_s = math.log(num_keys)

    def curve_panel(values, marker, title, ylabel, ylim, guides, legend):
        artists = [
            Line([[x[0], y], [x[-1], y]], color="0.6", width=1, dash=True)
            for y, _label, _va in guides
        ]
        # at the right end, on the side of the line the curves do not reach there
        artists += [
            Text(x[-1], y, f"{label} ", color="0.4", size=7, ha="right", va=va)
            for y, label, va in guides
        ]
        for s in SCALES:
            color, dash, label = styles[s]
            xy = np.stack([x, values[s]], 1)
            artists += [
                Line(xy, color=color, width=1.5, dash=dash, label=label),
                Points(xy, color=color, size=2.5),
            ]
        artists.append(Points(marker, color="black", size=7, filled=False))
        return Panel(
            artists,
            xlim=(-0.5, 10.5),
            ylim=ylim,
            title=title,
            xlabel=_("d_k (log scale)"),
            ylabel=ylabel,
            xticks=list(x[::2]),
            xticklabels=[str(d) for d in WIDTHS[::2]],
            legend=legend,
        )

    ent_panel = curve_panel(
        mean_ent,
        "m_ent",
        _("mean entropy of a row"),
        _("entropy (nats)"),
        (0.0, 1.15 * log_s),
        [(log_s, _("uniform: log S"), "bottom")],  # every curve lies below log S
        "lower left",
    )
    j_uniform = math.sqrt(num_keys - 1) / num_keys
    jac_panel = curve_panel(
        mean_jac,
        "m_jac",
        _("mean ‖J‖_F of a row"),
        "‖J‖_F",
        (0.0, 0.62),
        [
            (0.5, _("two-way split: 0.5"), "bottom"),
            (j_uniform, _("uniform: {u:.3f}", u=j_uniform), "top"),
        ],
        "lower left",
    )
    scene = Scene([hist_panel, row_panel, ent_panel, jac_panel], cols=2, width=590, height=440)
    return scene
