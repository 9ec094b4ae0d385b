"""The readout: the table of numbers beside an explorer's picture (``.attnlib-readout``).

``readout_html`` writes exactly what ``explorer.js`` writes for the same numbers: floats with
``digits`` decimals (never ``-0.000``), ints, ``True``/``False``, escaped strings; 1-D values
one row, 2-D values one row per row. The browser test compares the two.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["readout_html", "to_py", "value_kind"]


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
    s = f"{x:.{digits}f}"
    return f"{0.0:.{digits}f}" if float(s) == 0.0 else s


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
            rows.append([html.escape(name) if i == 0 else "", *(_fmt(c, kind, digits) for c in r)])
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
