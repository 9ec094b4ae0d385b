"""Key picture of notebook 09: what one layer costs as the sequence grows (C41, C42).

The registered figure is drawn from arithmetic only (multiply-adds and bytes from the formulas), so
it is the same on every machine (the formulas live in
:func:`attnlib.course.costs.theoretical_costs`); :func:`measured_cost_panels` draws measured rows
from :func:`attnlib.course.costs.layer_costs` in the notebook.
"""

from __future__ import annotations

import numpy as np

from attnlib.course.costs import theoretical_costs
from attnlib.figures import register_figure
from attnlib.util.i18n import N_, _, gettext

__all__ = ["measured_cost_panels", "sequence_costs_figure"]

#: curve name (a key of the cost tables, shown through ``gettext``) -> colour, line style
_STYLE = {
    N_("self-attention"): ("C3", "o-"),
    "RNN": ("C0", "s-"),
    "CNN": ("C2", "^-"),
    N_("blockwise attention"): ("C1", "d--"),
    N_("RNN / CNN output"): ("C0", "s-"),
}


def _guides(ax, ns, anchor, slopes=(1, 2)):
    """Dotted lines of the given slopes through (ns[0], anchor), labelled at their right end."""
    n = np.asarray(ns, dtype=np.float64)
    for p in slopes:
        y = anchor * (n / n[0]) ** p
        ax.plot(n, y, ":", color="0.55", lw=1)
        ax.annotate(
            "∝ n" + ("" if p == 1 else "²" if p == 2 else f"^{p}"),
            (n[-1], y[-1]),
            fontsize=8,
            color="0.4",
            ha="right",
            va="bottom",
        )


def measured_cost_panels(rows, axes):
    """Draw measured time (left) and the exact peak tensor memory (right) against n, log-log,
    each panel with dotted guides of slope 1 and 2.

    Args:
        rows: :class:`attnlib.course.costs.CostRow` list (from
            :func:`attnlib.course.costs.layer_costs`).
        axes: two axes.

    Returns:
        ``{(layer, "time" | "memory"): Line2D}``.
    """
    ax_t, ax_m = axes
    lines = {}
    layers = list(dict.fromkeys(r.layer for r in rows))
    for name in layers:
        rs = sorted((r for r in rows if r.layer == name), key=lambda r: r.n)
        color, fmt = _STYLE.get(name, ("C4", "o-"))
        n = [r.n for r in rs]
        (lines[name, "time"],) = ax_t.plot(
            n, [r.seconds * 1e3 for r in rs], fmt, color=color, label=gettext(name), ms=4
        )
        mem = [r.peak_bytes / 2**20 if r.peak_bytes > 0 else np.nan for r in rs]
        (lines[name, "memory"],) = ax_m.plot(n, mem, fmt, color=color, label=gettext(name), ms=4)
    ns = sorted({r.n for r in rows})
    mem_all = [r.peak_bytes / 2**20 for r in rows if r.peak_bytes > 0 and r.n == ns[0]]
    if mem_all:
        # Half the lowest first point: a guide through a measured point would hide under its line.
        _guides(ax_m, ns, min(mem_all) / 2)
    time_all = [r.seconds * 1e3 for r in rows if r.seconds > 0 and r.n == ns[0]]
    if time_all:
        _guides(ax_t, ns, min(time_all) / 2)
    for ax, what in ((ax_t, _("median time (ms)")), (ax_m, _("peak tensor memory (MiB)"))):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(_("sequence length n"))
        ax.set_ylabel(what)
        ax.legend(fontsize="small")
    ax_t.set_title(_("time of one forward pass (measured)"))
    ax_m.set_title(_("memory (counted exactly)"))
    return lines


@register_figure("sequence_costs", formats=("png",))
def sequence_costs_figure():
    """One layer's compute and largest array against n, from the formulas
    (d = 512, k = 3, block = 128).
    """
    from matplotlib.figure import Figure

    ns = 2.0 ** np.arange(6, 17)  # 64 ... 65536
    d = 512
    costs = theoretical_costs(ns, d_model=d)
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax_c, ax_m = fig.subplots(1, 2)
    for name, y in costs.compute.items():
        color, fmt = _STYLE[name]
        ax_c.plot(ns, y, fmt, color=color, label=gettext(name), ms=4)
    ax_c.axvline(d, color="0.6", ls=":", lw=1)
    ax_c.annotate(
        _("n = d: attention = RNN"),
        (d, costs.rnn_macs[0]),
        fontsize=8,
        color="0.35",
        xytext=(4, 0),
        textcoords="offset points",
    )
    ax_c.set_title(_("multiply-adds of one layer (d = {d}, k = {k})", d=d, k=3))
    ax_c.set_ylabel(_("multiply-adds"))
    for name, y in costs.memory.items():
        color, fmt = _STYLE[name]
        ax_m.plot(ns, y / 2**20, fmt, color=color, label=gettext(name), ms=4)
    ax_m.set_title(_("largest array of one layer (float32)"))
    ax_m.set_ylabel("MiB")
    for ax in (ax_c, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(_("sequence length n"))
        ax.legend(fontsize="small")
    fig.suptitle(
        _(
            "Full attention grows like n² in compute and memory; key blocks keep memory linear\n"
            "(all n queries against one block; tiling the queries too would make it constant)"
        ),
        fontsize=10,
    )
    return fig
