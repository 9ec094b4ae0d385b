"""Affine controls on the static site (``tools/site.py``): frames stored as a basis, not a product.

An explorer may declare fast sliders ``affine=("v1", ..., "vm")`` (``Explorer(affine=...)``):
for fixed values of its other controls, every array and readout number of a frame is affine in
``v = (v1, ..., vm)`` and its texts and string readouts do not change. Then a page stores, per
setting ``s`` of the other live controls, ``B0 = frame(s, v=0)`` and ``Bj = frame(s, v=e_j) - B0``
and answers ``B0 + v1*B1 + ... + vm*Bm`` (``site.js``), ``1 + m`` frames instead of the product of
the sliders' steps. Entries with every ``Bj == 0`` (the weights, the scores, ...) are stored once,
as before; only the others ("affine keys" and readout columns) are stored as a float64 basis.

**The check** (:func:`affine_basis`, at build time, fails the build loudly): for every setting
``s`` and ``checks`` random ``v`` (each ``vj`` a step of its slider), ``frame(s, v)`` is computed
afresh in float64 and compared with the combination, evaluated as the page evaluates it
(``p = B0; p += v1*B1; ...``, each product and sum rounded to float64). Entries that the
declaration says do not move (every ``Bj == 0``), the texts and the strings must be *equal*.
The others must agree within ``tol = 4 (m + 1) u M`` with ``u = 2**-53`` and ``M = |frame(s, v)|
+ |B0| + sum_j |vj| |Bj|`` (elementwise). Why that bound: the page's sum of ``m + 1`` rounded
products errs by at most ``gamma_{m+1} M ~ (m + 1) u M`` (the standard bound for a dot product,
Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1); the frames it is built from,
``frame(s, 0)`` and ``frame(s, e_j)`` (weighted by ``1 + sum |vj|`` and ``|vj|``), and the fresh
``frame(s, v)`` each carry their own rounding, a few ``u`` of their size when the frame is a short
formula like ``a @ v``; ``4 (m + 1) u`` leaves room for those. A frame that is not affine (a
``v**2``) misses by ``O(1)`` of ``M``, fifteen orders of magnitude over the bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

U = 2.0**-53  # float64's unit roundoff

__all__ = ["AffineError", "AffineBasis", "affine_basis", "bound", "pack_affine"]


class AffineError(ValueError):
    """An explorer's ``affine=`` declaration does not hold for its frames."""


def bound(m: int) -> float:
    """The check's tolerance, relative to ``M`` (see the module doc), for ``m`` affine sliders."""
    return 4 * (m + 1) * U


@dataclass
class AffineBasis:
    """The basis of every setting: ``B[f, b]`` the flat float64 frame (array keys in ``keys``
    order, then the readout numbers) of setting ``f``, ``b = 0`` for ``B0``, ``b = j`` for
    ``Bj``; ``akeys`` the array keys and ``rcols`` the readout columns that move with ``v``;
    ``worst`` the largest ``|frame - combination| / (u M)`` the check saw (0: exact)."""

    names: tuple[str, ...]
    keys: list[tuple[str, int]]
    B: Any
    akeys: list[str]
    rcols: list[int]
    worst: float


def _f64(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64).reshape(-1)


def _flat(frame, keys, rspec) -> tuple[np.ndarray, tuple]:
    """A frame as one float64 vector (arrays in ``keys`` order, then the readout's numbers, in the
    order ``pack_frames`` sends them) and its texts and strings."""
    from attnlib.widgets.framework.readout import to_py

    parts = [_f64(frame.arrays[k]) for k, _ in keys]
    strs = []
    for s in rspec:
        v = to_py(frame.readout.get(s["label"]))
        if s["kind"] == "s":
            strs.append(str(v))
        else:
            parts.append(_f64(v))
    words = (tuple(sorted((str(k), str(t)) for k, t in frame.texts.items())), tuple(strs))
    return (np.concatenate(parts) if parts else np.zeros(0)), words


