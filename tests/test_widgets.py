"""The legacy ipympl explorers (``attnlib.widgets.base``) until they are ported: every control of each.

The canvas framework (``attnlib.widgets.explorer``) is tested in test_widgets_explorer.py.
Runs headless (Agg canvas, and ipympl's canvas widget without a front-end); the browser test in
tests/browser/ drives the same builders through JupyterLab.
"""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest
import torch

from attnlib.widgets import BUILDERS, figure_backend
from attnlib.widgets import base
from attnlib.widgets.base import Explorer, float_slider, new_figure, png_rgba, register
from attnlib.widgets.testing import control_values

LEGACY = sorted(n for n, b in BUILDERS.items() if n in base.BUILDERS)


def _leaves(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


def _numbers(state) -> np.ndarray:
    return np.array([float(v) for v in _leaves(state) if isinstance(v, (int, float)) and not isinstance(v, bool)])


def _max_change(a: dict, b: dict) -> float:
    """Largest change of any number between two states (inf if their structure differs)."""
    if a.keys() != b.keys():
        return math.inf
    na, nb = _numbers(a), _numbers(b)
    if na.shape != nb.shape:
        return math.inf
    if na.size == 0:
        return 0.0 if a == b else math.inf
    return float(np.max(np.abs(na - nb)))


@pytest.mark.parametrize("name", LEGACY)
def test_every_control_min_max_random_is_finite_and_moves_the_picture(name):
    """Each control to its min, max and random values: no error, no NaN/inf, the figure follows."""
    rng = np.random.default_rng(0)
    with figure_backend("agg"):
        ex = BUILDERS[name]()
    fig, axes_before = ex.figure, list(ex.figure.axes)
    prev_state, prev_pixels = ex.state(), ex.render()
    checked_changes = 0
    for cname, control in ex.controls.items():
        for value in control_values(control, rng, n_random=3):
            state = ex.set(**{cname: value})
            nums = _numbers(state)
            assert np.all(np.isfinite(nums)), f"{name}: {cname}={value!r} shows non-finite numbers {state}"
            assert ex.error is None
            if ex.dynamic:
                # Blitting must paint what a full redraw paints (every changed artist is dynamic).
                blitted = np.asarray(ex.canvas.buffer_rgba()).copy()
                pixels = ex.render()
                differ = np.any(blitted != pixels, axis=-1).mean()
                assert differ < 0.005, (f"{name}: after {cname}={value!r} the blitted frame differs from a "
                                        f"full redraw in {differ:.2%} of pixels: an updated artist is "
                                        f"missing from dynamic=[...]")
            else:
                pixels = ex.render()
            if _max_change(prev_state, state) > 0.05:
                assert np.any(pixels != prev_pixels), f"{name}: numbers changed ({cname}={value!r}) but the figure did not"
                checked_changes += 1
            prev_state, prev_pixels = state, pixels
    assert checked_changes > 0, f"{name}: no control changed the numbers shown"
    assert ex.figure is fig and list(fig.axes) == axes_before, f"{name}: the figure was rebuilt"


@pytest.mark.parametrize("name", LEGACY)
def test_readout_carries_css_class_and_the_control_state(name):
    with figure_backend("agg"):
        ex = BUILDERS[name]()
    assert "attnlib-readout" in ex.readout._dom_classes
    assert "attnlib-explorer" in ex.widget._dom_classes
    m = re.search(r'data-state="([^"]*)"', ex.readout_html())
    assert m, "readout has no data-state"
    import html

    payload = json.loads(html.unescape(m.group(1)))
    assert payload["builder"] == name
    assert payload["controls"] == ex.values()
    assert payload["reproducible"] is True  # built with its defaults


# ------------------------------------------------------------------- the framework


def _legacy(backend="agg"):
    """A small legacy explorer: two sliders and a point."""
    fig, ax = new_figure(backend=backend)
    ax.set_xlim(-3, 3)
    ax.set_ylim(-3, 3)
    (pt,) = ax.plot([0.0], [0.0], "o")

    def update(x, y):
        pt.set_data([x], [y])
        return {"xy": [x, y], "r": math.hypot(x, y)}

    return Explorer({"x": float_slider("x", -3.0, 3.0, 1.0), "y": float_slider("y", -3.0, 3.0, 2.0)}, update, fig,
                    dynamic=[pt])


def test_explorer_updates_in_place_when_a_control_changes():
    ex = _legacy()
    n = ex.n_updates
    ex.controls["x"].value = -1.5  # as the browser does: the observer runs the update
    assert ex.n_updates == n + 1
    assert ex.values()["x"] == -1.5
    s1 = ex.state()
    ex.set(x=-1.5, y=0.0)  # one update for two controls
    assert ex.n_updates == n + 2
    assert s1 != ex.state()


def test_set_clips_to_the_slider_range_and_rejects_unknown_names():
    ex = _legacy()
    ex.set(x=10.0)
    assert ex.values()["x"] == 3.0
    with pytest.raises(KeyError, match="unknown control"):
        ex.set(z=1.0)


def test_update_must_return_a_dict():
    fig, ax = new_figure(backend="agg")
    with pytest.raises(TypeError, match="update must return a dict"):
        Explorer({"a": float_slider("a", 0.0, 1.0, 0.5)}, lambda a: a, fig)


def test_update_error_is_shown_in_the_readout():
    fig, ax = new_figure(backend="agg")

    def update(a):
        if a > 0.9:
            raise ValueError("a too large")
        return {"a": a}

    ex = Explorer({"a": float_slider("a", 0.0, 1.0, 0.5)}, update, fig)
    with pytest.raises(ValueError):
        ex.controls["a"].value = 1.0
    assert "a too large" in ex.readout_html() and "attnlib-error" in ex.readout_html()


def test_readout_rounds_and_never_shows_negative_zero():
    fig, ax = new_figure(backend="agg")
    ex = Explorer({"a": float_slider("a", -1.0, 1.0, 0.0)},
                  lambda a: {"v": torch.tensor([a, -1e-9, 1 / 3]), "m": [[1, 2], [3, 4]], "label": "x<y"}, fig,
                  digits=3)
    h = ex.readout_html()
    assert "0.333" in h and "-0.000" not in h and "x&lt;y" in h
    assert ex.state()["v"][2] == pytest.approx(1 / 3)
    assert ex.state()["m"] == [[1, 2], [3, 4]]


def test_register_refuses_duplicates_and_non_explorers():
    with pytest.raises(ValueError, match="already registered"):
        register(LEGACY[0])(lambda: None)
    try:
        bad = register("_test_not_an_explorer")(lambda: 42)
        with pytest.raises(TypeError, match="must return an Explorer"):
            bad()
    finally:
        BUILDERS.pop("_test_not_an_explorer", None)


def test_display_delegates_to_the_widget_box():
    ex = _legacy()
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.widget.model_id


@pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")  # ipympl's Toolbar
def test_ipympl_canvas_blits_and_sends_the_same_pixels_as_a_full_draw():
    from PIL import Image

    from attnlib.widgets.base import _ipympl_available

    if not _ipympl_available():  # (not importorskip: a bare `import ipympl` switches the backend)
        pytest.skip("ipympl is not installed")

    ex = _legacy("ipympl")
    from ipympl.backend_nbagg import Canvas

    assert isinstance(ex.canvas, Canvas)
    # a frame pushed before the front-end opens is kept as a proper data URL for its first image
    ex.set(x=0.5)
    assert ex.canvas._data_url.startswith("data:image/png;base64,")
    assert ex.canvas in ex.widget.children  # the canvas widget is displayed inside the explorer
    sent = []
    ex.canvas.send_binary = lambda data: sent.append(data)
    ex.render()
    ex.canvas._force_full = True
    ex.set(x=-2.0, y=1.0)
    assert sent, "no frame was sent to the front-end"
    frame = np.asarray(Image.open(io.BytesIO(sent[-1])).convert("RGBA"))
    np.testing.assert_array_equal(frame, ex.render())
    # every frame is whole (a frame lost in the browser must not leave stale pixels behind)
    ex.set(x=-1.0)
    frame = np.asarray(Image.open(io.BytesIO(sent[-1])).convert("RGBA"))
    assert ex.canvas._image_mode == "full"
    np.testing.assert_array_equal(frame, ex.render())


def test_png_rgba_round_trips():
    from PIL import Image

    rng = np.random.default_rng(0)
    px = rng.integers(0, 256, (7, 5, 4), dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_rgba(px)))), px)
    px[..., 3] = 255  # opaque: stored as RGB
    img = Image.open(io.BytesIO(png_rgba(px)))
    assert img.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(img.convert("RGBA")), px)


