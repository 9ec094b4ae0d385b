"""How fast does each interactive explorer answer a slider move? (``python benchmarks/widget_latency.py``)

For every builder in ``attnlib.widgets.BUILDERS`` we time three things, each over the same ~30
random control settings (seeded), and print the medians side by side:

* **update** (what the widget does): ``explorer.set(name=value)`` for one control, which runs the
  builder's ``update`` (the maths, moving the artists in place, the readout), redraws the figure
  (blitting the changed artists over a cached background, or a full Agg render for explorers
  without ``dynamic`` artists) and, on the ipympl canvas used in Jupyter, encodes the changed
  pixels as PNG and sends them down the widget's comm (with no front-end attached the comm
  discards the message); then ``explorer.draw_now()`` to finish any redraw left pending. The
  canvas is told a front-end is connected (``syncing_data_url = False``), as in JupyterLab.
* **full redraw** (the baseline of the last line): the same figure with every artist drawn
  again and encoded, ``set_values(..., redraw=False)`` then ``savefig`` to PNG. This is the
  least that ``interact`` + ``%matplotlib inline`` does per move, so the speed-up over it is
  a lower bound.
* **rebuild + redraw** (what ``interact`` + ``%matplotlib inline`` does in full): build the
  same explorer from scratch on an Agg canvas (new controls, new figure and artists), set the
  same control values (``set_values(..., redraw=False)``: the maths and artists, no drawing),
  and render the figure to PNG with ``savefig`` (layout, one full draw, PNG encode). (The
  inline backend also crops with ``bbox_inches="tight"``, which costs one more draw; we leave
  it out. The builder's own set-up, e.g. precomputed Monte-Carlo curves, is included here,
  which ``interact`` might avoid, hence the conservative column above.)

Canvas explorers (``attnlib.widgets.explorer``, drawn in the browser from precomputed frames):
**update** is ``explorer.set(name=value)`` with a front end attached (its messages discarded):
``compute`` at the new values, the frame packed and sent, and the frame sets the front end lacks
(cached ones are re-sent; a slider move in the browser costs the kernel nothing at all). The
**full redraw** baseline is the same state drawn by matplotlib (``explorer.png()``), the
**rebuild** one a new explorer plus its PNG. The ``frame set ms`` column is the time to compute
one whole uncached frame set (what a slow control's first change costs, after its first frame).

Targets: median update <= 30 ms, and at least 2.5x faster than the full redraw. The last line
reads ``slowest median update: X ms; smallest speed-up over full redraw: Y×``.
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import sys
import time

import numpy as np


def _random_value(control, rng):
    """A random value inside ``control``'s range (min, max or a random one; any ipywidgets control)."""
    from attnlib.widgets.testing import control_values

    vals = control_values(control, rng, n_random=3)
    return vals[int(rng.integers(len(vals)))]


def moves(explorer, n, seed=0):
    """``n`` single-control moves ``(name, value)``, cycling through the controls."""
    rng = np.random.default_rng(seed)
    names = list(explorer.controls)
    return [(names[i % len(names)], _random_value(explorer.controls[names[i % len(names)]], rng)) for i in range(n)]


def _is_canvas(ex) -> bool:
    from attnlib.widgets.explorer import Explorer

    return isinstance(ex, Explorer)


