"""The canvas (explorer.js, in Chromium) and the stored picture (render.py, matplotlib) draw each
artist kind the same way: one small scene per kind, both pictures compared pixel by pixel.

The front end runs on a bare page (no JupyterLab): explorer.js's ``render`` gets a stand-in model
holding the view's traits, and the ``now`` message the kernel sends, exactly as built by the
Explorer. Both pictures are ``scene.width x scene.height`` pixels (device scale 1, dpi 100).

What is compared, inside the panel's plot area less 3 px (the frame and the spines differ by
design), on the *ink* (pixels at least 40/255 away from white in some channel):

* **where**: at least 95 % of each picture's ink lies within ``REACH`` px of the other's ink
  (both ways). ``REACH`` = 2 px: the two rasterisers place an edge up to half a pixel apart
  (canvas coordinates are pixel corners, Agg snaps rectangles to pixel centres) and antialias
  a further pixel on each side; a line width given in pixels is drawn as ``width * 72/100`` pt by
  matplotlib, the same pixels. Text is the exception: the browser's sans-serif and matplotlib's
  DejaVu Sans differ in glyph shapes and widths (DejaVu is ~15 % wider), so for text only the
  ink's bounding box is compared: its centre within 2 px across, its top and bottom within 3 px,
  its width within 20 %.
* **colour**: the mean colour of the ink agrees within 40/255 per channel (antialiased edge
  pixels are lighter in both; a wrong colour, colour map or alpha moves the mean by far more),
  and so does the mean colour of the ink of every 8 x 8 px block that is at least half ink in
  both (a heatmap cell, a bar, a marker): a swapped colour of one bar or cell does not move the
  overall mean, but moves its blocks' by far more than the lighter antialiased edge pixels do.

It catches a kind drawn in the wrong place, size, shape or colour by one side, or not at all. It
cannot catch sub-pixel differences, a changed hatch pattern density, or font details.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest

JS = Path(__file__).resolve().parents[2] / "attnlib" / "widgets" / "framework" / "explorer.js"
REACH, COVER, INK, COLOUR, BLOCK = 2, 0.95, 40, 40, 8


def _scenes():
    from attnlib.widgets.framework.artists import (
        Arrows,
        Bars,
        Heatmap,
        Line,
        Points,
        Polygon,
        Segments,
        Text,
    )
    from attnlib.widgets.framework.scene import cells

    plain = dict(xlim=(0.0, 10.0), ylim=(0.0, 10.0), xticks=[], yticks=[])
    heat = {**cells(3, 4), "xticks": [], "yticks": [], "xticklabels": [], "yticklabels": []}
    zig = [[1.0, 1.0], [4.0, 8.0], [6.0, 2.0], [9.0, 9.0]]
    return {
        "heatmap": (
            [Heatmap("v", hidden="h", cmap="viridis")],
            {"v": np.linspace(0, 1, 12).reshape(3, 4), "h": np.eye(3, 4)},
            heat,
        ),
        # row 0 at the bottom, 31 x 31 cells (an additive surface's size), a diverging map
        "heatmap-upright": (
            [Heatmap("v", vmin=-1.0, vmax=1.0, cmap="cividis")],
            {"v": np.sin(np.add.outer(np.arange(31) / 5.0, np.arange(31) / 7.0))},
            {**heat, "xlim": (-0.5, 30.5), "ylim": (-0.5, 30.5)},
        ),
        # NaN cells (half of them, in a block): matplotlib draws the map's "bad" colour
        # (transparent, so the white background) and so must the canvas, not black (issue 27)
        "heatmap-nan": (
            [Heatmap("v", cmap="viridis")],
            {"v": np.where(np.arange(12).reshape(3, 4) % 4 < 2, np.nan, 0.7)},
            heat,
        ),
        "heatmap-annotated": (
            [Heatmap("v", vmin=-1.0, vmax=1.0, cmap="cividis", annotate=True, hidden="h")],
            {"v": np.linspace(-1, 1, 12).reshape(3, 4), "h": np.fliplr(np.eye(3, 4))},
            heat,
        ),
        "bars": (
            [Bars("b", colors=["C0", "C1", "C2"])],
            {"b": [3.0, 7.0, 5.0]},
            dict(xlim=(-0.6, 2.6), ylim=(0.0, 10.0), xticks=[], yticks=[]),
        ),
        **{
            f"points{m}": (
                [Points("p", marker=m, size=8, color="C3")],
                {"p": [[2.0, 2.0], [5.0, 7.0], [8.0, 4.0]]},
                plain,
            )
            for m in ("o", "s", "^", "*")
        },
        "points-open": (
            [Points("p", size=8, filled=False, color="C0")],
            {"p": [[3.0, 3.0], [7.0, 6.0]]},
            plain,
        ),
        "line": ([Line("l", width=3.0, color="C1")], {"l": zig}, plain),
        "line-dashed": ([Line("l", width=2.0, dash=True, color="C0")], {"l": zig}, plain),
        "segments": (
            [Segments("s", widths="w", color="C2")],
            {"s": [[[1.0, 1.0], [9.0, 3.0]], [[2.0, 8.0], [8.0, 6.0]]], "w": [2.0, 5.0]},
            plain,
        ),
        "arrows": (
            [Arrows("a", width=2.0, color="C3")],
            {"a": [[[1.0, 1.0], [8.0, 8.0]], [[2.0, 7.0], [7.0, 3.0]]]},
            plain,
        ),
        "polygon": (
            [Polygon("g", color="C2", alpha=0.5, edge="black")],
            {"g": [[1.0, 1.0], [9.0, 2.0], [6.0, 9.0], [2.0, 7.0]]},
            plain,
        ),
        "text": ([Text(5.0, 5.0, key="t", size=20, ha="center")], {}, plain),
    }


SCENES = sorted(_scenes())


def _explorer(kind):
    from attnlib.widgets.framework.controls import dropdown
    from attnlib.widgets.framework.explorer import Explorer
    from attnlib.widgets.framework.scene import Frame, Panel, Scene

    artists, arrays, panel = _scenes()[kind]
    scene = Scene([Panel(artists, **panel)], width=300, height=240)
    frame = Frame(arrays=arrays, texts={"t": "Attention"})
    return Explorer({"c": dropdown("c", ["only"])}, lambda c: frame, scene, name=kind)


def _canvas_png(page, ex) -> bytes:
    """explorer.js's picture of ``ex``'s current frame, drawn on a bare page."""
    sent = []
    ex.view.send = lambda content, buffers=None: sent.append((content, buffers))
    ex._on_msg(ex.view, {"type": "ready"}, [])
    messages = [
        [c, [base64.b64encode(bytes(b)).decode("ascii") for b in buffers]] for c, buffers in sent
    ]
    traits = {k: getattr(ex.view, k) for k in ("scene", "fast", "groups", "meta")}
    page.set_content("<html><body style='margin:0'><div id='el'></div></body></html>")
    page.add_script_tag(
        content=JS.read_text() + "\nwindow.__attnlibRender = render;\n", type="module"
    )
    page.wait_for_function("() => window.__attnlibRender !== undefined")
    page.evaluate(
        """([traits, messages]) => {
          const handlers = {};
          const bytes = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0)).buffer;
          const model = {
            get: (k) => traits[k],
            on: (ev, fn) => { handlers[ev] = fn; },
            send: (m) => {
              if (m.type !== "ready") return;
              for (const [msg, bufs] of messages) handlers["msg:custom"](msg, bufs.map(bytes));
            },
          };
          window.__attnlibRender({ model, el: document.getElementById("el") });
        }""",
        [traits, messages],
    )
    page.wait_for_function(
        "() => Number(document.querySelector('.attnlib-canvas').dataset.frames) > 0"
    )
    url = page.evaluate("() => document.querySelector('.attnlib-canvas canvas').toDataURL()")
    return base64.b64decode(url.split(",", 1)[1])


def _rgb(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64)


def _near(mask: np.ndarray, r: int) -> np.ndarray:
    """``mask`` dilated by a square of radius ``r`` px."""
    out = np.zeros_like(mask)
    padded = np.pad(mask, r)
    h, w = mask.shape
    for dy in range(2 * r + 1):
        for dx in range(2 * r + 1):
            out |= padded[dy : dy + h, dx : dx + w]
    return out


@pytest.fixture(scope="module")
def page(browser):
    context = browser.new_context(viewport={"width": 400, "height": 320}, device_scale_factor=1)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("kind", SCENES)
def test_the_canvas_draws_each_artist_kind_as_the_stored_picture_does(page, kind):
    from attnlib.widgets.framework.render import render_png

    ex = _explorer(kind)
    canvas, mpl = _rgb(_canvas_png(page, ex)), _rgb(render_png(ex.scene, ex.frame()))
    assert canvas.shape == mpl.shape == (240, 300, 3)
    left, top, w, h = ex.scene.rects()[0]
    box = (slice(int(top) + 3, int(top + h) - 3), slice(int(left) + 3, int(left + w) - 3))
    a, b = canvas[box], mpl[box]
    ink_a, ink_b = (255 - a).max(-1) >= INK, (255 - b).max(-1) >= INK
    assert ink_a.sum() >= 20 and ink_b.sum() >= 20, f"{kind}: a side drew (almost) nothing"
    if kind == "text":
        ya, xa = np.nonzero(ink_a)
        yb, xb = np.nonzero(ink_b)
        boxes = np.array([[ya.min(), ya.max(), xa.min(), xa.max()],
                          [yb.min(), yb.max(), xb.min(), xb.max()]])  # fmt: skip
        (a_top, a_bottom, a_left, a_right), (b_top, b_bottom, b_left, b_right) = boxes
        centre_x = abs((a_left + a_right) - (b_left + b_right)) / 2
        assert centre_x <= 2 and abs(a_top - b_top) <= 3 and abs(a_bottom - b_bottom) <= 3, (
            f"text ink boxes (top, bottom, left, right) {boxes.tolist()}"
        )
        width_a, width_b = a_right - a_left, b_right - b_left
        assert abs(width_a - width_b) <= 0.2 * width_b, f"text widths {width_a}, {width_b}"
    else:
        a_in_b = (ink_a & _near(ink_b, REACH)).sum() / ink_a.sum()
        b_in_a = (ink_b & _near(ink_a, REACH)).sum() / ink_b.sum()
        assert a_in_b >= COVER and b_in_a >= COVER, (
            f"{kind}: {a_in_b:.1%} of the canvas's ink lies near matplotlib's, {b_in_a:.1%} "
            f"the other way"
        )
    mean_a, mean_b = a[ink_a].mean(0), b[ink_b].mean(0)
    assert np.abs(mean_a - mean_b).max() <= COLOUR, (
        f"{kind}: mean ink colour {mean_a.round()} on the canvas, {mean_b.round()} in matplotlib"
    )
    # and block by block where both are at least half ink (see the module doc)
    H, W = (n // BLOCK * BLOCK for n in ink_a.shape)
    blocks = lambda x: x[:H, :W].reshape(H // BLOCK, BLOCK, W // BLOCK, BLOCK, -1).mean((1, 3))  # noqa: E731
    cover_a, cover_b = blocks(ink_a[..., None].astype(float)), blocks(ink_b[..., None] * 1.0)
    solid = (cover_a[..., 0] >= 0.5) & (cover_b[..., 0] >= 0.5)
    inked_a = blocks(a * ink_a[..., None]) / np.maximum(cover_a, 1e-9)  # mean colour of the ink
    inked_b = blocks(b * ink_b[..., None]) / np.maximum(cover_b, 1e-9)
    gap = np.abs(inked_a - inked_b)[solid]
    assert gap.size == 0 or gap.max() <= COLOUR, (
        f"{kind}: a solid block's colour differs by {gap.max():.0f}/255 ({solid.sum()} blocks)"
    )


def test_the_canvas_follows_a_change_of_device_pixel_ratio(browser):
    # Zooming the page (or moving it to another monitor) changes devicePixelRatio; the canvas is
    # then resized to the new ratio and drawn again, sharp, instead of being stretched.
    context = browser.new_context(viewport={"width": 400, "height": 320}, device_scale_factor=1)
    page = context.new_page()
    ex = _explorer("heatmap")
    before = _rgb(_canvas_png(page, ex))
    size = (
        "() => [document.querySelector('.attnlib-canvas canvas')].map(c => [c.width, c.height])[0]"
    )
    assert page.evaluate(size) == [ex.scene.width, ex.scene.height]
    cdp = context.new_cdp_session(page)
    cdp.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 400, "height": 320, "deviceScaleFactor": 2, "mobile": False},
    )
    # (headless Chromium fires neither matchMedia's change nor resize for an emulated ratio;
    # a zoom fires resize, so the test does as a zoom does)
    page.evaluate("() => window.dispatchEvent(new Event('resize'))")
    page.wait_for_function(
        f"() => document.querySelector('.attnlib-canvas canvas').width === {2 * ex.scene.width}"
    )
    assert page.evaluate(size) == [2 * ex.scene.width, 2 * ex.scene.height]
    # the same picture at twice the pixels: every other pixel of the new canvas is close to the old
    url = page.evaluate("() => document.querySelector('.attnlib-canvas canvas').toDataURL()")
    after = _rgb(base64.b64decode(url.split(",", 1)[1]))
    half = after[::2, ::2].astype(int)
    assert np.mean(np.abs(half - before.astype(int)) > 40) < 0.05
    context.close()
