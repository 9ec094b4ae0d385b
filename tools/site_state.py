"""An explorer's state space for the static site: its frames, packed into one blob, and its reader.

:func:`explorer_state_space` runs five named steps on ``BUILDERS[name](**args)`` (public API only):

1. :func:`discover_controls`: every control, its values as ``compute`` gets them, its labels.
2. :func:`choose_live`: which controls are live (in their order, a group of sliders precomputed
   jointly counting as one, while the product of their values stays under ``max_frames`` and the
   readout numbers under ``max_bytes``); the others are shown fixed at their notebook value.
3. :func:`gather_tables`: every frame of the product, each array key's distinct float32 values
   stored once in a table and an index column of ids per frame (``np.unique``, one call per key
   and setting of the outer controls). Sliders declared ``affine=`` do not join the product: their
   moving entries become a float64 basis (:mod:`tools.site_affine`).
4. :func:`pack_blob`: the readout numbers at the digits shown (:func:`readout_columns`), the tables,
   the index and the basis, each aligned, and the **layout** that says where each lies.
5. :func:`build_spec`: the JSON the page reads (controls, traits, layout).

The layout (``spec["layout"]``, version :data:`LAYOUT_VERSION`) is the contract between this
file, :mod:`tools.site_affine` and the page (``tools/site_assets/site.js``). Its one reader outside
the browser is :func:`decode_blob`, which the fast tests use to check that every explorer's blob
gives back ``compute``'s frames (``tests/test_site.py``).

**Layout, version 2.** Offsets are bytes into the inflated blob; every typed array starts at a
multiple of its width.

- ``readout``: per readout number (in ``pack_frames`` order) ``[code, offset, rows, div]``: a
  column of ``rows`` numbers of type ``code`` (``i1 i2 i4``: integers, the number is the stored one
  divided by ``div``; ``f8``: float64).
- ``tables``: per array key (``spec["keys"]`` order) ``[key, offset, floats]``: its distinct values
  as float32, ``size`` floats each.
- ``index``: per key, then the readout, texts and strings: ``[width, offset, frames]``, the id of
  each frame's value in its table (uint of ``width`` bytes; ``width`` 0: every id is 0).
- ``affine``: ``None``, or ``{"names", "keys": [[key, size, table_offset, table_floats, width,
  index_offset]], "rcols"}``: per moving key (``"@readout"``: the readout columns ``rcols``) a
  float64 table and the ids of ``(B0, B1..Bm)`` of each frame, row-major; the entry shown is
  ``B0 + v1*B1 + ... + vm*Bm`` summed in that order in float64, then stored as float32.

A frame's number is the row-major (C order) index of its controls' indices over ``spec["dims"]``.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tools import site_affine
from tools.site_words import words_traits

#: The blob layout's version; :func:`decode_blob` and ``site.js`` refuse any other.
LAYOUT_VERSION = 2
#: The most frames an explorer's live state space may hold (build time, page size).
MAX_FRAMES = 100_000
#: The most bytes an explorer's block may take in its page (its frames, gzipped, base64).
EXPLORER_BUDGET = 6_000_000
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}
_INTS = {"i1": np.int8, "i2": np.int16, "i4": np.int32}
#: Readout columns stored as integers: the narrowest signed type that holds them.
_INT_TYPES = (("i1", 127), ("i2", 32767), ("i4", 2**31 - 1))

__all__ = [
    "LAYOUT_VERSION",
    "Decoded",
    "Tables",
    "build_spec",
    "choose_live",
    "decode_blob",
    "discover_controls",
    "explorer_state_space",
    "gather_tables",
    "pack_blob",
    "readout_columns",
]


# ---------------------------------------------------------------- 1. discover controls
def _kind(c) -> str:
    t = type(c).__name__
    if "Slider" in t:
        return "range"
    if t in ("Dropdown", "Select", "RadioButtons", "ToggleButtons"):
        return "select"
    if t in ("Checkbox", "ToggleButton"):
        return "checkbox"
    raise TypeError(f"the site cannot show a control of type {t}")


def _options(c) -> list[tuple[str, Any]]:
    return [(str(o[0]), o[1]) if isinstance(o, tuple) else (str(o), o) for o in c.options]


def _slider_labels(c, values: list) -> list[str]:
    if type(c).__name__ == "SelectionSlider":
        return [label for label, _ in _options(c)]
    fmt = getattr(c, "readout_format", "") or ("d" if type(c).__name__ == "IntSlider" else ".3g")
    out = []
    for v in values:
        try:
            out.append(format(v, fmt))
        except (ValueError, TypeError):
            out.append(str(v))
    return out


def _nearest(values: list, v) -> int:
    for i, x in enumerate(values):
        if x == v:
            return i
    try:
        return min(range(len(values)), key=lambda i: abs(float(values[i]) - float(v)))
    except (TypeError, ValueError):
        return 0


def discover_controls(ex) -> tuple[list[dict], dict[str, list]]:
    """Every control of ``ex`` as the page shows it, and the values to ``set`` it to.

    Returns ``(controls, py_values)``: per control ``{"name", "label", "kind", "values" (as
    ``compute`` gets them, JSON), "labels", "front" (a fast slider's values as its linked trait
    shows them), "index" (the notebook's value), "live": False}``, and per control the Python
    values :meth:`Explorer.set` takes, in the same order. A select's values are its options (read,
    not found by setting the explorer); a checkbox is ``[False, True]``; a slow slider only its
    value (it is not live).
    """
    from attnlib.widgets.framework.readout import to_py

    defaults, axes = ex.values(), ex.axes
    controls, py_values = [], {}
    for cname, c in ex.controls.items():
        kind = _kind(c)
        front: list = []
        if cname in axes:
            py = list(axes[cname])
            values = [to_py(v) for v in py]
            labels = _slider_labels(c, values)
            selection = type(c).__name__ == "SelectionSlider"
            front = list(range(len(values))) if selection else list(values)
        elif kind == "select":
            labels, py = [o[0] for o in _options(c)], [o[1] for o in _options(c)]
            values = [to_py(v) for v in py]
        elif kind == "checkbox":
            py = values = [False, True]
            labels = ["off", "on"]
        else:  # a slider listed in slow=: shown at its value, not live
            py, values, labels = [c.value], [defaults[cname]], [str(defaults[cname])]
        py_values[cname] = py
        controls.append(
            {
                "name": cname,
                "label": getattr(c, "description", "") or cname,
                "kind": kind,
                "values": values,
                "labels": labels,
                "front": front,
                "index": _nearest(values, defaults[cname]),
                "live": False,
            }
        )
    return controls, py_values


# ---------------------------------------------------------------- 2. choose live controls
def _readout_numbers(ex) -> int:
    from attnlib.widgets.framework.frames import readout_spec

    return sum(math.prod(s["shape"]) for s in readout_spec(ex.frame()) if s["kind"] != "s")


def choose_live(ex, controls: list[dict], max_frames: int, max_bytes: int) -> list[tuple[str, ...]]:
    """The live items (a fast group, or one other control), in the explorer's order: each joins
    while the product stays ``<= max_frames`` frames and its readout numbers (about 2 bytes each
    stored, base64) ``<= max_bytes``; the first fast group always does. Affine sliders are live
    without joining the product. Marks ``controls[i]["live"]``."""
    by_name = {c["name"]: c for c in controls}
    groups, affine = [tuple(g) for g in ex.groups], tuple(ex.affine)
    if not groups:
        raise ValueError(f"explorer {ex.name!r} has no fast slider; the site needs one")
    readout_bytes = 2 * _readout_numbers(ex)
    items: list[tuple[str, ...]] = []
    for cname in ex.controls:
        item = next((g for g in groups if cname in g), (cname,))
        if item not in items:
            items.append(item)
    live: list[tuple[str, ...]] = []
    total = 1
    for item in items:
        if any(len(by_name[n]["values"]) < 2 for n in item) or set(item) <= set(affine):
            continue
        size = total * math.prod(len(by_name[n]["values"]) for n in item)
        fits = size <= max_frames and size * readout_bytes * 4 / 3 <= max_bytes
        if fits or (not live and item in groups):
            live.append(item)
            total = size
    if not any(item in groups for item in live):
        raise ValueError(
            f"{ex.name}: no group of fast sliders is live (max_frames {max_frames}, max_bytes "
            f"{max_bytes}); the page plays a group's frames, so one must fit"
        )
    for n in [n for item in live for n in item] + list(affine):
        by_name[n]["live"] = True
    return live


# ---------------------------------------------------------------- 3. gather tables
@dataclass
class Tables:
    """Every frame of the live product, deduplicated: ``keys`` ``[(key, floats)]`` (sorted),
    ``tables[key]`` its distinct float32 values (bytes -> id), ``rtable`` the distinct float64
    readout rows, ``ttable``/``stable`` the distinct texts and strings (JSON -> id), ``index``
    ``(frames, keys + 3)`` the ids of each frame, ``states`` each frame's compute values (affine
    explorers only), ``template`` the header fields every frame shares."""

    dims: list[tuple[str, int]]
    keys: list[tuple[str, int]] = field(default_factory=list)
    template: dict = field(default_factory=dict)
    tables: dict[str, dict[bytes, int]] = field(default_factory=dict)
    rtable: dict[bytes, int] = field(default_factory=dict)
    ttable: dict[str, int] = field(default_factory=dict)
    stable: dict[str, int] = field(default_factory=dict)
    index: Any = None
    rstride: int = 0
    states: list[dict] = field(default_factory=list)

    @property
    def frames(self) -> int:
        return math.prod(size for _, size in self.dims)


def _ids(rows, table: dict[bytes, int]):
    """The id in ``table`` of each row of ``rows`` ``(n, w)``; new rows join in the order met."""
    rows = np.ascontiguousarray(rows)
    if rows.shape[1] == 0:
        return np.full(len(rows), table.setdefault(b"", len(table)), dtype=np.uint32)
    void = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(void, return_index=True, return_inverse=True)
    ids = np.empty(len(first), dtype=np.uint32)
    for u in np.argsort(first):
        ids[u] = table.setdefault(rows[first[u]].tobytes(), len(table))
    return ids[np.asarray(inverse).reshape(-1)]


def _layer_arrays(ex) -> tuple[dict[str, bytes], dict[str, list[int]]]:
    """The explorer's layer at its current values (arrays that depend only on slow controls), as
    ``({key: float32 bytes}, {key: shape})``; empty when it has none."""
    if not ex.has_layer:
        return {}, {}
    # No except: an error computing a real layer must fail the build, not drop its arrays.
    message, (b32,) = ex.layer()
    flat, out, o = np.frombuffer(b32, dtype=np.float32), {}, 0
    for k in sorted(message["arrays"]):  # the buffer holds the arrays in sorted key order
        size = math.prod(message["arrays"][k])
        out[k] = flat[o : o + size].tobytes()
        o += size
    return out, dict(message["arrays"])


def _start(t: Tables, header: dict, layer_shapes: dict) -> None:
    arr = {**header["arrays"], **layer_shapes}
    t.keys = [(k, math.prod(arr[k])) for k in sorted(arr)]
    t.tables = {k: {} for k, _ in t.keys}
    t.template = {"arrays": arr, "readout": header["readout"], "texts": header["texts"]}
    t.index = np.zeros((t.frames, len(t.keys) + 3), dtype=np.uint32)


def _add_block(t: Tables, header: dict, buffers, layer: dict[str, bytes], flat) -> None:
    """One frame set (the driver group at one setting of the others) into ``t``'s tables."""
    b32, b64 = buffers
    n = header["n"]
    f32 = np.frombuffer(b32, dtype=np.float32).reshape(n, -1)
    o = 0
    offs = {}
    for k in sorted(header["arrays"]):  # pack order: keys sorted (frames.pack_frames)
        offs[k] = o
        o += math.prod(header["arrays"][k])
    for kk, (k, size) in enumerate(t.keys):
        if k in offs:
            t.index[flat, kk] = _ids(f32[:, offs[k] : offs[k] + size], t.tables[k])
        else:  # a slow-only array of the layer: the same for every frame of the block
            t.index[flat, kk] = t.tables[k].setdefault(layer[k], len(t.tables[k]))
    f64 = np.frombuffer(b64, dtype=np.float64).reshape(n, -1)
    t.rstride = f64.shape[1]
    t.index[flat, -3] = _ids(f64, t.rtable)
    for col, rows, table in (
        (-2, header["text_values"], t.ttable),
        (-1, header["strings"], t.stable),
    ):
        t.index[flat, col] = [table.setdefault(json.dumps(r), len(table)) for r in rows or [[]] * n]


