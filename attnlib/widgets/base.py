"""A small framework for interactive explorers: controls + one figure updated in place + a readout.

How to write a builder (in ``attnlib/widgets/<concept>.py``)::

    import torch
    from attnlib import plotting
    from attnlib.widgets.base import Explorer, float_slider, new_figure, register

    @register("temperature")                        # the name tests and the benchmark use
    def temperature_explorer(logits=(2.0, 1.0, 0.1)):  # callable with NO arguments (teaching defaults)
        z = torch.tensor(logits)
        controls = {"t": float_slider("temperature", 0.1, 5.0, 1.0, step=0.05)}
        fig, ax = new_figure(figsize=(5, 3))           # the figure is built ONCE
        bars = plotting.weight_bars(torch.softmax(z, -1), ax=ax, title="softmax(z / t)")

        def update(t):                                 # one keyword per control name
            w = torch.softmax(z / t, -1)
            plotting.set_bar_heights(bars, w)          # update artists in place, never a new figure
            return {"weights": w}                      # the numbers the readout shows

        return Explorer(controls, update, fig, dynamic=bars.patches, columns=["z1", "z2", "z3"])

Then add one line ``from attnlib.widgets.<concept> import <builder>  # noqa: F401,E402`` to
``attnlib/widgets/__init__.py`` (that fills ``BUILDERS``) and one line per notebook to
``tests/browser/specs.py``. ``dynamic=`` lists every artist ``update`` changes: only those are
redrawn, over a cached picture of the rest (blitting), which is what keeps an update under
30 ms; the control-sweep test checks that the blitted frame equals a full redraw, so a missing
artist is caught. Without ``dynamic`` the whole figure is redrawn (often 60-200 ms). Keep
figures small (about ``figsize=(8, 3.2)`` at the default dpi), few texts among the dynamic
artists (text is the slowest thing to draw), fix axis limits / ``vmin``/``vmax`` at build time,
and never call ``ax.relim``, ``plt.*`` or create artists inside ``update``.

An :class:`Explorer` shows itself when it is the last expression of a cell. From Python,
``ex.set(t=2.0)`` sets controls and runs ``update`` synchronously, ``ex.state()`` returns the
numbers shown, ``ex.values()`` the control values, ``ex.render()`` the figure as an RGBA array.
In a Jupyter kernel the figure lives on an ipympl canvas (``%matplotlib widget`` or not); outside
a kernel (pytest, scripts) on a plain Agg canvas. ``with figure_backend("agg"): ...`` forces one.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import html
import itertools
import json
import math
import struct
import sys
import threading
import zlib
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = [
    "BUILDERS",
    "register",
    "Explorer",
    "new_figure",
    "figure_backend",
    "float_slider",
    "int_slider",
    "log_slider",
    "toggle",
    "dropdown",
    "control_values",
    "to_python",
    "png_rgba",
]

#: name -> builder function; filled by :func:`register` when ``attnlib.widgets`` imports each module.
BUILDERS: dict[str, Callable[..., "Explorer"]] = {}

_BACKEND: contextvars.ContextVar[str] = contextvars.ContextVar("attnlib_figure_backend", default="auto")
_FIGURE_NUMBERS = itertools.count(1)
_DRAW_LOCK = threading.RLock()

DEFAULT_FIGSIZE = (8.0, 3.2)
DEFAULT_DPI = 90


def register(name: str):
    """Decorator: add a builder to :data:`BUILDERS` under ``name``.

    The wrapped builder records its name and call arguments on the returned :class:`Explorer`
    (``ex.name``, ``ex.call``) so the browser test can rebuild the same explorer in Python.
    """

    def decorate(fn):
        if name in BUILDERS:
            raise ValueError(f"a widget builder named {name!r} is already registered ({BUILDERS[name]!r})")

        @functools.wraps(fn)
        def builder(*args, **kwargs):
            ex = fn(*args, **kwargs)
            if not isinstance(ex, Explorer):
                raise TypeError(f"builder {name!r} must return an Explorer, got {type(ex).__name__}")
            ex.name = name
            ex.call = (list(args), dict(kwargs))
            ex._refresh_readout()
            return ex

        builder.widget_name = name
        BUILDERS[name] = builder
        return builder

    return decorate


# ----------------------------------------------------------------------------- figure / canvas


@contextlib.contextmanager
def figure_backend(name: str):
    """Within the block, :func:`new_figure` uses ``name``: ``"auto"``, ``"ipympl"``, ``"agg"``."""
    if name not in ("auto", "ipympl", "agg"):
        raise ValueError(f"backend must be 'auto', 'ipympl' or 'agg', got {name!r}")
    token = _BACKEND.set(name)
    try:
        yield
    finally:
        _BACKEND.reset(token)


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _import_ipympl():
    """Import ``ipympl.backend_nbagg`` without changing matplotlib's backend.

    ``import ipympl`` calls ``matplotlib.use("module://ipympl.backend_nbagg")``, which would
    switch pyplot to ipympl in a notebook using ``%matplotlib inline`` (or in pytest). We only
    need its Canvas widget, so we put the backend back as it was.
    """
    if "ipympl.backend_nbagg" in sys.modules:
        return sys.modules["ipympl.backend_nbagg"]
    import matplotlib

    before = dict.__getitem__(matplotlib.rcParams, "backend")  # without resolving the auto backend
    import ipympl.backend_nbagg as mod

    if dict.__getitem__(matplotlib.rcParams, "backend") != before:
        if "matplotlib.pyplot" in sys.modules:
            matplotlib.use(before)
        else:
            dict.__setitem__(matplotlib.rcParams, "backend", before)
    return mod


def _ipympl_available() -> bool:
    try:
        _import_ipympl()
    except Exception:  # ImportError, or a broken install
        return False
    return True


def _resolve_backend(backend: str | None) -> str:
    backend = backend or _BACKEND.get()
    if backend == "auto":
        return "ipympl" if _in_kernel() and _ipympl_available() else "agg"
    return backend


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize=DEFAULT_FIGSIZE, dpi: float = DEFAULT_DPI,
               backend: str | None = None, **subplots_kw):
    """Create a figure for an explorer, with its canvas, outside pyplot (nothing global changes).

    Args:
        nrows, ncols: subplot grid (passed to ``Figure.subplots``).
        figsize: inches; keep it small (the default is about 720 x 290 pixels).
        dpi: dots per inch.
        backend: ``"ipympl"`` (an ipympl canvas widget, for Jupyter), ``"agg"`` (headless), or
            None to use :func:`figure_backend`'s choice (default ``"auto"``: ipympl in a kernel).
        **subplots_kw: e.g. ``width_ratios=[1, 2]``, ``squeeze``.
    Returns:
        ``(fig, axes)`` as ``Figure.subplots`` returns them. The layout is computed once
        (constrained) when the :class:`Explorer` is made, then frozen, so updates do not re-layout.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=_whole_pixels(figsize, dpi), dpi=dpi, layout="constrained")
    if _resolve_backend(backend) == "ipympl":
        FigureManager = _import_ipympl().FigureManager
        canvas = _fast_canvas_class()(fig)
        FigureManager(canvas, next(_FIGURE_NUMBERS))
        canvas.header_visible = False
        canvas.footer_visible = False
        canvas.toolbar_visible = False
        canvas.resizable = False
    else:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, **subplots_kw)
    return fig, axes


