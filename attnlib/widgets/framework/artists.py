"""The artists of a :class:`~attnlib.widgets.framework.scene.Scene`: the vocabulary a panel draws.

Every numeric field of an artist is static (a number / nested list / tensor / array) or dynamic (a
string naming an array of the explorer's :class:`~attnlib.widgets.framework.scene.Frame`); the
vocabulary and an example are in :mod:`attnlib.widgets.framework.scene`. ``to_json`` is what the
browser front end (``explorer.js``) draws; :mod:`attnlib.widgets.framework.render` draws the same
artists with matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, cast

import numpy as np

__all__ = [
    "Heatmap",
    "Bars",
    "Points",
    "Line",
    "Segments",
    "Arrows",
    "Polygon",
    "Text",
    "Artist",
    "mpl_cmap",
    "CMAPS",
    "HATCH_FILL",
]

CMAPS = ("viridis", "cividis", "greys")
HATCH_FILL = "#d9d9d9"


def _num(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


class Artist:
    """The base of every artist. A subclass names its ``kind`` (what ``explorer.js`` and
    :mod:`~attnlib.widgets.framework.render` draw it by) and its numeric fields with the shape
    each must have, in its class line: ``class Bars(Artist, kind="bars", shapes={"heights": "1D",
    "x": "1D"})`` (shapes: ``"N2"`` (N, 2), ``"N22"`` (N, 2, 2), ``"1D"``, ``"2D"``)."""

    kind: ClassVar[str] = ""
    shapes: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, *, kind: str = "", shapes: dict[str, str] | None = None, **kw):
        super().__init_subclass__(**kw)
        cls.kind, cls.shapes = kind, dict(shapes or {})

    @property
    def numeric(self) -> tuple[str, ...]:
        """The numeric fields: each static (a number, list, tensor) or dynamic (a frame key)."""
        return tuple(self.shapes)

    def dynamic_keys(self) -> list[str]:
        keys = [getattr(self, f) for f in self.numeric if isinstance(getattr(self, f), str)]
        key = getattr(self, "key", None)
        if key:
            keys.append(key)
        return keys

    @property
    def dynamic(self) -> bool:
        return bool(self.dynamic_keys())

    def check(self, name: str, value) -> np.ndarray:
        a = _num(value)
        want = self.shapes.get(name)  # None: any shape
        ok = {
            "N2": a.ndim == 2 and a.shape[-1] == 2,
            "N22": a.ndim == 3 and a.shape[1:] == (2, 2),
            "2D": a.ndim == 2,
            "1D": a.ndim == 1,
            None: True,
        }[want]
        if not ok and want is not None:
            need = {"N2": "(N, 2)", "N22": "(N, 2, 2)", "2D": "2-D", "1D": "1-D"}[want]
            raise ValueError(f"{self.kind}.{name} must have shape {need}, got shape {a.shape}")
        return a

    def to_json(self) -> dict:
        from matplotlib.colors import to_hex

        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(cast(Any, self)):  # every artist is a dataclass
            v = getattr(self, f.name)
            if f.name in self.numeric and v is not None:
                if isinstance(v, str):
                    out[f.name] = {"key": v}
                else:
                    a = self.check(f.name, v)
                    out[f.name] = {
                        "shape": list(a.shape),
                        "data": [float(t) for t in a.reshape(-1)],
                    }
            elif f.name in ("color", "edge") and v is not None:
                out[f.name] = to_hex(v)
            elif f.name == "colors" and v is not None:
                out[f.name] = [to_hex(c) for c in v]
            else:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


@dataclass
class Heatmap(Artist, kind="heatmap", shapes={"values": "2D", "hidden": "2D"}):
    values: Any
    vmin: float = 0.0
    vmax: float = 1.0
    cmap: str = "viridis"
    hidden: Any = None
    annotate: bool = False
    digits: int = 2
    colorbar: bool = False

    def __post_init__(self):
        if self.cmap not in CMAPS:
            raise ValueError(f"Heatmap cmap must be one of {CMAPS}, got {self.cmap!r}")
        if not self.vmax > self.vmin:
            raise ValueError(f"Heatmap needs vmax > vmin, got vmin={self.vmin}, vmax={self.vmax}")


@dataclass
class Bars(Artist, kind="bars", shapes={"heights": "1D", "x": "1D"}):
    heights: Any
    x: Any = None
    width: float = 0.8
    color: str = "C0"
    colors: Sequence[str] | None = None
    bottom: float = 0.0
    label: str | None = None


@dataclass
class Points(Artist, kind="points", shapes={"xy": "N2"}):
    xy: Any
    color: str = "C0"
    size: float = 5.0
    marker: str = "o"
    filled: bool = True
    labels: Sequence[str] | None = None
    label: str | None = None

    def __post_init__(self):
        if self.marker not in ("o", "s", "^", "*"):
            raise ValueError(f"Points marker must be 'o', 's', '^' or '*', got {self.marker!r}")


@dataclass
class Line(Artist, kind="line", shapes={"xy": "N2"}):
    xy: Any
    color: str = "C0"
    width: float = 1.5
    dash: bool = False
    label: str | None = None


@dataclass
class Segments(Artist, kind="segments", shapes={"xy": "N22", "widths": "1D"}):
    xy: Any
    color: str = "0.4"
    width: float = 1.0
    widths: Any = None


@dataclass
class Arrows(Artist, kind="arrows", shapes={"xy": "N22"}):
    xy: Any
    color: str = "C0"
    width: float = 1.5


@dataclass
class Polygon(Artist, kind="polygon", shapes={"xy": "N2"}):
    xy: Any
    color: str = "C2"
    alpha: float = 0.15
    edge: str | None = None


@dataclass
class Text(Artist, kind="text"):
    x: float
    y: float
    text: str = ""
    key: str | None = None
    color: str = "black"
    size: float = 9.0
    ha: str = "left"
    va: str = "center"
    axes: bool = False


def mpl_cmap(name: str) -> str:
    """matplotlib's name of the scene colour map ``name`` (one of :data:`CMAPS`)."""
    return {"greys": "Greys"}.get(name, name)