def gather_tables(ex, controls: list[dict], py_values: dict, live: list[tuple[str, ...]]) -> Tables:
    """Every frame of the live product, the largest live group played as one frame set per
    setting of the other live controls (affine sliders at 0: the frames are the basis's ``B0``),
    the controls not live at their shown value. Leaves ``ex`` at the values the page starts at."""
    by_name = {c["name"]: c for c in controls}
    groups, affine = [tuple(g) for g in ex.groups], tuple(ex.affine)
    driver = max(
        (g for g in groups if g in live),
        key=lambda g: math.prod(len(by_name[n]["values"]) for n in g),
    )
    dims = [n for item in live for n in item]
    t = Tables(dims=[(n, len(by_name[n]["values"])) for n in dims])
    shape = [size for _, size in t.dims]
    outer = [n for n in dims if n not in driver]
    # a control not live is shown at its step nearest the notebook's value: frames there too
    ex.set(**{n: py_values[n][c["index"]] for n, c in by_name.items() if not c["live"]})
    if affine:
        ex.set(**dict.fromkeys(affine, 0))
        t.states = [{}] * t.frames
    for combo in itertools.product(*(range(len(by_name[n]["values"])) for n in outer)):
        ex.set(**{n: py_values[n][i] for n, i in zip(outer, combo)})
        header, buffers = ex.frame_set(groups.index(driver))
        if tuple(header["names"]) != driver:
            raise ValueError(f"{ex.name}: frame set names {header['names']} != group {driver}")
        layer, layer_shapes = _layer_arrays(ex)
        if not t.keys:
            _start(t, header, layer_shapes)
        at = dict(zip(outer, combo))
        inner = np.unravel_index(np.arange(header["n"]), header["shape"])
        cols = [
            inner[driver.index(d)] if d in driver else np.full(header["n"], at[d]) for d in dims
        ]
        flat = np.ravel_multi_index(cols, shape)
        _add_block(t, header, buffers, layer, flat)
        if affine:
            base = ex.values()
            for f, idx in zip(flat.tolist(), zip(*cols)):
                t.states[f] = {**base, **{d: py_values[d][int(i)] for d, i in zip(dims, idx)}}
    ex.set(**{n: py_values[n][by_name[n]["index"]] for n in dims + list(affine)})
    return t