@functools.lru_cache(maxsize=None)
def _fast_canvas_class():
    """ipympl's Canvas, sending every frame whole, as a quickly compressed PNG.

    ipympl's front-end loads each frame into one ``Image`` asynchronously; a frame that arrives
    before the previous one has loaded replaces it unseen. matplotlib's own drawing waits for the
    front-end to ask for each frame, but an explorer pushes a frame on every slider step, so a
    lost *diff* frame would leave stale pixels for good. Whole frames make a lost one harmless:
    the next frame repaints everything. :func:`png_rgba` encodes them several times faster than
    PIL's default. The widget model and the front-end are ipympl's own.
    """
    Canvas = _import_ipympl().Canvas

    class FastCanvas(Canvas):
        # One frame at a time: a full draw requested by the front-end must not interleave with
        # an explorer's blit on the same pixel buffer, whatever thread handles the message.
        def draw(self):
            with _DRAW_LOCK:
                super().draw()

        def blit(self, bbox=None):
            with _DRAW_LOCK:
                super().blit(bbox)

        def get_diff_image(self):
            if not self._png_is_old:
                return None
            pixels = np.asarray(self.get_renderer().buffer_rgba())  # (H, W, 4)
            self.set_image_mode("full")
            self._last_buff = pixels.view(np.uint32).squeeze(2).copy()
            self._force_full = False
            self._png_is_old = False
            return png_rgba(pixels)

        def send_binary(self, data):
            # Until the front-end says "initialized", ipympl keeps the last frame in ``_data_url``
            # for the model's first image, but without the "data:" prefix, so a front-end that
            # opens after a frame was pushed (e.g. ``ex.set`` in a later cell of Run All) loads a
            # broken image and never sizes its canvas. Our frames are already PNG: store them whole.
            if self.syncing_data_url:
                self._data_url = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
            self.send({"data": '{"type": "binary"}'}, buffers=[data])

    return FastCanvas


