"""Helpers for tests and benchmarks of explorers: control sweeps and decoding what is sent to the
browser.

``control_values(control)`` gives values to try for one control (min, max, random ones);
``decode_set(header, buffers)`` turns a frame set, as :meth:`Explorer.frame_set` sends it, back
into ``[(values, arrays, readout numbers)]`` so a test can check every frame against ``compute``.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["control_values", "decode_set", "sweep"]


def control_values(control, rng: np.random.Generator | None = None, n_random: int = 3) -> list:
    """Values to try for one control: its minimum, its maximum and ``n_random`` random ones.

    Booleans give ``[False, True]``; selections (dropdowns, selection sliders) every option
    (or ``n_random + 2`` of them, min and max included, when there are many).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    if isinstance(control.value, bool):
        return [False, True]
    if hasattr(control, "options") and hasattr(control, "index"):
        opts = [o[1] if isinstance(o, tuple) else o for o in control.options]
        if len(opts) <= n_random + 2:
            return opts
        picks = [
            0,
            len(opts) - 1,
            *rng.choice(np.arange(1, len(opts) - 1), n_random, replace=False),
        ]
        return [opts[int(i)] for i in picks]
    lo, hi = control.min, control.max
    base = getattr(control, "base", None)
    if base is not None:  # FloatLogSlider: min/max are exponents
        return [
            float(base**lo),
            float(base**hi),
            *(float(base ** rng.uniform(lo, hi)) for _ in range(n_random)),
        ]
    if isinstance(control.value, tuple):  # range sliders
        if isinstance(lo, int):
            pairs = [tuple(sorted(rng.integers(lo, hi + 1, 2).tolist())) for _ in range(n_random)]
        else:
            pairs = [tuple(sorted(rng.uniform(lo, hi, 2).tolist())) for _ in range(n_random)]
        return [(lo, lo), (hi, hi), (lo, hi), *pairs]
    if isinstance(lo, int) and isinstance(control.value, int):
        return [lo, hi, *(int(v) for v in rng.integers(lo, hi + 1, n_random))]
    return [float(lo), float(hi), *(float(v) for v in rng.uniform(lo, hi, n_random))]


def decode_set(header: dict, buffers) -> list[tuple[dict, dict, np.ndarray]]:
    """``[(control values, {key: float32 array}, float64 readout numbers)]`` for every frame of a
    set.
    """
    f32 = np.frombuffer(buffers[0], dtype=np.float32)
    f64 = np.frombuffer(buffers[1], dtype=np.float64)
    keys = sorted(header["arrays"])
    sizes = [int(np.prod(header["arrays"][k])) for k in keys]
    stride = sum(sizes)
    rstride = sum(int(np.prod(s["shape"])) for s in header["readout"] if s["kind"] != "s")
    combos = list(itertools.product(*header["axes"])) if header.get("axes") else [()]
    out = []
    for i, combo in enumerate(combos):
        block, arrays, o = f32[i * stride : (i + 1) * stride], {}, 0
        for k, n in zip(keys, sizes):
            arrays[k] = block[o : o + n].reshape(header["arrays"][k])
            o += n
        values = {**header["fixed"], **dict(zip(header.get("names", []), combo))}
        out.append((values, arrays, f64[i * rstride : (i + 1) * rstride]))
    return out


def readout_numbers(frame, spec) -> np.ndarray:
    """A frame's readout as the float64 numbers the front end gets (strings left out)."""
    from attnlib.widgets.framework.readout import to_py

    parts = [
        np.asarray(to_py(frame.readout[s["label"]]), dtype=np.float64).reshape(-1)
        for s in spec
        if s["kind"] != "s"
    ]
    return np.concatenate(parts) if parts else np.zeros(0)


def sweep(explorer, rng: np.random.Generator | None = None, n_random: int = 3):
    """Yield ``(name, value, state)`` setting each control in turn to its :func:`control_values`."""
    rng = rng if rng is not None else np.random.default_rng(0)
    for name, control in explorer.controls.items():
        for value in control_values(control, rng, n_random):
            yield name, value, explorer.set(**{name: value})