# ---------------------------------------------------------------- 4. pack the blob
def _half_up(a, digits: int):
    """``a * 10**digits`` rounded as the page's ``Number.toFixed(digits)`` rounds ``a``: to the
    nearest integer of the exact binary value, ties away from zero (int64 array)."""
    from decimal import ROUND_HALF_UP, Decimal

    scaled = np.abs(a) * 10.0**digits
    n = np.floor(scaled + 0.5)
    # float64's product is within 1e-6 of the exact one below 2**31: only values that close to
    # a tie can round differently; those are rounded exactly, in decimal
    near = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    q = Decimal(1).scaleb(-digits)
    for i in np.flatnonzero(near):
        n[i] = int(Decimal(float(abs(a[i]))).quantize(q, rounding=ROUND_HALF_UP).scaleb(digits))
    return (np.sign(a) * n).astype(np.int64)


def readout_columns(rows, kinds: list[str], digits: int, exact=()):
    """The readout table ``rows`` ``(R, C)`` (float64) as stored in a page: ``(columns, rows,
    remap)``, where ``columns`` is ``[(code, div, bytes)]`` one per column (``code`` "i1", "i2",
    "i4" or "f8"; the page's number is the stored one divided by ``div``), ``rows`` the count of
    distinct rows left and ``remap`` the new row of each old one.

    A float (kind "f") is stored as the integer ``round(x * 10**digits)`` that the readout's
    ``toFixed(digits)`` shows (ties away from zero, as ``toFixed`` rounds), so the page shows the
    same text as JupyterLab; ints and bools as integers; a column with a value that does not fit
    (nan, inf, too large) stays float64, and so does every column in ``exact`` (the page adds
    to it: an affine column). Rows equal once rounded are stored once.
    """
    cols, kept = [], []
    for c, kind in enumerate(kinds):
        x = rows[:, c]
        div = 10**digits if kind == "f" else 1
        if c not in exact and np.isfinite(x).all() and np.abs(x).max(initial=0) * div < 2**31 - 1:
            n = _half_up(x, digits) if kind == "f" else np.rint(x).astype(np.int64)
            if kind == "f" or np.array_equal(n, x):
                cols.append(("i", div))
                kept.append(n.astype(np.float64))
                continue
        cols.append(("f8", 1))
        kept.append(x)
    stacked = np.stack(kept, 1) if kept else np.zeros((len(rows), 0))
    uniq, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)  # the rows in the order first met (neighbours stay neighbours)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    uniq, remap = uniq[order], rank[np.asarray(inverse).reshape(-1)]
    out = []
    for c, (code, div) in enumerate(cols):
        col = uniq[:, c]
        if code == "f8":
            out.append(("f8", 1, np.ascontiguousarray(col).tobytes()))
            continue
        top = np.abs(col).max(initial=0)
        code = next(t for t, m in _INT_TYPES if top <= m)
        out.append((code, div, col.astype(_INTS[code]).tobytes()))
    return out, len(uniq), remap.astype(np.uint32)