def png_rgba(pixels: np.ndarray, level: int = 1) -> bytes:
    """Encode ``(H, W, 4)`` uint8 RGBA pixels as a PNG quickly (no row filters, zlib ``level``).

    Fully opaque pixels are stored as RGB (a quarter less to compress).
    """
    h, w, _ = pixels.shape
    opaque = bool((pixels[:, :, 3] == 255).all())
    channels = 3 if opaque else 4
    raw = np.zeros((h, w * channels + 1), np.uint8)  # each row starts with filter byte 0 ("none")
    raw[:, 1:] = (pixels[:, :, :3] if opaque else pixels).reshape(h, w * channels)

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 2 if opaque else 6, 0, 0, 0)  # 8-bit RGB / RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), level)) + chunk(b"IEND", b""))


def _whole_pixels(figsize, dpi):
    """Nudge ``figsize`` so that ``figsize * dpi`` is a whole number of pixels, not 413.99999.

    Agg rounds the size while ipympl's front-end truncates it; without this they can differ
    by a pixel row and the browser shows a cropped image.
    """
    out = []
    for inches in figsize:
        px = round(inches * dpi)
        v = px / dpi
        while v * dpi < px:
            v = math.nextafter(v, math.inf)
        out.append(v)
    return tuple(out)


def _is_ipympl(canvas) -> bool:
    mod = sys.modules.get("ipympl.backend_nbagg")
    return mod is not None and isinstance(canvas, mod.Canvas)


# ----------------------------------------------------------------------------- controls

from attnlib.widgets.controls import dropdown, float_slider, int_slider, log_slider, toggle  # noqa: E402,F401


from attnlib.widgets.testing import control_values  # noqa: E402,F401


# ----------------------------------------------------------------------------- readout


