"""The readout: the table of numbers beside an explorer's picture (``.attnlib-readout``).

``readout_html`` writes exactly what ``explorer.js`` writes for the same numbers: floats with
``digits`` decimals by JavaScript's ``toFixed`` rule (the exact binary value rounded half away
from zero, so 1/16 = 0.0625 reads 0.063 on both sides; Python's own ``f"{x:.3f}"`` rounds half to
even and would print 0.062), never ``-0.000``; ints, ``True``/``False``, escaped strings; 1-D values
one row, 2-D values one row per row. The browser test compares the two.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

import numpy as np

from attnlib.util.i18n import gettext

__all__ = ["readout_html", "to_fixed", "to_py", "value_kind", "Key", "shown_name"]


class Key(str):
    """A readout key that code reads (the English text, as it is) carrying the name the reader is
    shown, made when the builder runs: for a key built from the builder's own numbers (``"max
    |row 1 - row 4| ('the'), all heads"``), which a catalog cannot hold as one ``N_`` key."""

    shown: str

    def __new__(cls, key: str, shown: str) -> Key:
        self = super().__new__(cls, key)
        self.shown = str(shown)
        return self

    def __reduce__(self):  # pickled with its shown name (the site builds in worker processes)
        return (Key, (str(self), self.shown))


def shown_name(key) -> str:
    """The name the readout shows for ``key``: a :class:`Key`'s own, else ``gettext(key)`` (an
    ``N_`` key in the current language; any other key as it is)."""
    shown = getattr(key, "shown", None)
    return shown if isinstance(shown, str) else gettext(str(key))


def to_py(x) -> Any:
    """``x`` as plain Python: tensors (floats in float64) and arrays as nested lists, numpy scalars
    as numbers; anything else as it is."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu")
        x = x.double() if x.is_floating_point() else x
        return x.tolist()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def value_kind(v) -> str:
    """The readout kind of a plain value (from :func:`to_py`): ``"b"`` bool, ``"s"`` str, ``"i"``
    integers, ``"f"`` floats (a list: its dtype)."""
    if isinstance(v, bool):
        return "b"
    if isinstance(v, str):
        return "s"
    a = np.asarray(v)
    if a.dtype == bool:
        return "b"
    return "i" if np.issubdtype(a.dtype, np.integer) else "f"


def _fmt(x, kind: str, digits: int) -> str:
    if kind == "s":
        return html.escape(str(x))
    if kind == "b":
        return "True" if x else "False"
    if kind == "i":
        return str(int(x))
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = to_fixed(x, digits)
    return to_fixed(0.0, digits) if float(s) == 0.0 else s


def to_fixed(x: float, digits: int) -> str:
    """``x`` (finite) with ``digits`` decimals as JavaScript's ``x.toFixed(digits)`` writes it:
    the exact binary value of ``x`` (``Decimal(x)`` is exact) rounded to the nearest multiple of
    ``10**-digits``, a tie going away from zero (``ROUND_HALF_UP`` in :mod:`decimal`), e.g.
    ``to_fixed(0.0625, 3) == "0.063"`` and ``to_fixed(-0.0625, 3) == "-0.063"``, while
    ``to_fixed(1.0005, 3) == "1.000"`` (1.0005 is stored as 1.000499999...)."""
    x = float(x)
    if abs(x) >= 1e21:  # toFixed then writes String(x), e.g. "1e+21", as Python's repr does
        return repr(x)
    d = Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP, context=_EXACT)
    return f"{d:.{digits}f}"


_EXACT = Context(prec=64)  # |x| < 1e21 and digits <= 20 (toFixed's range) need < 42 digits


def readout_html(
    readout: Mapping[str, Any], *, columns: Sequence[str] | None = None, digits: int = 3
) -> str:
    """The readout table as HTML, exactly as the front end writes it into ``.attnlib-readout``."""
    rows = []
    for name, value in readout.items():
        kind, v = value_kind(to_py(value)), to_py(value)
        grid = (
            v
            if isinstance(v, list) and v and isinstance(v[0], list)
            else [v if isinstance(v, list) else [v]]
        )
        for i, r in enumerate(grid):
            rows.append(
                [
                    html.escape(shown_name(name)) if i == 0 else "",
                    *(_fmt(c, kind, digits) for c in r),
                ]
            )
    return _table(rows, columns)


def _table(rows, columns) -> str:
    head = (
        ("<tr><th></th>" + "".join(f"<th>{html.escape(c)}</th>" for c in columns) + "</tr>")
        if columns
        else ""
    )
    body = "".join(
        "<tr><th>" + r[0] + "</th>" + "".join(f"<td>{c}</td>" for c in r[1:]) + "</tr>"
        for r in rows
    )
    return f"<table class='attnlib-table'>{head}{body}</table>"