class _Blob:
    """Parts of a blob, each placed at a multiple of its alignment."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.off = 0

    def put(self, data: bytes, align: int) -> int:
        pad = -self.off % align
        self.parts += [b"\0" * pad, data]
        start = self.off + pad
        self.off = start + len(data)
        return start


def pack_blob(t: Tables, digits: int, basis=None) -> tuple[dict, bytes]:
    """``(layout, blob)`` of the tables (module doc: layout version 2). With an affine ``basis``
    its keys' float32 tables are left empty and its readout columns stored exactly."""
    rows = np.frombuffer(b"".join(t.rtable), dtype=np.float64).reshape(len(t.rtable), t.rstride)
    rows = rows.copy()
    if basis is not None:
        for kk, (k, size) in enumerate(t.keys):
            if k in basis.akeys:  # B0 + sum v_j Bj on the page: no float32 table
                t.tables[k] = {bytes(4 * size): 0}
                t.index[:, kk] = 0
        rows[:, basis.rcols] = 0.0
    rkinds = [
        s["kind"]
        for s in t.template["readout"]
        if s["kind"] != "s"
        for _ in range(math.prod(s["shape"]))
    ]
    rcols, nrows, remap = readout_columns(rows, rkinds, digits, exact=basis.rcols if basis else ())
    t.index[:, -3] = remap[t.index[:, -3]]
    blob = _Blob()
    layout: dict[str, Any] = {"version": LAYOUT_VERSION, "readout": [], "tables": [], "index": []}
    for code, div, data in rcols:
        layout["readout"].append([code, blob.put(data, 8), nrows, div])
    for k, size in t.keys:
        layout["tables"].append([k, blob.put(b"".join(t.tables[k]), 4), len(t.tables[k]) * size])
    counts = [len(t.tables[k]) for k, _ in t.keys] + [nrows, len(t.ttable), len(t.stable)]
    for j, count in enumerate(counts):
        if count <= 1:  # one distinct value: no column, every id 0
            layout["index"].append([0, 0, 0])
            continue
        width = 1 if count <= 256 else 2 if count <= 65536 else 4
        col = t.index[:, j].astype(_UINT[width]).tobytes()
        layout["index"].append([width, blob.put(col, width), t.frames])
    layout["affine"] = None
    if basis is not None:
        layout["affine"] = site_affine.pack_affine(basis, blob.put)
    return layout, b"".join(blob.parts)