def to_python(x) -> Any:
    """Convert tensors/arrays/numpy scalars (any device) to floats, ints, bools, str or nested lists."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().to("cpu")
        if x.is_floating_point():
            x = x.to(torch.float64)
        return x.tolist()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, Mapping):
        return {str(k): to_python(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_python(v) for v in x]
    return x


def _fmt(x, digits: int) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        s = f"{x:.{digits}f}"
        if float(s) == 0.0:  # no "-0.000"
            s = f"{0.0:.{digits}f}"
        return s
    return html.escape(str(x))


def _rows(name: str, value, digits: int) -> list[list[str]]:
    """Table rows ``[[label, cell, cell, ...], ...]`` for one readout entry."""
    if isinstance(value, list) and value and all(isinstance(r, list) for r in value):
        return [[html.escape(name) if i == 0 else "", *(_fmt(c, digits) for c in r)] for i, r in enumerate(value)]
    if isinstance(value, list):
        return [[html.escape(name), *(_fmt(c, digits) for c in value)]]
    return [[html.escape(name), _fmt(value, digits)]]


def _json_or_none(x):
    try:
        json.dumps(x)
    except (TypeError, ValueError):
        return None
    return x


# ----------------------------------------------------------------------------- the explorer


class Explorer:
    """Controls, one figure updated in place, and a readout of the numbers.

    Args:
        controls: ``{name: ipywidget}``; each widget's ``value`` is passed to ``update`` by name.
        update: ``update(**values) -> dict`` that moves the figure's artists in place and returns
            the numbers to show (floats, tensors, arrays, nested lists, str, bool).
        figure: the figure from :func:`new_figure`, built once.
        dynamic: the artists ``update`` changes (points, bars, images, texts). Given, only they are
            redrawn over a cached picture of the rest (blitting: a few ms per update); the rest of
            the figure must then stay as it is (fixed limits, ticks, titles, colour limits), and a
            static artist that overlaps a dynamic one is painted under it. None: the whole figure
            is redrawn on every change (simpler, slower).
        title: optional heading above the controls.
        columns: optional header labels for the readout table (e.g. ``["k1", "k2", "k3"]``).
        digits: decimals shown in the readout.
        run: call ``update`` now with the initial control values (default True).
    """

    def __init__(self, controls: Mapping[str, Any], update: Callable[..., Mapping[str, Any]], figure, *,
                 dynamic: Sequence[Any] | None = None, title: str | None = None,
                 columns: Sequence[str] | None = None, digits: int = 3, run: bool = True):
        import ipywidgets as w

        if not controls:
            raise ValueError("controls must name at least one control")
        self.controls: dict[str, Any] = dict(controls)
        self.update_fn = update
        self.figure = figure
        self.title = title
        self.columns = list(columns) if columns is not None else None
        self.digits = digits
        self.name: str | None = None
        self.call: tuple[list, dict] = ([], {})
        self.error: str | None = None
        self._state: dict[str, Any] = {}
        self._hold = False
        self.n_updates = 0
        self.dynamic = sorted(dynamic, key=lambda a: a.get_zorder()) if dynamic else []
        for a in self.dynamic:
            a.set_animated(True)  # left out of full draws; drawn over the cached background
        self._background = None
        self._background_size = None

        canvas = figure.canvas
        self.canvas = canvas
        self.readout = w.HTML(value="")
        self.readout.add_class("attnlib-readout")
        if _is_ipympl(canvas):
            view = canvas
        elif _in_kernel():
            # No ipympl: show PNGs in an Image widget, refreshed after each update.
            view = w.Image(format="png")
        else:
            view = None
        self._image = view if isinstance(view, w.Image) else None
        control_box = w.HBox(list(self.controls.values()), layout=w.Layout(flex_flow="row wrap"))
        children = ([w.HTML(f"<b>{html.escape(title)}</b>")] if title else []) + [control_box]
        children += ([view] if view is not None else []) + [self.readout]
        self.widget = w.VBox(children)
        self.widget.add_class("attnlib-explorer")

        for c in self.controls.values():
            c.observe(self._on_change, names="value")
        canvas.mpl_connect("draw_event", self._on_full_draw)
        if run:
            self._run()
        if _is_ipympl(canvas):
            canvas.draw_idle()  # the front-end asks for the first image when it is shown
        elif self._image is not None:
            self._full_draw()
            self._push_image()
        # headless Agg: nothing is drawn until render() or the first update.

    # -- driving from Python
    def values(self) -> dict[str, Any]:
        """The current control values ``{name: value}``."""
        return {k: to_python(c.value) for k, c in self.controls.items()}

    def set(self, **values) -> dict[str, Any]:
        """Set controls by name (one update for all of them), redraw, and return :meth:`state`.

        Slider values outside a control's range are clipped by ipywidgets, as the browser would.
        """
        return self.set_values(values)

    def set_values(self, values: Mapping[str, Any], *, redraw: bool = True) -> dict[str, Any]:
        """Like :meth:`set` with a dict; ``redraw=False`` updates the artists but draws nothing."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise KeyError(f"unknown control(s) {unknown}; this explorer has {sorted(self.controls)}")
        self._hold = True
        try:
            for k, v in values.items():
                self.controls[k].value = v
        finally:
            self._hold = False
        self._run()
        if redraw:
            self._redraw()
        return self.state()

    def state(self) -> dict[str, Any]:
        """The numbers shown (before rounding to ``digits``), as floats / nested lists / str."""
        return dict(self._state)

    def render(self) -> np.ndarray:
        """Draw the figure now and return its pixels, ``(height, width, 4)`` uint8."""
        self._full_draw()
        return np.asarray(self.canvas.buffer_rgba()).copy()

    def draw_now(self) -> None:
        """Finish the redraw of the last update synchronously (what the benchmark times after ``set``).

        With ``dynamic`` artists the redraw already happened in ``set`` (blitting), so this does
        nothing. Without, it renders the whole figure (with ipympl: also encodes and sends it, as
        the front-end's request after ``draw_idle`` would).
        """
        if self.dynamic:
            return
        self.canvas.draw()

    def readout_html(self) -> str:
        """The readout's HTML (what the browser shows in ``.attnlib-readout``)."""
        return self.readout.value

    # -- internals
    def _on_change(self, change):
        if self._hold:
            return
        try:
            self._run()
        except Exception as exc:  # show it where the reader looks, then let ipywidgets log it
            self.error = f"{type(exc).__name__}: {exc}"
            self._refresh_readout()
            raise
        self._redraw()

    def _run(self):
        result = self.update_fn(**{k: c.value for k, c in self.controls.items()})
        if not isinstance(result, Mapping):
            raise TypeError(f"update must return a dict of numbers to show, got {type(result).__name__}")
        self._state = {str(k): to_python(v) for k, v in result.items()}
        self.error = None
        self.n_updates += 1
        self._refresh_readout()

    def _redraw(self):
        with _DRAW_LOCK:
            self._redraw_locked()

    def _redraw_locked(self):
        if self.dynamic:
            self._blit()
            if _is_ipympl(self.canvas):
                self.canvas.blit(self.figure.bbox)  # sends the changed pixels to the front-end
            elif self._image is not None:
                self._push_image()
        elif _is_ipympl(self.canvas):
            self.canvas.draw_idle()  # the front-end asks for the new image when it is ready
        elif self._image is not None:
            self._full_draw()
            self._push_image()
        # headless Agg without dynamic artists: nothing to show; render() draws on demand.

    def _full_draw(self):
        """Render everything with Agg (the draw_event handler then caches the background)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        with _DRAW_LOCK:
            FigureCanvasAgg.draw(self.canvas)  # ipympl's own draw() would also send the image

    def _on_full_draw(self, event):
        canvas = self.canvas
        if event.canvas is not canvas:
            return
        _freeze_layout(self.figure)  # the layout was just computed: keep it for every update
        if not self.dynamic or canvas.is_saving():
            return  # savefig draws into another renderer, with the animated artists included
        renderer = canvas.get_renderer()
        if event.renderer is not renderer:
            return
        self._background = canvas.copy_from_bbox(self.figure.bbox)
        self._background_size = (renderer.width, renderer.height)
        for a in self.dynamic:
            self.figure.draw_artist(a)

    def _blit(self):
        renderer = self.canvas.get_renderer()
        if self._background is None or self._background_size != (renderer.width, renderer.height):
            self._full_draw()  # size or dpi changed (e.g. a HiDPI screen): cache a new background
            return
        self.canvas.restore_region(self._background)
        for a in self.dynamic:
            self.figure.draw_artist(a)

    def _push_image(self):
        self._image.value = png_rgba(np.asarray(self.canvas.buffer_rgba()))

    def _data_state(self) -> dict:
        args, kwargs = self.call
        payload = {"builder": self.name, "controls": self.values()}
        a, k = _json_or_none(to_python(args)), _json_or_none(to_python(kwargs))
        payload["reproducible"] = a is not None and k is not None
        payload["args"] = a if a is not None else []
        payload["kwargs"] = k if k is not None else {}
        return payload

    def _refresh_readout(self):
        rows: list[list[str]] = []
        for name, value in self._state.items():
            rows.extend(_rows(name, value, self.digits))
        width = max((len(r) for r in rows), default=1)
        head = ""
        if self.columns:
            head = "<tr><th></th>" + "".join(f"<th>{html.escape(c)}</th>" for c in self.columns) + "</tr>"
        body = "".join(
            "<tr>" + f"<th style='text-align:left;padding-right:1em'>{r[0]}</th>"
            + "".join(f"<td style='text-align:right;padding:0 0.6em;font-family:monospace'>{c}</td>" for c in r[1:])
            + "<td></td>" * (width - len(r)) + "</tr>"
            for r in rows
        )
        err = f"<div class='attnlib-error' style='color:#b00'>{html.escape(self.error)}</div>" if self.error else ""
        data = html.escape(json.dumps(self._data_state(), sort_keys=True), quote=True)
        self.readout.value = (
            f"<div class='attnlib-state' data-state=\"{data}\"></div>{err}"
            f"<table class='attnlib-table'>{head}{body}</table>"
        )

    # -- display
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self):
        return f"<Explorer {self.name or '(unregistered)'} controls={list(self.controls)}>"


def _freeze_layout(fig) -> None:
    """After the first full draw has laid the figure out, switch the layout engine off.

    Updates then keep every axes where it is (no constrained-layout pass per frame, and the
    cached background of blitting stays valid).
    """
    engine = fig.get_layout_engine()
    if engine is None or type(engine).__name__ == "PlaceHolderLayoutEngine":
        return
    fig.set_layout_engine("none")