def affine_basis(ex, names, states: list[dict], *, checks: int = 3, seed: int = 0) -> AffineBasis:
    """The basis of ``ex``'s frames in its affine sliders ``names`` at each setting of
    ``states`` (compute values; those of ``names`` are ignored), checked (module doc).

    Raises :class:`AffineError` naming the builder, the entry, the setting and ``v`` where the
    declaration does not hold (or a frame is not finite)."""
    from attnlib.widgets.framework.frames import readout_spec

    names = tuple(names)
    who = ex.name or "this explorer"
    m = len(names)
    if not names or not states:
        raise ValueError(f"{who}: affine_basis needs affine names and settings, got {names}")
    first = ex.compute(**{**states[0], **dict.fromkeys(names, 0.0)})
    rspec = readout_spec(first)
    scene_keys = ex.scene.keys()
    keys = [
        (k, _f64(first.arrays[k]).size)
        for k in sorted(k for k, (_, f) in scene_keys.items() if f != "text")
    ]
    labels = [f"array {k!r}[{i}]" for k, n in keys for i in range(n)]
    labels += [
        f"readout {s['label']!r}[{i}]"
        for s in rspec
        if s["kind"] != "s"
        for i in range(int(np.prod(s["shape"])))
    ]
    axes = [np.asarray(ex._axes[n].values, dtype=np.float64) for n in names]
    rng = np.random.default_rng(seed)
    n, L = len(states), len(labels)
    B = np.empty((n, m + 1, L))
    F = np.empty((n, checks, L))
    V = np.stack([rng.choice(a, size=(n, checks)) for a in axes], -1)  # (n, checks, m)
    words: list[tuple] = []
    for f, st in enumerate(states):
        at0 = {**st, **dict.fromkeys(names, 0.0)}
        B[f, 0], w0 = _flat(ex.compute(**at0), keys, rspec)
        words.append(w0)
        for j, nj in enumerate(names):
            B[f, j + 1] = _flat(ex.compute(**{**at0, nj: 1.0}), keys, rspec)[0] - B[f, 0]
        for c in range(checks):
            v = {nj: float(V[f, c, j]) for j, nj in enumerate(names)}
            F[f, c], w = _flat(ex.compute(**{**st, **v}), keys, rspec)
            if w != w0:
                raise AffineError(
                    f"{who}: declared affine in {names}, but its texts or strings change with "
                    f"them: {w0} at v=0, {w} at {v} (other values {st})"
                )
    if not (np.isfinite(B).all() and np.isfinite(F).all()):
        raise AffineError(f"{who}: a frame has a non-finite number; affine {names} cannot hold")
    moving = (B[:, 1:] != 0).any(axis=(0, 1))  # (L,)
    # the combination as the page evaluates it (float64, in order)
    P = np.repeat(B[:, :1], checks, 1)
    Mag = np.abs(F) + np.abs(P)
    for j in range(m):
        term = V[:, :, j : j + 1] * B[:, j + 1 : j + 2]
        P = P + term
        Mag = Mag + np.abs(term)
    err = np.abs(F - P)
    fixed_bad = (~moving) & (F != B[:, :1]).any(axis=1)  # (n, L): must not move at all
    over = err > bound(m) * Mag
    over[:, :, ~moving] = False
    bad = np.argwhere(over)
    if fixed_bad.any() or len(bad):
        if fixed_bad.any():
            f, col = (int(i) for i in np.argwhere(fixed_bad)[0])
            c = int(np.argmax(F[f, :, col] != B[f, 0, col]))
            what = f"does not move with {names} at v=0, e_j but does at v"
        else:
            f, c, col = (int(i) for i in bad[0])
            what = f"is not affine in {names} (off by {err[f, c, col]:.3g}, bound {bound(m):.2g} M)"
        v = {nj: float(V[f, c, j]) for j, nj in enumerate(names)}
        raise AffineError(
            f"{who}: {labels[col]} {what}: frame {F[f, c, col]!r} but B0 + sum v_j Bj = "
            f"{P[f, c, col]!r} at {v} (other values {states[f]})"
        )
    scale = np.where(Mag > 0, U * Mag, 1.0)
    worst = float((err[:, :, moving] / scale[:, :, moving]).max(initial=0.0))
    akeys, o = [], 0
    for k, size in keys:
        if moving[o : o + size].any():
            akeys.append(k)
        o += size
    nar = sum(size for _, size in keys)
    rcols = [int(c) for c in np.flatnonzero(moving[nar:])]
    return AffineBasis(names, keys, B, akeys, rcols, worst)


def pack_affine(basis: AffineBasis, off: int) -> tuple[list[bytes], dict, int]:
    """The basis of the affine keys and readout columns as blob parts, starting at byte ``off``:
    ``(parts, layout, off)``. Per key (``"@readout"``: the moving readout columns): a float64
    table of its distinct vectors and an index ``(settings, 1 + m)`` in the narrowest unsigned
    type, row-major. ``layout``: ``{"names", "keys": [[key, size, table_off, table_len, width,
    index_off]], "rcols"}`` (``site.js``)."""
    n, m1, _ = basis.B.shape
    spans, o = {}, 0
    for k, size in basis.keys:
        spans[k] = (o, size)
        o += size
    wanted = [(k, *spans[k]) for k in basis.akeys]
    if basis.rcols:
        wanted.append(("@readout", -1, len(basis.rcols)))
    parts: list[bytes] = []
    layout: dict[str, Any] = {"names": list(basis.names), "keys": [], "rcols": basis.rcols}

    def put(data: bytes, align: int) -> int:
        nonlocal off
        pad = -off % align
        parts.append(b"\0" * pad)
        start = off + pad
        parts.append(data)
        off = start + len(data)
        return start

    for k, start, size in wanted:
        cols = (
            basis.B[:, :, o + np.asarray(basis.rcols)]
            if start < 0
            else basis.B[:, :, start : start + size]
        )
        rows = np.ascontiguousarray(cols.reshape(n * m1, size))
        uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        width = 1 if len(uniq) <= 256 else 2 if len(uniq) <= 65536 else 4
        t_off = put(np.ascontiguousarray(uniq).tobytes(), 8)
        ids = (
            np.asarray(inverse).reshape(-1).astype({1: np.uint8, 2: np.uint16, 4: np.uint32}[width])
        )
        i_off = put(ids.tobytes(), 4)
        layout["keys"].append([k, size, t_off, int(uniq.size), width, i_off])
    return parts, layout, off
