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
    """The basis of every setting, for the keys that move: ``blocks[key] = (table, ids)``, the
    distinct float64 vectors of that key (``"@readout"``: the moving readout columns ``rcols``)
    and ``ids`` ``(settings, 1 + m)`` the row of ``B0, B1..Bm`` of each setting; ``akeys`` the
    array keys that move with ``v``; ``worst`` the largest ``|frame - combination| / (u M)`` the
    check saw (0: exact)."""

    names: tuple[str, ...]
    keys: list[tuple[str, int]]
    blocks: dict[str, tuple[Any, Any]]
    akeys: list[str]
    rcols: list[int]
    worst: float

    def block(self, key: str):
        """``(settings, 1 + m, size)``: ``B0, B1..Bm`` of ``key`` at every setting."""
        table, ids = self.blocks[key]
        return table[ids]


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


class _Check:
    """The check of the module doc, fed a chunk of settings at a time (bounded memory): keeps,
    per entry, whether it moves, the first setting where it breaks each rule, and the worst
    error seen."""

    def __init__(self, who: str, names: tuple, labels: list[str], m: int) -> None:
        self.who, self.names, self.labels, self.m = who, names, labels, m
        L = len(labels)
        self.moving = np.zeros(L, dtype=bool)
        self.worst = np.zeros(L)
        self.fixed_bad: dict[int, tuple] = {}  # entry -> (setting, check, F, P, err) first seen
        self.over: dict[int, tuple] = {}  # entry -> (setting, check, F, P, err)

    def add(self, f0: int, B, F, V) -> None:
        if not (np.isfinite(B).all() and np.isfinite(F).all()):
            raise AffineError(f"{self.who}: a frame has a non-finite number; affine cannot hold")
        self.moving |= (B[:, 1:] != 0).any(axis=(0, 1))
        P = np.repeat(B[:, :1], F.shape[1], 1)  # the combination as the page evaluates it
        Mag = np.abs(F) + np.abs(P)
        for j in range(self.m):
            term = V[:, :, j : j + 1] * B[:, j + 1 : j + 2]
            P = P + term
            Mag = Mag + np.abs(term)
        err = np.abs(F - P)
        # first offences only, per entry (an entry that moves cannot break the "fixed" rule)
        fixed = F != B[:, :1]
        fixed[:, :, self.moving] = False
        _first(fixed, self.fixed_bad, f0, F, P, err)
        _first(err > bound(self.m) * Mag, self.over, f0, F, P, err)
        scale = np.where(Mag > 0, U * Mag, 1.0)
        self.worst = np.maximum(self.worst, (err / scale).max(axis=(0, 1), initial=0.0))

    def raise_if_bad(self, states: list[dict], V) -> None:
        fixed = sorted(c for c in self.fixed_bad if not self.moving[c])
        over = sorted(c for c in self.over if self.moving[c])
        if not fixed and not over:
            return
        if fixed:
            col = fixed[0]
            f, c, got, want, _ = self.fixed_bad[col]
            what = f"does not move with {self.names} at v=0, e_j but does at v"
        else:
            col = over[0]
            f, c, got, want, e = self.over[col]
            what = f"is not affine in {self.names} (off by {e:.3g}, bound {bound(self.m):.2g} M)"
        v = {nj: float(V[f, c, j]) for j, nj in enumerate(self.names)}
        raise AffineError(
            f"{self.who}: {self.labels[col]} {what}: frame {got!r} but B0 + sum v_j Bj = "
            f"{want!r} at {v} (other values {states[f]})"
        )


def _first(mask, store: dict, f0: int, F, P, err) -> None:
    """For each entry with a ``True`` in ``mask`` ``(settings, checks, L)`` not in ``store``:
    its first ``(setting, check, F, P, err)``."""
    for col in np.flatnonzero(mask.any(axis=(0, 1))):
        col = int(col)
        if col not in store:
            f, c = (int(i) for i in np.argwhere(mask[:, :, col])[0])
            store[col] = (f0 + f, c, F[f, c, col], P[f, c, col], err[f, c, col])


def _basis_rows(ex, names, st, keys, rspec):
    """``(B (1 + m, L), words)`` of one setting: ``B0 = frame(v = 0)``, ``Bj = frame(e_j) - B0``."""
    at0 = {**st, **dict.fromkeys(names, 0.0)}
    b0, words = _flat(ex.compute(**at0), keys, rspec)
    rows = [b0] + [_flat(ex.compute(**{**at0, nj: 1.0}), keys, rspec)[0] - b0 for nj in names]
    return np.stack(rows), words


