"""The course as a static web site: ``make site`` (``python tools/site.py build --out site``).

Writes ``site/index.html`` (the table of contents) and one ``site/NN_name.html`` per notebook: its
prose (markdown, math converted to MathML at build time), code (highlighted), stored outputs, and
every explorer *live*: the page runs the same ``explorer.js`` as JupyterLab, with a static model
(``tools/site_assets/site.js``) that plays frames computed here for the explorer's state space.
No kernel, no server, no network: a page works opened from disk (``file://``); everything it needs
is inside it.

The state space of an explorer, built from its public API only (``BUILDERS[name](**args)``,
``controls``, ``groups``, ``fast``, ``set``, ``values``, ``frame_set``, ``scene.to_json``): the
product of the values of every *live* control. Controls are made live in their order (a group of
sliders precomputed jointly counts as one) while the product stays under ``MAX_FRAMES`` frames;
the others are shown disabled at their notebook value, with a note. Each array of a frame is
stored once per distinct value (a table, and a Uint32 index per frame), and the whole is gzipped.
Sliders an explorer declares ``affine=`` (notebook 04's four values) are live without joining the
product: per frame of the others the page stores a float64 basis ``B0, B1..Bm`` of the entries
that move with them and shows ``B0 + sum_j v_j Bj`` (``tools/site_affine.py``, which checks the
declaration for every frame when the site is built, and fails the build if it does not hold).
The readout numbers are stored at the precision the readout shows them (``readout_columns``:
integers ``round(x * 10**digits)``, rounded as the page's ``toFixed`` rounds, so the page shows
the text JupyterLab shows), which makes them dedupe and compress.

Which explorer an output shows: the output's metadata ``{"attnlib": {"builder", "args"}}`` (written
by ``Explorer._repr_mimebundle_``); for notebooks stored before that, ``tests/browser/specs.py``'s
notebook -> builders map with default args.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import html
import itertools
import json
import math
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASSETS = Path(__file__).with_name("site_assets")
NOTEBOOKS = ROOT / "notebooks"
EXPLORER_JS = ROOT / "attnlib" / "widgets" / "framework" / "explorer.js"
#: The most frames an explorer's live state space may hold (build time, page size).
MAX_FRAMES = 100_000
#: The most bytes an explorer's block may take in its page (its frames, gzipped, base64).
EXPLORER_BUDGET = 6_000_000
#: Budgets of the issue: a page, the whole site.
PAGE_BUDGET = 8_000_000
SITE_BUDGET = 60_000_000
COURSE = "attnlib — learn attention by moving it"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


# ---------------------------------------------------------------- explorers: the state space
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


def _view_meta(ex) -> dict:
    view = getattr(ex, "view", None)
    meta = getattr(view, "meta", None)
    if isinstance(meta, dict) and meta:
        return dict(meta)
    return {
        "builder": ex.name,
        "args": ex.args,
        "columns": getattr(ex, "columns", None),
        "digits": getattr(ex, "digits", 3),
    }


def explorer_state_space(
    name: str,
    args: dict | None = None,
    max_frames: int = MAX_FRAMES,
    max_bytes: int = EXPLORER_BUDGET,
):
    """``(spec, blob)``: the explorer's controls, traits and frames for the static model.

    ``spec`` is JSON-able (``site.js`` reads it); ``blob`` holds the frame tables (bytes, before
    gzip). Built with the explorer's public API only.
    """
    import numpy as np

    from attnlib.widgets import BUILDERS

    if name not in BUILDERS:
        raise ValueError(f"unknown explorer {name!r}; BUILDERS has {sorted(BUILDERS)}")
    args = dict(args or {})
    ex = BUILDERS[name](**args)
    defaults = ex.values()
    groups = [tuple(g) for g in ex.groups]
    fast = list(ex.fast)
    affine = tuple(getattr(ex, "affine", ()))  # stored as a basis (site_affine), not a product
    if not groups:
        raise ValueError(f"explorer {name!r} has no fast slider; the site needs one")
    # Each group's axes (compute values), from its frame set at the notebook's values, and the
    # readout's bytes per frame as stored (about 2 per number: integers at the digits shown).
    axes: dict[str, list] = {}
    for gi in range(len(groups)):
        header, (_, b64) = ex.frame_set(gi)
        for n, a in zip(header["names"], header["axes"]):
            axes[n] = list(a)
        readout_bytes = 2 * (len(b64) // 8 // header["n"])
    # Every control: its values (as compute gets them, JSON), labels, front-end values.
    controls: list[dict] = []
    py_values: dict[str, list] = {}
    for cname, c in ex.controls.items():
        kind = _kind(c)
        if cname in fast:
            values = axes[cname]
            front = (
                list(range(len(values))) if type(c).__name__ == "SelectionSlider" else list(values)
            )
            labels = _slider_labels(c, values)
            py_values[cname] = values
        elif kind == "select":
            opts = _options(c)
            labels, py = [o[0] for o in opts], [o[1] for o in opts]
            py_values[cname] = py
            values, front = [], []
            for v in py:  # the JSON value compute gets, as the explorer reports it
                ex.set(**{cname: v})
                values.append(ex.values()[cname])
            ex.set(**{cname: py[_nearest(values, defaults[cname])]})
        elif kind == "checkbox":
            values = [False, True]
            labels, front = ["off", "on"], []
            py_values[cname] = values
        else:  # a slider listed in slow=: shown at its value, not live
            values, labels, front = [defaults[cname]], [str(defaults[cname])], []
            py_values[cname] = [c.value]
        index = _nearest(values, defaults[cname])
        controls.append(
            {
                "name": cname,
                "label": (getattr(c, "description", "") or cname),
                "kind": kind,
                "values": values,
                "labels": labels,
                "front": front,
                "index": index,
                "live": False,
            }
        )
    by_name = {c["name"]: c for c in controls}
    # Which controls are live: in order, while the product stays under max_frames and its
    # readout numbers alone (base64) under max_bytes.
    items: list[tuple[str, ...]] = []
    for cname in ex.controls:
        g = next((g for g in groups if cname in g), None)
        item = g if g is not None else (cname,)
        if item not in items:
            items.append(item)
    live: list[tuple[str, ...]] = []
    total = 1
    for item in items:
        if any(len(by_name[n]["values"]) < 2 for n in item) or set(item) <= set(affine):
            continue
        size = math.prod(len(by_name[n]["values"]) for n in item)
        fits = total * size <= max_frames and total * size * readout_bytes * 4 / 3 <= max_bytes
        if fits or not live:
            live.append(item)
            total *= size
    dims = [n for item in live for n in item]
    for n in dims + list(affine):
        by_name[n]["live"] = True
    live_groups = [gi for gi, g in enumerate(groups) if g in live]
    driver = max(live_groups, key=lambda gi: math.prod(len(axes[n]) for n in groups[gi]))
    inner = list(groups[driver])
    outer = [n for n in dims if n not in inner]
    sizes = {n: len(by_name[n]["values"]) for n in dims}
    nframes = math.prod(sizes.values())

    template: dict = {}
    keys: list[tuple[str, int]] = []
    tables: dict[str, dict[bytes, int]] = {}
    rtable: dict[bytes, int] = {}
    ttable: dict[str, int] = {}
    stable: dict[str, int] = {}
    index = None
    states: list[dict] = [{}] * nframes if affine else []  # compute values of each frame
    if affine:
        ex.set(**dict.fromkeys(affine, 0))  # the frames below are B0's (v = 0)
    for combo in itertools.product(*(range(sizes[n]) for n in outer)):
        ex.set(**{n: py_values[n][i] for n, i in zip(outer, combo)})
        base = ex.values() if affine else {}
        header, (b32, b64) = ex.frame_set(driver)
        if list(header["names"]) != inner:
            raise ValueError(f"{name}: frame set names {header['names']} != group {inner}")
        n = header["n"]
        f32 = np.frombuffer(b32, dtype=np.float32).reshape(n, -1)
        # Per frame: every array the scene reads, by key (the frame's own, then the layer's).
        frame_keys, o = {}, 0
        for k in sorted(header["arrays"]):  # pack order: keys sorted (frames.pack_frames)
            size = math.prod(header["arrays"][k])
            frame_keys[k] = (o, size)
            o += size
        layer_bytes, layer_shapes = _layer_arrays(ex)
        if not template:
            arr = {**header["arrays"], **layer_shapes}
            keys = [(k, math.prod(arr[k])) for k in sorted(arr)]
            tables = {k: {} for k, _ in keys}
            template = {
                "arrays": arr,
                "readout": header["readout"],
                "texts": header["texts"],
            }
            index = np.zeros((nframes, len(keys) + 3), dtype=np.uint32)
        f64 = np.frombuffer(b64, dtype=np.float64).reshape(n, -1)
        rstride = f64.shape[1]
        at = dict(zip(outer, combo))
        for j in range(n):
            inner_idx = np.unravel_index(j, header["shape"])
            at.update(zip(inner, (int(i) for i in inner_idx)))
            flat = 0
            for d in dims:
                flat = flat * sizes[d] + at[d]
            row = index[flat]  # type: ignore[index]
            if affine:
                states[flat] = {**base, **{d: py_values[d][at[d]] for d in dims}}
            for kk, (k, _) in enumerate(keys):
                if k in frame_keys:
                    o, size = frame_keys[k]
                    data = f32[j, o : o + size].tobytes()
                else:  # a slow-only array of the explorer's layer: the same for every frame here
                    data = layer_bytes[k]
                row[kk] = tables[k].setdefault(data, len(tables[k]))
            row[-3] = rtable.setdefault(f64[j].tobytes(), len(rtable))
            tv = header["text_values"][j] if header["texts"] else []
            row[-2] = ttable.setdefault(json.dumps(tv), len(ttable))
            sv = header["strings"][j] if header["strings"] else []
            row[-1] = stable.setdefault(json.dumps(sv), len(stable))
    ex.set(**{n: py_values[n][by_name[n]["index"]] for n in dims + list(affine)})
    rows = np.frombuffer(b"".join(rtable), dtype=np.float64).reshape(len(rtable), rstride).copy()
    basis = None
    if affine:  # the affine keys and readout columns: a float64 basis per frame, checked
        basis = _site_affine().affine_basis(ex, affine, states)
        if [k for k, _ in basis.keys] != [k for k, _ in keys]:
            raise ValueError(f"{name}: affine keys {basis.keys} != the frames' {keys}")
        for kk, (k, size) in enumerate(keys):
            if k in basis.akeys:  # B0 + sum v_j Bj on the page: no float32 table
                tables[k] = {bytes(4 * size): 0}
                index[:, kk] = 0  # type: ignore[index]
        rows[:, basis.rcols] = 0.0
    # The readout at the precision it is shown: a column of integers where every value allows.
    digits = int(_view_meta(ex).get("digits", 3))
    rkinds = [s["kind"] for s in template["readout"] if s["kind"] != "s" for _ in _cells(s)]
    rcols, rrows, remap = readout_columns(rows, rkinds, digits, exact=basis.rcols if basis else ())
    index[:, -3] = remap[index[:, -3]]  # type: ignore[index]
    # The blob: the readout columns first (float64 ones 8-byte aligned), the float32 tables, the
    # index.
    parts: list[bytes] = []
    layout: dict[str, Any] = {"readout": [], "tables": []}
    off = 0
    for code, div, data in rcols:
        pad = -off % 8
        parts.append(b"\0" * pad)
        off += pad
        layout["readout"].append([code, off, rrows, div])
        parts.append(data)
        off += len(data)
    pad = -off % 4
    parts.append(b"\0" * pad)
    off += pad
    for k, s in keys:
        data = b"".join(tables[k])
        layout["tables"].append([k, off, len(tables[k]) * s])
        parts.append(data)
        off += len(data)
    # The index, one column per key (+ readout, texts, strings), each in the narrowest unsigned
    # type that holds its ids (a column with one distinct value is not stored).
    counts = [len(tables[k]) for k, _ in keys] + [rrows, len(ttable), len(stable)]
    layout["index"] = []
    for j, count in enumerate(counts):
        if count <= 1:
            layout["index"].append([0, 0, 0])
            continue
        width = 1 if count <= 256 else 2 if count <= 65536 else 4
        pad = -off % 4  # typed arrays start at a multiple of their width
        parts.append(b"\0" * pad)
        off += pad
        col = index[:, j].astype({1: np.uint8, 2: np.uint16, 4: np.uint32}[width])  # type: ignore[index]
        layout["index"].append([width, off, nframes])
        parts.append(col.tobytes())
        off += len(parts[-1])
    layout["affine"] = None
    if basis is not None:
        aparts, layout["affine"], off = _site_affine().pack_affine(basis, off)
        parts += aparts
    has_strings = any(s["kind"] == "s" for s in template["readout"])
    traits = {
        "scene": ex.scene.to_json(),
        "fast": [
            {"group": gi, "values": by_name[n]["front"]} for gi, g in enumerate(groups) for n in g
        ],
        "groups": [[fast.index(n) for n in g] for g in groups],
        "meta": _view_meta(ex),
    }
    spec = {
        "builder": name,
        "args": args,
        "controls": controls,
        "fast_names": fast,
        "dims": [[n, sizes[n]] for n in dims],
        "keys": keys,
        "rstride": rstride,
        "template": template,
        "texts_table": [json.loads(t) for t in ttable],
        "strings_table": [json.loads(s) for s in stable],
        "has_strings": has_strings,
        "layout": layout,
        "traits": traits,
        "frames": nframes,
        "basis": 1 + len(affine),  # frames stored per setting of dims (affine: B0, B1..Bm)
        "affine_worst_ulps": basis.worst if basis else 0.0,
        "live": dims + list(affine),
        "not_live": [c["name"] for c in controls if not c["live"]],
    }
    return spec, b"".join(parts)


def _cells(s: dict) -> range:
    return range(math.prod(s["shape"]))


#: Readout columns stored as integers: the narrowest signed type that holds them.
_INT_TYPES = (("i1", 127), ("i2", 32767), ("i4", 2**31 - 1))


def _half_up(a, digits: int):
    """``a * 10**digits`` rounded as the page's ``Number.toFixed(digits)`` rounds ``a``: to the
    nearest integer of the exact binary value, ties away from zero (int64 array)."""
    from decimal import ROUND_HALF_UP, Decimal

    import numpy as np

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
    import numpy as np

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
        out.append(
            (code, div, col.astype({"i1": np.int8, "i2": np.int16, "i4": np.int32}[code]).tobytes())
        )
    return out, len(uniq), remap.astype(np.uint32)


def _layer_arrays(ex) -> tuple[dict[str, bytes], dict[str, list[int]]]:
    """The explorer's layer at its current values (the arrays that depend only on slow controls,
    sent once per slow value by the kernel), as ``({key: float32 bytes}, {key: shape})``; empty
    when it has none. The page folds them into each frame (stored once: the tables dedupe)."""
    import numpy as np

    try:
        message, (b32,) = ex.layer()
    except ValueError:  # no layer
        return {}, {}
    flat = np.frombuffer(b32, dtype=np.float32)
    out, o = {}, 0
    for k in sorted(message["arrays"]):  # the buffer holds the arrays in sorted key order
        size = math.prod(message["arrays"][k])
        out[k] = flat[o : o + size].tobytes()
        o += size
    return out, dict(message["arrays"])


def _site_affine():
    """``tools/site_affine.py`` (this file runs as a script, or is loaded by path in tests)."""
    import importlib.util

    if "site_affine" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "site_affine", Path(__file__).with_name("site_affine.py")
        )
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["site_affine"] = mod
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return sys.modules["site_affine"]


def _nearest(values: list, v) -> int:
    for i, x in enumerate(values):
        if x == v:
            return i
    try:
        return min(range(len(values)), key=lambda i: abs(float(values[i]) - float(v)))
    except (TypeError, ValueError):
        return 0


def explorer_html(
    name: str, args: dict, uid: str, png_b64: str | None, alt: str
) -> tuple[str, dict]:
    """The explorer's block for a page, and a report (frames, bytes, live controls)."""
    t0 = time.perf_counter()
    max_frames = MAX_FRAMES
    while True:
        spec, blob = explorer_state_space(name, args, max_frames)
        packed = base64.b64encode(gzip.compress(blob, 6, mtime=0)).decode("ascii")
        if len(packed) <= EXPLORER_BUDGET or spec["frames"] <= 1:
            break
        max_frames = spec["frames"] - 1  # over its share: one control fewer live
    spec_json = json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")
    fallback = (
        f'<img class="site-fallback" src="data:image/png;base64,{png_b64}" '
        f'alt="{html.escape(alt)}">'
        if png_b64
        else ""
    )
    block = (
        f'<figure class="site-explorer" id="{uid}" data-builder="{html.escape(name)}" '
        f'aria-label="{html.escape(alt)}">'
        f'<script type="application/json" class="attnlib-spec">{spec_json}</script>'
        f'<script type="application/octet-stream" class="attnlib-frames">{packed}</script>'
        f"{fallback}</figure>"
    )
    report = {
        "builder": name,
        "frames": spec["frames"],
        "basis": spec["basis"],
        "affine_worst_ulps": spec["affine_worst_ulps"],
        "raw_bytes": len(blob),
        "bytes": len(packed) + len(spec_json),
        "live": spec["live"],
        "not_live": spec["not_live"],
        "seconds": time.perf_counter() - t0,
    }
    return block, report


