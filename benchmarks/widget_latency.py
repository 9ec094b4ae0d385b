"""How fast does each interactive explorer answer a slider move?

Run: ``python benchmarks/widget_latency.py``.

For every explorer in ``attnlib.widgets.BUILDERS`` (each drawn in the browser from frames the
kernel computes) we time, over the same ~30 random control settings (seeded), and print the
medians side by side:

* **update**: ``explorer.set(name=value)`` with a front end attached (its messages discarded):
  ``compute`` at the new values, the frame packed and sent, and the frame sets the front end
  lacks (cached ones are re-sent). A drag of a slider in the browser costs the kernel nothing at
  all: it only switches among frames the front end already holds.
* **full redraw** (the baseline of the last line): the same state drawn by matplotlib
  (``explorer.png()``), the least that ``interact`` + ``%matplotlib inline`` does per move.
* **rebuild + redraw** (what ``interact`` + ``%matplotlib inline`` does in full): a new explorer
  plus its PNG.
* **frame set ms**: the time to compute one whole uncached frame set (what a slow control's first
  change costs, after its first frame, which shows at once).

Targets: median update <= 30 ms, and at least 2.5x faster than the full redraw. The last line
reads ``slowest median update: X ms; smallest speed-up over full redraw: Y×``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import numpy as np


def _random_value(control, rng):
    """A random value inside ``control``'s range
    (min, max or a random one; any ipywidgets control).
    """
    from attnlib.widgets.framework.testing import control_values

    vals = control_values(control, rng, n_random=3)
    return vals[int(rng.integers(len(vals)))]


def moves(explorer, n, seed=0):
    """``n`` single-control moves ``(name, value)``, cycling through the controls."""
    rng = np.random.default_rng(seed)
    names = list(explorer.controls)
    return [
        (names[i % len(names)], _random_value(explorer.controls[names[i % len(names)]], rng))
        for i in range(n)
    ]


def _is_canvas(ex) -> bool:
    from attnlib.widgets.framework.explorer import Explorer

    return isinstance(ex, Explorer)


def time_canvas(
    builder, n: int, n_base: int
) -> tuple[list[float], list[float], list[float], float]:
    """update, full redraw (PNG), rebuild + PNG, and one uncached frame set, for a
    canvas explorer.
    """
    ex = builder()
    ex.view.send = lambda content, buffers=None: (
        None
    )  # a front end is attached (messages discarded)
    ex._on_msg(ex.view, {"type": "ready"}, [])
    seq = moves(ex, n + 3)
    up, full, rebuild = [], [], []
    for i, (name, value) in enumerate(seq):
        t0 = time.perf_counter()
        ex.set(**{name: value})
        t1 = time.perf_counter()
        if i >= 3:
            up.append(t1 - t0)
    for i, (name, value) in enumerate(moves(ex, n_base + 1)):
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-n", "--moves", type=int, default=30, help="moves per builder (default 30)"
    )
    parser.add_argument(
        "--baseline-moves",
        type=int,
        default=None,
        help="full redraws per builder (default: --moves)",
    )
    parser.add_argument(
        "--only", nargs="*", default=None, help="builder names to time (default: all)"
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    from attnlib.widgets import BUILDERS

    names = sorted(BUILDERS) if args.only is None else args.only
    n_base = args.baseline_moves or args.moves
    rows = []
    print(
        f"widget latency: median over {args.moves} moves per builder; "
        f"baselines: {n_base} full redraws + PNG, {n_base} rebuilds + PNG"
    )
    header = (
        f"{'builder':<20} {'update ms':>9} {'p90 ms':>7} {'full redraw ms':>14} {'speed-up':>8}"
        f" {'rebuild+redraw ms':>17} {'speed-up':>8} {'frame set ms':>12}"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        gc.collect()
        up, full, rebuild, set_s = time_canvas(BUILDERS[name], args.moves, n_base)
        set_ms = f"{set_s * 1e3:.0f}"
        med_up, med_full = statistics.median(up) * 1e3, statistics.median(full) * 1e3
        med_rebuild = statistics.median(rebuild) * 1e3
        p90 = float(np.percentile(up, 90)) * 1e3
        rows.append((name, med_up, med_full))
        print(
            f"{name:<20} {med_up:>9.1f} {p90:>7.1f} {med_full:>14.1f} {med_full / med_up:>7.1f}×"
            f" {med_rebuild:>17.1f} {med_rebuild / med_up:>7.1f}× {set_ms:>12}"
        )
        sys.stdout.flush()
    slowest = max(r[1] for r in rows)
    speedup = min(r[2] / r[1] for r in rows)
    ok = slowest <= 30.0 and speedup >= 2.5
    print(f"targets (median <= 30 ms, speed-up >= 2.5×): {'met' if ok else 'NOT met'}")
    print(
        f"slowest median update: {slowest:.1f} ms; "
        f"smallest speed-up over full redraw: {speedup:.1f}×"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