def _moving_blocks(ex, names, states, keys, rspec, moving):
    """The second pass: ``(akeys, rcols, blocks)``, the basis of the entries that move
    (``moving`` ``(L,)``), each key's distinct float64 vectors stored once (``AffineBasis``)."""
    m, n = len(names), len(states)
    spans, o = {}, 0
    for k, size in keys:
        spans[k] = np.arange(o, o + size)
        o += size
    akeys = [k for k, _ in keys if moving[spans[k]].any()]
    rcols = [int(c) for c in np.flatnonzero(moving[o:])]
    cols = {k: spans[k] for k in akeys}
    if rcols:
        cols["@readout"] = o + np.asarray(rcols)
    tables: dict[str, dict[bytes, int]] = {k: {} for k in cols}
    ids = {k: np.empty((n, m + 1), dtype=np.uint32) for k in cols}
    for f, st in enumerate(states):  # the second pass: the moving entries' basis, deduplicated
        B, _ = _basis_rows(ex, names, st, keys, rspec)
        for k, at in cols.items():
            for b in range(m + 1):
                ids[k][f, b] = tables[k].setdefault(B[b, at].tobytes(), len(tables[k]))
    blocks = {
        k: (
            np.frombuffer(b"".join(tables[k]), dtype=np.float64).reshape(len(tables[k]), -1),
            ids[k],
        )
        for k in cols
    }
    return akeys, rcols, blocks


def affine_basis(
    ex, names, states: list[dict], *, keys=None, checks: int = 3, seed: int = 0, chunk: int = 256
) -> AffineBasis:
    """The basis of ``ex``'s frames in its affine sliders ``names`` at each setting of
    ``states`` (compute values; those of ``names`` are ignored), checked (module doc); ``keys``
    ``[(key, floats)]`` the arrays of a frame (default: the scene's, sorted).

    Two passes over the settings, ``chunk`` at a time (memory bounded by a chunk, not by the
    settings): the check, which finds the entries that move; then the basis of those alone,
    each key's distinct vectors stored once.

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
    if keys is None:
        scene_keys = ex.scene.keys()
        keys = [
            (k, _f64(first.arrays[k]).size)
            for k in sorted(k for k, (_, f) in scene_keys.items() if f != "text")
        ]
    keys = [(k, int(size)) for k, size in keys]
    labels = [f"array {k!r}[{i}]" for k, n in keys for i in range(n)]
    labels += [
        f"readout {s['label']!r}[{i}]"
        for s in rspec
        if s["kind"] != "s"
        for i in range(int(np.prod(s["shape"])))
    ]
    axes = [np.asarray(ex.axes[n], dtype=np.float64) for n in names]
    rng = np.random.default_rng(seed)
    n, L = len(states), len(labels)
    V = np.stack([rng.choice(a, size=(n, checks)) for a in axes], -1)  # (n, checks, m)
    check = _Check(who, names, labels, m)
    for f0 in range(0, n, chunk):
        part = states[f0 : f0 + chunk]
        B = np.empty((len(part), m + 1, L))
        F = np.empty((len(part), checks, L))
        for f, st in enumerate(part):
            B[f], w0 = _basis_rows(ex, names, st, keys, rspec)
            for c in range(checks):
                v = {nj: float(V[f0 + f, c, j]) for j, nj in enumerate(names)}
                F[f, c], w = _flat(ex.compute(**{**st, **v}), keys, rspec)
                if w != w0:
                    raise AffineError(
                        f"{who}: declared affine in {names}, but its texts or strings change with "
                        f"them: {w0} at v=0, {w} at {v} (other values {st})"
                    )
        check.add(f0, B, F, V[f0 : f0 + chunk])
    check.raise_if_bad(states, V)
    moving = check.moving
    akeys, rcols, blocks = _moving_blocks(ex, names, states, keys, rspec, moving)
    worst = float(check.worst[moving].max(initial=0.0))
    return AffineBasis(names, keys, blocks, akeys, rcols, worst)


def pack_affine(basis: AffineBasis, put) -> dict:
    """The basis as blob parts, placed by ``put(data, align) -> offset``; returns its layout
    ``{"names", "keys": [[key, size, table_off, table_floats, width, index_off]], "rcols"}``
    (``tools/site_state.py``'s module doc): per moving key (``"@readout"``: the moving readout
    columns) its float64 table and the ids ``(settings, 1 + m)``, row-major, in the narrowest
    unsigned type."""
    layout: dict[str, Any] = {"names": list(basis.names), "keys": [], "rcols": basis.rcols}
    for k, (table, ids) in basis.blocks.items():
        width = 1 if len(table) <= 256 else 2 if len(table) <= 65536 else 4
        t_off = put(np.ascontiguousarray(table).tobytes(), 8)
        col = ids.reshape(-1).astype({1: np.uint8, 2: np.uint16, 4: np.uint32}[width])
        i_off = put(col.tobytes(), width)
        layout["keys"].append([k, table.shape[1], t_off, int(table.size), width, i_off])
    return layout
