"""Key picture of notebook 09: what one layer costs as the sequence grows (C41, C42).

The registered figure is drawn from arithmetic only (multiply-adds and bytes from the formulas), so
it is the same on every machine; :func:`measured_cost_panels` draws measured rows from
:func:`attnlib.costs.layer_costs` in the notebook.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from attnlib.figures import register_figure

__all__ = ["fitted_slope", "measured_cost_panels", "theoretical_costs", "sequence_costs_figure"]

_STYLE = {"self-attention": ("C3", "o-"), "RNN": ("C0", "s-"), "CNN": ("C2", "^-"),
          "blockwise attention": ("C1", "d--"), "RNN / CNN output": ("C0", "s-")}


def fitted_slope(ns: Sequence[float], values: Sequence[float]) -> float:
    """Slope of the least-squares line through ``(log n, log value)``: cost ∝ n^slope.

    Args:
        ns: sequence lengths (> 0), at least two different ones.
        values: the cost at each n (> 0).

    Returns:
        The fitted exponent (NaN if any value is NaN or not positive).
    """
    n = np.asarray(ns, dtype=np.float64).reshape(-1)
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if n.shape != y.shape:
        raise ValueError(f"ns has {n.size} entries but values has {y.size}")
    if n.size < 2 or np.unique(n).size < 2:
        raise ValueError(f"need at least two different n to fit a slope, got {n.tolist()}")
    if (n <= 0).any():
        raise ValueError(f"ns must be > 0, got {n.tolist()}")
    if not np.isfinite(y).all() or (y <= 0).any():
        return float("nan")
    slope, _ = np.polyfit(np.log(n), np.log(y), 1)
    return float(slope)


def _guides(ax, ns, anchor, slopes=(1, 2)):
    """Dotted lines of the given slopes through (ns[0], anchor), labelled at their right end."""
    n = np.asarray(ns, dtype=np.float64)
    for p in slopes:
        y = anchor * (n / n[0]) ** p
        ax.plot(n, y, ":", color="0.55", lw=1)
        ax.annotate("∝ n" + ("" if p == 1 else "²" if p == 2 else f"^{p}"), (n[-1], y[-1]), fontsize=8, color="0.4", ha="right", va="bottom")


def measured_cost_panels(rows, axes):
    """Draw measured time (left) and peak extra memory (right) against n, log-log.

    Args:
        rows: :class:`attnlib.costs.CostRow` list (from :func:`attnlib.costs.layer_costs`).
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
        (lines[name, "time"],) = ax_t.plot(n, [r.seconds * 1e3 for r in rs], fmt, color=color, label=name, ms=4)
        mem = [r.peak_bytes / 2**20 if r.peak_bytes > 0 else np.nan for r in rs]
        (lines[name, "memory"],) = ax_m.plot(n, mem, fmt, color=color, label=name, ms=4)
    ns = sorted({r.n for r in rows})
    mem_all = [r.peak_bytes / 2**20 for r in rows if r.peak_bytes > 0 and r.n == ns[0]]
    if mem_all:
        _guides(ax_m, ns, min(mem_all))
    for ax, what in ((ax_t, "median time (ms)"), (ax_m, "peak extra memory (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(what)
        ax.legend(fontsize="small")
    ax_t.set_title("time of one forward pass (measured)")
    ax_m.set_title("memory (measured)")
    return lines


def theoretical_costs(ns: Sequence[int], *, d_model: int = 512, kernel_size: int = 3, block_size: int = 128,
                      bytes_per_number: int = 4) -> dict[str, dict[str, np.ndarray]]:
    """Multiply-adds and largest-array bytes of one layer from the formulas of the seed's table.

    Args:
        ns: sequence lengths.
        d_model: d.
        kernel_size: k of the convolution.
        block_size: keys per block for blockwise attention.
        bytes_per_number: 4 for float32.

    Returns:
        ``{"compute": {layer: (N,)}, "memory": {layer: (N,)}}``: multiply-adds (CNN ``k n d²``, RNN
        ``n d²``, self-attention ``n² d``) and bytes of the largest array (``n²`` scores for full
        attention, ``n · block`` for blockwise, the ``n d`` output for RNN and CNN, one curve).
    """
    n = np.asarray(ns, dtype=np.float64)
    d, k = float(d_model), float(kernel_size)
    return {
        "compute": {"CNN": k * n * d**2, "RNN": n * d**2, "self-attention": n**2 * d},
        "memory": {"self-attention": n**2 * bytes_per_number,
                   "blockwise attention": n * np.minimum(block_size, n) * bytes_per_number,
                   "RNN / CNN output": n * d * bytes_per_number},
    }


@register_figure("sequence_costs", formats=("png",))
def sequence_costs_figure():
    """One layer's compute and largest array against n, from the formulas (d = 512, k = 3, block = 128)."""
    from matplotlib.figure import Figure

    ns = 2.0 ** np.arange(6, 17)  # 64 ... 65536
    d = 512
    costs = theoretical_costs(ns, d_model=d)
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax_c, ax_m = fig.subplots(1, 2)
    for name, y in costs["compute"].items():
        color, fmt = _STYLE[name]
        ax_c.plot(ns, y, fmt, color=color, label=name, ms=4)
    ax_c.axvline(d, color="0.6", ls=":", lw=1)
    ax_c.annotate("n = d: attention = RNN", (d, costs["compute"]["RNN"][0]), fontsize=8, color="0.35",
                  xytext=(4, 0), textcoords="offset points")
    ax_c.set_title("multiply-adds of one layer (d = 512, k = 3)")
    ax_c.set_ylabel("multiply-adds")
    for name, y in costs["memory"].items():
        color, fmt = _STYLE[name]
        ax_m.plot(ns, y / 2**20, fmt, color=color, label=name, ms=4)
    ax_m.set_title("largest array of one layer (float32)")
    ax_m.set_ylabel("MiB")
    for ax in (ax_c, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.legend(fontsize="small")
    fig.suptitle("Full attention grows like n² in compute and memory; blocks keep memory linear (C41, C42)",
                 fontsize=10)
    return fig