# ---------------------------------------------------------------- 5. the spec
def _view_meta(ex) -> dict:
    meta = getattr(getattr(ex, "view", None), "meta", None)
    if isinstance(meta, dict) and meta:
        return dict(meta)
    return {"builder": ex.name, "args": ex.args, "columns": ex.columns, "digits": ex.digits}


def build_spec(
    ex, name: str, args: dict, controls: list[dict], t: Tables, layout: dict, basis
) -> dict:
    """The JSON the page reads: controls, the explorer's traits, the dims and keys of the frames,
    the layout of the blob, the texts and strings tables, and what is live."""
    fast, groups = list(ex.fast), [tuple(g) for g in ex.groups]
    by_name = {c["name"]: c for c in controls}
    words = words_traits(ex, _view_meta(ex))  # scene, meta (and words): tools/site_words.py
    traits = {
        "scene": words.pop("scene"),
        "fast": [
            {"group": gi, "values": by_name[n]["front"]} for gi, g in enumerate(groups) for n in g
        ],
        "groups": [[fast.index(n) for n in g] for g in groups],
        **words,
    }
    affine = list(ex.affine)
    return {
        "builder": name,
        "args": args,
        "controls": controls,
        "fast_names": fast,
        "dims": [[n, size] for n, size in t.dims],
        "keys": t.keys,
        "rstride": t.rstride,
        "template": t.template,
        "texts_table": [json.loads(s) for s in t.ttable],
        "strings_table": [json.loads(s) for s in t.stable],
        "has_strings": any(s["kind"] == "s" for s in t.template["readout"]),
        "layout": layout,
        "traits": traits,
        "frames": t.frames,
        "basis": 1 + len(affine),  # frames stored per setting of dims (affine: B0, B1..Bm)
        "affine_worst_ulps": basis.worst if basis else 0.0,
        "live": [n for n, _ in t.dims] + affine,
        "not_live": [c["name"] for c in controls if not c["live"]],
    }