def time_canvas(builder, n: int) -> tuple[list[float], list[float], list[float], float]:
    """update, full redraw (PNG), rebuild + PNG, and one uncached frame set, for a canvas explorer."""
    ex = builder()
    ex.view.send = lambda content, buffers=None: None  # a front end is attached (messages discarded)
    ex._on_msg(ex.view, {"type": "ready"}, [])
    seq = moves(ex, n + 3)
    up, full, rebuild = [], [], []
    for i, (name, value) in enumerate(seq):
        t0 = time.perf_counter()
        ex.set(**{name: value})
        t1 = time.perf_counter()
        if i >= 3:
            up.append(t1 - t0)
    for i, (name, value) in enumerate(seq[: max(4, n // 3)]):
        ex.set(**{name: value})
        t0 = time.perf_counter()
        ex.png()
        t1 = time.perf_counter()
        fresh = builder()
        fresh.set(**ex.values())
        fresh.png()
        t2 = time.perf_counter()
        if i >= 1:
            full.append(t1 - t0)
            rebuild.append(t2 - t1)
    sets = []
    for _ in range(3):
        ex._sets.clear()
        t0 = time.perf_counter()
        if ex.groups:
            ex.frame_set(0)
        sets.append(time.perf_counter() - t0)
    return up, full, rebuild, statistics.median(sets)


def time_updates(builder, n: int, backend: str) -> list[float]:
    from attnlib.widgets import figure_backend

    with figure_backend(backend):
        ex = builder()
    if hasattr(ex.canvas, "syncing_data_url"):
        ex.canvas.syncing_data_url = False  # a front-end is attached (JupyterLab): diffs only
    ex.render()
    seq = moves(ex, n + 3)
    times = []
    for i, (name, value) in enumerate(seq):
        t0 = time.perf_counter()
        ex.set(**{name: value})
        ex.draw_now()
        t1 = time.perf_counter()
        if i >= 3:  # the first moves warm caches (fonts, glyphs)
            times.append(t1 - t0)
    return times


def time_full_redraws(builder, n: int) -> list[float]:
    from attnlib.widgets import figure_backend

    with figure_backend("agg"):
        probe = builder()
    seq = moves(probe, n + 1)
    state = probe.values()
    times = []
    for i, (name, value) in enumerate(seq):
        state[name] = value
        t0 = time.perf_counter()
        with figure_backend("agg"):
            ex = builder()  # headless: the figure is built but not drawn
        ex.set_values(state, redraw=False)
        buf = io.BytesIO()
        ex.figure.savefig(buf, format="png")
        t1 = time.perf_counter()
        if i >= 1:
            times.append(t1 - t0)
        del ex
    return times


def time_full_renders(builder, n: int) -> list[float]:
    """The same figure, every artist redrawn and encoded: ``set_values(redraw=False)`` + ``savefig`` PNG."""
    from attnlib.widgets import figure_backend

    with figure_backend("agg"):
        ex = builder()
    seq = moves(ex, n + 1)
    times = []
    for i, (name, value) in enumerate(seq):
        t0 = time.perf_counter()
        ex.set_values({name: value}, redraw=False)
        buf = io.BytesIO()
        ex.figure.savefig(buf, format="png")
        t1 = time.perf_counter()
        if i >= 1:
            times.append(t1 - t0)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--moves", type=int, default=30, help="moves per builder (default 30)")
    parser.add_argument("--baseline-moves", type=int, default=None, help="full redraws per builder (default: --moves)")
    parser.add_argument("--only", nargs="*", default=None, help="builder names to time (default: all)")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    from attnlib.widgets import BUILDERS
    from attnlib.widgets.base import _ipympl_available

    backend = "ipympl" if _ipympl_available() else "agg"
    names = sorted(BUILDERS) if args.only is None else args.only
    n_base = args.baseline_moves or args.moves
    rows = []
    print(f"widget latency: median over {args.moves} moves per builder; canvas: {backend}; "
          f"baselines: {n_base} full redraws + PNG, {n_base} rebuilds + PNG")
    header = (f"{'builder':<20} {'update ms':>9} {'p90 ms':>7} {'full redraw ms':>14} {'speed-up':>8}"
              f" {'rebuild+redraw ms':>17} {'speed-up':>8} {'frame set ms':>12}")
    print(header)
    print("-" * len(header))
    for name in names:
        gc.collect()
        from attnlib.widgets import base

        set_ms = ""
        if name not in base.BUILDERS:  # a canvas explorer
            up, full, rebuild, set_s = time_canvas(BUILDERS[name], args.moves)
            set_ms = f"{set_s * 1e3:.0f}"
        else:
            up = time_updates(BUILDERS[name], args.moves, backend)
            full = time_full_renders(BUILDERS[name], n_base)
            rebuild = time_full_redraws(BUILDERS[name], n_base)
        med_up, med_full = statistics.median(up) * 1e3, statistics.median(full) * 1e3
        med_rebuild = statistics.median(rebuild) * 1e3
        p90 = float(np.percentile(up, 90)) * 1e3
        rows.append((name, med_up, med_full))
        print(f"{name:<20} {med_up:>9.1f} {p90:>7.1f} {med_full:>14.1f} {med_full / med_up:>7.1f}×"
              f" {med_rebuild:>17.1f} {med_rebuild / med_up:>7.1f}× {set_ms:>12}")
        sys.stdout.flush()
    slowest = max(r[1] for r in rows)
    speedup = min(r[2] / r[1] for r in rows)
    ok = slowest <= 30.0 and speedup >= 2.5
    print(f"targets (median <= 30 ms, speed-up >= 2.5×): {'met' if ok else 'NOT met'}")
    print(f"slowest median update: {slowest:.1f} ms; smallest speed-up over full redraw: {speedup:.1f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