# ---------------------------------------------------------------- markdown, math, code
def _mathml(tex: str, display: bool) -> str:
    import latex2mathml.converter

    try:
        return latex2mathml.converter.convert(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - an unsupported command: show the TeX as code, no $
        return f'<code class="tex">{html.escape(tex)}</code>'


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    dollarmath_plugin(
        md,
        allow_space=True,
        allow_digits=True,
        double_inline=True,
        renderer=lambda content, opts: _mathml(content, opts.get("display_mode", False)),
    )
    return md


_MD = None


def markdown_html(text: str) -> str:
    global _MD
    if _MD is None:
        _MD = _markdown()
    return _MD.render(text)


def inline_html(text: str) -> str:
    """One line of markdown (a title) as inline HTML, its math as MathML."""
    global _MD
    if _MD is None:
        _MD = _markdown()
    return _MD.renderInline(text)


def plain_title(text: str) -> str:
    """A title for ``<title>``: its TeX as plain text (``$\\sqrt{d_k}$`` -> ``√d_k``)."""
    text = re.sub(r"\\sqrt\{([^}]*)\}", "√\\1", text)
    text = re.sub(r"\\([A-Za-z]+)", "\\1", text)
    return text.replace("$", "").replace("{", "").replace("}", "")


def code_html(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight"))


def pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _text(v) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


# ---------------------------------------------------------------- pages
def notebook_info(path: Path) -> dict:
    """Title and what it teaches (the first markdown cell), for the index and headers."""
    nb = json.loads(path.read_text())
    first = next(_text(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    title = first.splitlines()[0].lstrip("# ").strip()
    m = re.search(r"\*\*What you will learn\*\*\s*\n(.*?)(\n\s*\n\*\*|\Z)", first, re.S)
    learn = m.group(1).strip() if m else ""
    t = re.search(r"\*\*Time:\*\*\s*(.*)", first)
    return {
        "stem": path.stem,
        "title": title,
        "learn": learn,
        "time": t.group(1).strip() if t else "",
    }


def _alts(cell) -> list[str]:
    alt = cell.get("metadata", {}).get("alt")
    if alt is None:
        return []
    return [alt] if isinstance(alt, str) else list(alt)


def _fallback_builders(stem: str) -> list[str]:
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    try:
        from specs import NOTEBOOKS as SPEC  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return list(SPEC.get(f"{stem}.ipynb", []))


def _explorer_jobs(path: Path) -> list[tuple[str, dict]]:
    """(builder, args) of every explorer output of the notebook, in order."""
    nb = json.loads(path.read_text())
    fallback = _fallback_builders(path.stem)
    jobs = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            if WIDGET_MIME not in o.get("data", {}):
                continue
            meta = o.get("metadata", {}).get("attnlib")
            if meta:
                jobs.append((meta["builder"], dict(meta.get("args") or {})))
            elif len(jobs) < len(fallback):
                jobs.append((fallback[len(jobs)], {}))
    return jobs


def _job(job: tuple[str, dict, str, str | None, str]) -> tuple[str, dict]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    name, args, uid, png, alt = job
    return explorer_html(name, args, uid, png, alt)


def _outputs_html(cell, page: dict, explorers: list) -> str:
    alts = _alts(cell)
    parts = []
    for o in cell.get("outputs", []):
        kind = o["output_type"]
        if kind == "stream":
            cls = "stderr" if o.get("name") == "stderr" else "stdout"
            parts.append(f'<pre class="out {cls}">{html.escape(_text(o["text"]))}</pre>')
        elif kind == "error":
            tb = _ANSI.sub("", "\n".join(o.get("traceback", [])))
            parts.append(f'<pre class="out error">{html.escape(tb)}</pre>')
        else:
            data = o.get("data", {})
            if WIDGET_MIME in data and page["explorers"] < len(explorers):
                block = explorers[page["explorers"]]
                page["explorers"] += 1
                parts.append(block)
            elif "image/png" in data:
                i = page["images_in_cell"]
                page["images_in_cell"] += 1
                alt = alts[min(i, len(alts) - 1)] if alts else ""
                page["missing_alt"] += not alt
                png = _text(data["image/png"]).replace("\n", "")
                parts.append(
                    f'<img class="out" src="data:image/png;base64,{png}" alt="{html.escape(alt)}">'
                )
            elif "text/html" in data:
                parts.append(f'<div class="out html">{_text(data["text/html"])}</div>')
            elif "text/markdown" in data:
                parts.append(
                    f'<div class="out md">{markdown_html(_text(data["text/markdown"]))}</div>'
                )
            elif "text/plain" in data:
                parts.append(f'<pre class="out">{html.escape(_text(data["text/plain"]))}</pre>')
    return "".join(parts)


def _explorer_alt(cell, builder: str) -> str:
    alts = _alts(cell)
    if alts:
        return alts[0]
    return f"The {builder.replace('_', ' ')} explorer at its initial settings."


def page_html(path: Path, info: dict, prev: dict | None, nxt: dict | None, explorers: list) -> str:
    nb = json.loads(path.read_text())
    page = {"explorers": 0, "images_in_cell": 0, "missing_alt": 0}
    cells = []
    for cell in nb["cells"]:
        page["images_in_cell"] = 0
        src = _text(cell["source"])
        if cell["cell_type"] == "markdown":
            cells.append(f'<section class="cell md">{markdown_html(src)}</section>')
        elif cell["cell_type"] == "code":
            if not src.strip() and not cell.get("outputs"):
                continue
            cells.append(
                f'<section class="cell code">{code_html(src)}'
                f"{_outputs_html(cell, page, explorers)}</section>"
            )
    nav = _nav(prev, nxt)
    body = (
        f'<header class="site-header"><a href="index.html">{html.escape(COURSE)}</a>{nav}</header>'
        f'<main>{"".join(cells)}</main><footer class="site-footer">{nav}'
        f"<p>Run this notebook live: <code>make lab</code>, then open "
        f"<code>notebooks/{html.escape(path.name)}</code>.</p></footer>"
    )
    return _document(plain_title(info["title"]), body, script=bool(explorers))


def _nav(prev: dict | None, nxt: dict | None) -> str:
    a = (
        f'<a rel="prev" href="{prev["stem"]}.html">← {inline_html(prev["title"])}</a>'
        if prev
        else "<span></span>"
    )
    b = (
        f'<a rel="next" href="{nxt["stem"]}.html">{inline_html(nxt["title"])} →</a>'
        if nxt
        else "<span></span>"
    )
    return f'<nav class="site-nav">{a}{b}</nav>'


def _document(title: str, body: str, *, script: bool) -> str:
    css = (ASSETS / "site.css").read_text() + pygments_css()
    js = ""
    if script:
        from attnlib.widgets.framework.view import _CSS  # the explorer's own styles (its _css)

        css += _CSS
        src = EXPLORER_JS.read_text().replace("</script", "<\\/script")
        js = (
            f'<script type="text/plain" id="attnlib-explorer-js">{src}</script>'
            f'<script type="module">{(ASSETS / "site.js").read_text()}</script>'
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{css}</style></head>"
        f"<body>{body}{js}</body></html>"
    )


def index_html(infos: list[dict]) -> str:
    rows = "".join(
        f'<li><h2><a href="{i["stem"]}.html">{inline_html(i["title"])}</a></h2>'
        f"{markdown_html(i['learn'])}"
        + (f'<p class="time">{html.escape(i["time"])}</p>' if i["time"] else "")
        + "</li>"
        for i in infos
    )
    body = (
        f'<header class="site-header"><span>{html.escape(COURSE)}</span></header><main>'
        f"<h1>{html.escape(COURSE)}</h1>"
        "<p>Interactive notebooks that teach the attention mechanism and the Transformer. Every "
        "explorer on these pages is live: its frames were computed with attnlib when the site "
        "was built, and your browser plays them; nothing is fetched and no kernel runs.</p>"
        "<p>To run the notebooks live (and change every number): clone the repository, then "
        "<code>make lab</code> (installs a pinned environment and opens JupyterLab on "
        "<code>notebooks/</code>).</p>"
        f'<ol class="toc">{rows}</ol></main>'
    )
    return _document(COURSE, body, script=False)


def build(out: Path, notebooks: list[Path] | None = None, jobs: int = 2) -> dict:
    """Write the site into ``out``; return a report (per page and explorer: bytes, seconds)."""
    t0 = time.perf_counter()
    paths = notebooks or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    all_infos = [notebook_info(p) for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))]
    by_stem = {i["stem"]: i for i in all_infos}
    out.mkdir(parents=True, exist_ok=True)
    work = []
    for p in paths:
        nb = json.loads(p.read_text())
        specs = _explorer_jobs(p)
        k = 0
        for cell in nb["cells"]:
            for o in cell.get("outputs", []):
                if WIDGET_MIME in o.get("data", {}) and k < len(specs):
                    png = o["data"].get("image/png")
                    png = _text(png).replace("\n", "") if png else None
                    name, args = specs[k]
                    work.append(
                        (p.stem, k, (name, args, f"{p.stem}-x{k}", png, _explorer_alt(cell, name)))
                    )
                    k += 1
    results: dict[tuple[str, int], tuple[str, dict]] = {}
    if jobs > 1 and len(work) > 1:
        order = sorted(work, key=lambda w: -_cost_guess(w[2][0]))
        with ProcessPoolExecutor(jobs) as pool:
            for (stem, k, _), res in zip(order, pool.map(_job, [w[2] for w in order])):
                results[(stem, k)] = res
    else:
        for stem, k, job in work:
            results[(stem, k)] = _job(job)
    report: dict[str, Any] = {"pages": {}, "explorers": []}
    for p in paths:
        info = by_stem[p.stem]
        i = [x["stem"] for x in all_infos].index(p.stem)
        prev = all_infos[i - 1] if i > 0 else None
        nxt = all_infos[i + 1] if i + 1 < len(all_infos) else None
        blocks = []
        k = 0
        while (p.stem, k) in results:
            block, rep = results[(p.stem, k)]
            blocks.append(block)
            report["explorers"].append({**rep, "page": p.stem})
            k += 1
        text = page_html(p, info, prev, nxt, blocks)
        (out / f"{p.stem}.html").write_text(text)
        report["pages"][p.stem] = len(text.encode())
    index = index_html(all_infos)
    (out / "index.html").write_text(index)
    report["pages"]["index"] = len(index.encode())
    report["total"] = sum(report["pages"].values())
    report["seconds"] = time.perf_counter() - t0
    return report


def _cost_guess(name: str) -> int:
    return {"masking": 9, "query": 8, "positions": 7, "kernel_regression": 6}.get(name, 1)


def _table(report: dict) -> str:
    lines = [
        "| page | explorer | live controls | fixed | frames | MB | build s |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in report["explorers"]:
        lines.append(
            f"| {e['page']} | {e['builder']} | {', '.join(e['live'])} | "
            f"{', '.join(e['not_live']) or '—'} | {_frames(e)} | {e['bytes'] / 1e6:.2f} | "
            f"{e['seconds']:.1f} |"
        )
    big = max((v, k) for k, v in report["pages"].items())
    lines.append(
        f"site: {len(report['pages'])} pages, {report['total'] / 1e6:.1f} MB "
        f"(largest {big[1]} {big[0] / 1e6:.1f} MB) in {report['seconds']:.0f} s"
    )
    return "\n".join(lines)


def _frames(e: dict) -> str:
    basis = e.get("basis", 1)
    return f"{e['frames']} × {basis} (affine basis)" if basis > 1 else str(e["frames"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the site")
    b.add_argument("--out", type=Path, default=ROOT / "site")
    b.add_argument("--jobs", type=int, default=2)
    b.add_argument("notebooks", nargs="*", type=Path)
    a = ap.parse_args(argv)
    report = build(a.out, [Path(p).resolve() for p in a.notebooks] or None, a.jobs)
    print(_table(report))
    (a.out / "report.json").write_text(json.dumps(report, indent=1))
    over = [k for k, v in report["pages"].items() if v > PAGE_BUDGET]
    if over or report["total"] > SITE_BUDGET:
        print(f"over budget: pages {over}, total {report['total'] / 1e6:.1f} MB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