def explorer_state_space(
    name: str,
    args: dict | None = None,
    max_frames: int = MAX_FRAMES,
    max_bytes: int = EXPLORER_BUDGET,
) -> tuple[dict, bytes]:
    """``(spec, blob)``: the explorer's controls, traits and frames for the static page (``spec``
    JSON-able, ``blob`` the bytes before gzip); the five steps of the module doc."""
    from attnlib.widgets import BUILDERS

    if name not in BUILDERS:
        raise ValueError(f"unknown explorer {name!r}; BUILDERS has {sorted(BUILDERS)}")
    args = dict(args or {})
    ex = BUILDERS[name](**args)
    controls, py_values = discover_controls(ex)
    live = choose_live(ex, controls, max_frames, max_bytes)
    t = gather_tables(ex, controls, py_values, live)
    basis = None
    if ex.affine:  # the moving keys and readout columns: a float64 basis per frame, checked
        basis = site_affine.affine_basis(ex, ex.affine, t.states, keys=t.keys)
    layout, blob = pack_blob(t, int(_view_meta(ex).get("digits", 3)), basis)
    return build_spec(ex, name, args, controls, t, layout, basis), blob


# ---------------------------------------------------------------- the reader
@dataclass
class Decoded:
    """A blob read back (:func:`decode_blob`); :meth:`frame` gives one frame as the page does."""

    spec: dict
    readout: list  # per readout number: the column of its values (float64)
    tables: dict
    index: list
    affine: dict

    def values(self, indices: dict[str, int], v: dict[str, float] | None = None) -> dict:
        """The compute values of the frame at control ``indices`` (others: the notebook's), the
        affine sliders at ``v`` (default 0)."""
        out = {
            c["name"]: c["values"][indices.get(c["name"], c["index"])]
            for c in self.spec["controls"]
        }
        return {**out, **(v or {})}

    def frame(self, indices: dict[str, int], v: dict[str, float] | None = None) -> dict:
        """``{"arrays": {key: float32 (size,)}, "readout": float64 (rstride,), "texts": [...],
        "strings": [...]}`` of the frame at control ``indices`` (live controls; affine: ``v``)."""
        spec = self.spec
        dims = spec["dims"]
        flat = (
            int(np.ravel_multi_index([indices[n] for n, _ in dims], [s for _, s in dims]))
            if dims
            else 0
        )
        ids = [int(col[flat]) if col is not None else 0 for col in self.index]
        coefs = [
            float((v or {}).get(n, 0.0)) for n in (spec["layout"]["affine"] or {}).get("names", [])
        ]
        arrays = {}
        for kk, (k, size) in enumerate(spec["keys"]):
            if k in self.affine:
                arrays[k] = self._combine(k, flat, coefs).astype(np.float32)
            else:
                arrays[k] = self.tables[k][ids[kk] * size : (ids[kk] + 1) * size]
        readout = np.array([col[ids[-3]] / div for col, div in self.readout], dtype=np.float64)
        if "@readout" in self.affine:
            readout[spec["layout"]["affine"]["rcols"]] = self._combine("@readout", flat, coefs)
        return {
            "arrays": arrays,
            "readout": readout,
            "texts": spec["texts_table"][ids[-2]],
            "strings": spec["strings_table"][ids[-1]],
        }

    def _combine(self, key: str, flat: int, coefs: list[float]):
        size, table, ids = self.affine[key]
        m1 = len(coefs) + 1
        row = ids[flat * m1 : (flat + 1) * m1]
        s = table[row[0] * size : (row[0] + 1) * size].copy()
        for j, c in enumerate(coefs):  # in the page's order: B0 + v1 B1 + v2 B2 ...
            s = s + c * table[row[j + 1] * size : (row[j + 1] + 1) * size]
        return s


