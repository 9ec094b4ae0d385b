"""Vectorised tables over a slider axis (or a grid of sliders), computed and cached by the
framework.

A builder whose math is cheap per batch but costly per call (a query plane through attnlib, a
masked softmax per valid length) writes ONE function that takes a whole axis at once, and looks
its rows up in ``compute``::

    @grid_table(controls, "x", "y")                  # the joint grid of these two sliders
    def plane(x, y, scaled):                         # x, y: (N,) tensors; scaled: a plain value
        q = torch.stack([x, y], -1)                  # (N, 2): every grid query at once
        return dot_product_attention(q, k, v, scale=...)   # outputs with a leading N

    def compute(x, y, scaled):
        out, w = plane(x=x, y=y, scaled=scaled)      # the rows of this (x, y): (2,), (S,)

The grid's values come from the sliders themselves (:func:`~attnlib.widgets.framework.frames.
slider_axis`), so no builder re-derives them. The table of each setting of the other arguments
is computed on first use and kept (LRU, ``cache`` settings); a value off its axis's grid (set
from Python between two steps) makes a smaller table: that value along its axis, the full grids
along the others (cached apart, so they never evict a whole grid). Every lookup of a point returns
the row of the same batched call, so a frame set and ``compute`` agree to the bit.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from attnlib.widgets.framework.frames import slider_axis

__all__ = ["GridTable", "grid_table"]


def _as_axis(values: Sequence) -> torch.Tensor:
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)
    return torch.tensor(list(values), dtype=torch.long if ints else torch.float64)


def _key(v) -> float:
    return round(float(v), 9)  # a slider's step values are rounded to 10 decimals


class GridTable:
    """``fn`` over the joint grid of ``axes`` (``{name: step values}``), cached per setting of
    ``fn``'s other arguments; call it with keyword values to get one grid point's rows.

    ``fn(**{name: (N,) tensor}, **others)`` returns a tensor / array, or a tuple of them, each
    with a leading dimension N (the grid points, row-major over ``axes`` in order).
    """

    def __init__(self, axes: Mapping[str, Sequence], fn: Callable[..., Any], *, cache: int = 8):
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if not axes:
            raise ValueError("axes must name at least one axis {name: values}")
        self.names = list(axes)
        self.axes = {n: [v for v in axes[n]] for n in self.names}
        self._fn, self._cache_size = fn, cache
        self._tables: OrderedDict = OrderedDict()  # whole grids, per setting of the others
        self._partial: OrderedDict = OrderedDict()  # with an axis off its grid (see __call__)
        self._points = [_as_axis(self.axes[n]) for n in self.names]
        self._lookup = [{_key(v): i for i, v in enumerate(self.axes[n])} for n in self.names]

    def table(self, **others) -> Any:
        """The whole table at these other arguments (computed once, then cached)."""
        return self._table(self._points, (), others)

    def _table(self, points: list[torch.Tensor], off: tuple, others: Mapping[str, Any]) -> Any:
        key: Any = (off, tuple(sorted(others.items())))
        try:
            hash(key)
        except TypeError:  # an unhashable value (a list): its JSON text
            key = json.dumps([off, others], sort_keys=True, default=str)
        tables = self._partial if off else self._tables  # partial ones never evict whole ones
        if key in tables:
            tables.move_to_end(key)
            return tables[key]
        steps = [torch.arange(len(p)) for p in points]
        index = [i.reshape(-1) for i in torch.meshgrid(*steps, indexing="ij")]  # row-major
        grid = [p[i] for p, i in zip(points, index)]  # (N,) each
        out = self._fn(**dict(zip(self.names, grid)), **others)
        tables[key] = out
        while len(tables) > self._cache_size:
            tables.popitem(last=False)
        return out

    def __call__(self, **values) -> Any:
        """The rows of ``values``' point (``values`` holds every axis and every other argument
        of ``fn``).

        A value between two steps of an axis (set from Python) replaces that axis by itself: the
        table then spans the other axes' grids at that value (e.g. the 61 steps of ``y`` at
        ``x = 0.123``), computed in one call too and cached the same way.
        """
        missing = sorted(set(self.names) - set(values))
        if missing:
            raise KeyError(f"a table lookup needs the axes {missing}; got {sorted(values)}")
        others = {k: v for k, v in values.items() if k not in self.names}
        points, off, flat = [], [], 0
        for n, p, lookup in zip(self.names, self._points, self._lookup):
            i = lookup.get(_key(values[n]))
            if i is None:  # off this axis's grid: the axis is this one value
                p, i = torch.tensor([values[n]], dtype=p.dtype), 0
                off.append((n, float(values[n])))
            points.append(p)
            flat = flat * len(p) + i
        out = self._table(points, tuple(off), others)
        return tuple(t[flat] for t in out) if isinstance(out, tuple) else out[flat]

    def clear(self) -> None:
        """Forget every cached table."""
        self._tables.clear()
        self._partial.clear()


def grid_table(controls: Mapping[str, Any], *names: str, cache: int = 8):
    """Decorator: a :class:`GridTable` of a function over the joint grid of the sliders
    ``names`` of ``controls`` (their own steps)."""
    unknown = sorted(set(names) - set(controls))
    if unknown or not names:
        raise KeyError(f"grid_table names unknown controls {unknown}; have {sorted(controls)}")

    def wrap(fn):
        return GridTable({n: slider_axis(controls[n]).values for n in names}, fn, cache=cache)

    return wrap
