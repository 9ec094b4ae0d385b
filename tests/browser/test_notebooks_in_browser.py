"""Run each widget notebook in JupyterLab in a real browser and drag its sliders with the mouse.

For every notebook in ``specs.NOTEBOOKS``: open it in Chromium, Run All Cells, check that no
cell shows an error, then for each explorer (``.attnlib-explorer``) drag its first slider with
the mouse and check that (1) the readout (``.attnlib-readout``) and the ipympl canvas change, and
(2) they show the right values: the readout's ``data-state`` tells which builder, arguments and
control values the kernel used; we build the same explorer here, set the same values, and
compare the readout's numbers and the picture's pixels.

Run it on its own: ``pytest tests/browser`` (the unit run uses ``--ignore=tests/browser``).
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
import time

import numpy as np
import pytest

from specs import NOTEBOOKS

RUN_TIMEOUT_S = 150  # notebook 08 trains a small model
NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _numbers(text: str) -> list[str]:
    return [n.replace("−", "-") for n in NUMBER.findall(text)]


def _readout_text_numbers_from_html(value: str) -> list[str]:
    body = re.sub(r"<div class='attnlib-state'[^>]*></div>", "", value)
    return _numbers(html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _wait(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def _session(lab, notebook):
    for s in lab.api("sessions"):
        if s.get("path") == notebook or s.get("notebook", {}).get("path") == notebook:
            return s
    return None


def _kernel_idle(lab, kernel_id) -> bool:
    k = lab.api(f"kernels/{kernel_id}")
    return k["execution_state"] == "idle" and k.get("connections", 0) >= 1


def _canvas_png(explorer) -> bytes:
    url = explorer.locator(".jupyter-matplotlib-canvas-div canvas").first.evaluate("c => c.toDataURL('image/png')")
    return base64.b64decode(url.split(",", 1)[1])


def _state(explorer) -> dict:
    raw = explorer.locator(".attnlib-readout .attnlib-state").first.get_attribute("data-state")
    return json.loads(raw)


def _drag_first_slider(page, explorer, dx: float) -> None:
    handle = explorer.locator(".widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y, steps=8)
    page.mouse.up()


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_notebook_widgets_respond_to_the_mouse_with_the_right_values(notebook, lab, browser):
    from PIL import Image

    from attnlib.widgets import BUILDERS, figure_backend

    expected = NOTEBOOKS[notebook]
    assert (lab.root / notebook).exists(), f"notebooks/{notebook} is listed in specs.py but does not exist"
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    page = context.new_page()
    console_errors = []
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    # e.g. ipywidgets' "Error setting state: ..." when a widget model breaks in the front-end
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error"
            and "Failed to load resource" not in m.text else None)
    session = None
    try:
        workspace = re.sub(r"\W", "", notebook)
        page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={lab.token}")
        session = _wait(lambda: _session(lab, notebook), 60, f"a kernel session for {notebook}")
        # The toolbar's kernel indicator says idle too early (RECIPES.md): ask the server.
        _wait(lambda: _kernel_idle(lab, session["kernel"]["id"]), 60, "the kernel to be idle and connected")
        page.locator(".jp-Notebook").first.wait_for()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

        def finished():
            prompts = page.locator(".jp-Notebook .jp-InputArea-prompt").all_inner_texts()
            return (prompts and not any("*" in p for p in prompts)
                    and all(re.search(r"\[\d+\]", p) or not p.strip() for p in prompts)
                    and _kernel_idle(lab, session["kernel"]["id"]))

        _wait(finished, RUN_TIMEOUT_S, f"{notebook} to finish running")

        errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        assert errors.count() == 0, f"{notebook} shows error output:\n" + "\n---\n".join(errors.all_inner_texts())[:3000]

        explorers = page.locator(".attnlib-explorer")
        _wait(lambda: explorers.count() >= len(expected), 30, f"{len(expected)} explorers to render")
        shown = [_state(explorers.nth(i))["builder"] for i in range(explorers.count())]
        assert set(expected) <= set(shown), f"{notebook} should show {expected}, shows {shown}"

        for i in range(explorers.count()):
            ex_el = explorers.nth(i)
            if ex_el.locator(".widget-slider .noUi-handle").count() == 0:
                continue
            ex_el.scroll_into_view_if_needed()
            canvas = ex_el.locator(".jupyter-matplotlib-canvas-div canvas").first
            canvas.wait_for()
            before_state, before_text = _state(ex_el), ex_el.locator(".attnlib-readout").inner_text()
            before_png = _wait(lambda: _canvas_png(ex_el), 10, "the figure")
            _drag_first_slider(page, ex_el, dx=70)
            # continuous_update: the kernel answers after the readout moves; wait for it to settle.
            _wait(lambda: _state(ex_el)["controls"] != before_state["controls"], 20, "the kernel to see the drag")
            _wait(lambda: _kernel_idle(lab, session["kernel"]["id"]), 30, "the kernel to finish updating")

            def settled():
                a = (_state(ex_el), _canvas_png(ex_el))
                time.sleep(0.4)
                b = (_state(ex_el), _canvas_png(ex_el))
                return b if a == b else None

            after_state, after_png = _wait(settled, 20, "the readout and the figure to settle")
            after_text = ex_el.locator(".attnlib-readout").inner_text()
            name = after_state["builder"]
            assert after_text != before_text, f"{name}: the readout did not change after the drag"
            assert after_png != before_png, f"{name}: the figure did not change after the drag"

            if not after_state["reproducible"]:
                continue  # built from objects (e.g. a trained model) we cannot rebuild here
            with figure_backend("agg"):
                ref = BUILDERS[name](*after_state["args"], **after_state["kwargs"])
            ref.set_values(after_state["controls"])
            assert _numbers(after_text) == _readout_text_numbers_from_html(ref.readout_html()), (
                f"{name}: the browser shows\n{after_text}\nbut the builder in Python shows\n{ref.readout_html()}")
            shown_px = np.asarray(Image.open(io.BytesIO(after_png)).convert("RGBA")).astype(int)
            ref_px = ref.render().astype(int)
            assert shown_px.shape == ref_px.shape, f"{name}: canvas {shown_px.shape} vs figure {ref_px.shape}"
            off = (np.abs(shown_px - ref_px).max(axis=-1) > 8).mean()
            if off >= 0.01 and os.environ.get("ATTNLIB_BROWSER_ARTIFACTS"):
                out = os.environ["ATTNLIB_BROWSER_ARTIFACTS"]
                Image.fromarray(shown_px.astype(np.uint8)).save(os.path.join(out, f"{name}_browser.png"))
                Image.fromarray(ref_px.astype(np.uint8)).save(os.path.join(out, f"{name}_python.png"))
            assert off < 0.01, f"{name}: {off:.2%} of the canvas pixels differ from the figure drawn in Python"
        assert not console_errors, f"{notebook}: errors in the browser console: {console_errors}"
    finally:
        try:
            if session is not None:
                lab.api(f"sessions/{session['id']}", method="DELETE")
        except Exception:
            pass
        context.close()