def test_control_values_cover_min_max_and_stay_in_range():
    import ipywidgets as w

    rng = np.random.default_rng(0)
    s = w.FloatSlider(min=-2.0, max=3.0, value=0.0)
    vals = control_values(s, rng, n_random=4)
    assert vals[:2] == [-2.0, 3.0] and len(vals) == 6 and all(-2 <= v <= 3 for v in vals)
    assert control_values(w.Checkbox(value=True), rng) == [False, True]
    assert control_values(w.Dropdown(options=["a", "b"]), rng) == ["a", "b"]
    log = control_values(w.FloatLogSlider(min=0, max=3, base=2, value=2), rng)
    assert log[:2] == [1.0, 8.0]
    assert control_values(w.IntSlider(min=1, max=4, value=2), rng)[:2] == [1, 4]


def test_making_an_ipympl_explorer_leaves_the_matplotlib_backend_alone():
    """`import ipympl` calls matplotlib.use(ipympl); a notebook on `%matplotlib inline` must keep it."""
    import subprocess
    import sys

    from attnlib.widgets import base

    legacy = sorted(n for n in base.BUILDERS if not n.startswith("_"))  # builders still on ipympl
    if not legacy:
        pytest.skip("every builder is ported: no ipympl explorer left")
    code = ("import matplotlib, matplotlib.pyplot as plt; matplotlib.use('agg'); "
            "from attnlib.widgets import BUILDERS, figure_backend\n"
            f"with figure_backend('ipympl'): ex = BUILDERS[{legacy[0]!r}]()\n"
            "assert type(ex.canvas).__module__ != 'matplotlib.backends.backend_agg'\n"
            "print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "agg"