def decode_blob(spec: dict, blob: bytes) -> Decoded:
    """The blob of ``spec`` read as the page reads it (layout version 2, module doc); raises
    ``ValueError`` on another version or a part that lies outside the blob."""
    layout = spec["layout"]
    if layout.get("version") != LAYOUT_VERSION:
        raise ValueError(
            f"layout version {layout.get('version')!r}, this reader reads {LAYOUT_VERSION}"
        )

    def view(dtype, off: int, count: int):
        end = off + count * np.dtype(dtype).itemsize
        if off % np.dtype(dtype).itemsize or end > len(blob):
            raise ValueError(
                f"a {np.dtype(dtype)} part at {off}..{end} does not fit a {len(blob)}-byte blob"
            )
        return np.frombuffer(blob, dtype=dtype, count=count, offset=off)

    rtypes = {**_INTS, "f8": np.float64}
    readout = [
        (view(rtypes[code], off, n).astype(np.float64), div)
        for code, off, n, div in layout["readout"]
    ]
    tables = {k: view(np.float32, off, n) for k, off, n in layout["tables"]}
    index = [view(_UINT[w], off, n) if w else None for w, off, n in layout["index"]]
    affine = {}
    if layout["affine"]:
        m1 = len(layout["affine"]["names"]) + 1
        for k, size, toff, tlen, w, ioff in layout["affine"]["keys"]:
            affine[k] = (
                size,
                view(np.float64, toff, tlen),
                view(_UINT[w], ioff, spec["frames"] * m1),
            )
    return Decoded(spec, readout, tables, index, affine)
