"""Each explorer in JupyterLab for keyboard and screen-reader users (issue 35, WCAG 2.1 AA).

For every notebook in ``specs.NOTEBOOKS``: Run All Cells, then for each explorer
(``.attnlib-explorer``): axe-core's WCAG 2.0/2.1 A and AA rules (axe-playwright-python, which
bundles axe-core) find no violation in the explorer's own DOM; its canvas is an image with a name;
its first slider, focused and moved with an arrow key alone, changes the picture and, once the
move has settled, the polite live description.
"""

from __future__ import annotations

import time

import pytest
from harness import end_session, open_and_run_all
from harness import wait as _wait
from specs import NOTEBOOKS

RUN_TIMEOUT_S = 150
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def _violations(page, index: int) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    # axe's context: the explorer's own DOM (JupyterLab's own chrome is not ours to fix)
    page.evaluate(
        "i => document.querySelectorAll('.attnlib-explorer').forEach("
        "(e, k) => { if (k === i) e.setAttribute('data-axe', '1'); "
        "else e.removeAttribute('data-axe'); })",
        index,
    )
    res = Axe().run(
        page,
        context="[data-axe='1']",
        options={"runOnly": {"type": "tag", "values": WCAG_AA}},
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in res.response["violations"]
    ]


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_each_explorer_passes_axe_and_works_by_keyboard_alone(notebook, lab, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    page = context.new_page()
    session = None
    try:
        session = open_and_run_all(page, lab, notebook, RUN_TIMEOUT_S)
        explorers = page.locator(".attnlib-explorer")
        want = len(NOTEBOOKS[notebook])
        _wait(lambda: explorers.count() >= want, 30, f"{want} explorers to render")
        for i in range(explorers.count()):
            ex = explorers.nth(i)
            ex.scroll_into_view_if_needed()
            ex.locator(".attnlib-canvas[data-frames]:not([data-frames='0'])").wait_for()
            root = ex.locator(".attnlib-canvas").first
            name = root.get_attribute("data-builder")
            canvas = root.locator("canvas").first
            live = root.locator(".attnlib-live").first
            _wait(lambda: live.text_content(), 10, f"{name}: the first description")
            assert _violations(page, i) == [], name
            assert canvas.get_attribute("role") == "img", name
            assert name in (canvas.get_attribute("aria-label") or ""), name
            assert live.get_attribute("aria-live") == "polite", name
            handles = ex.locator(".widget-slider .noUi-handle")
            if handles.count() == 0:
                continue
            png = lambda: canvas.evaluate("c => c.toDataURL('image/png')")  # noqa: E731
            before = (root.get_attribute("data-values"), png(), live.text_content())
            handles.first.focus()
            at_end = handles.first.evaluate(
                "h => h.getAttribute('aria-valuenow') === h.getAttribute('aria-valuemax')"
            )
            page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
            _wait(lambda: root.get_attribute("data-values") != before[0], 20, f"{name}: a move")
            _wait(lambda: live.text_content() != before[2], 20, f"{name}: a new description")
            time.sleep(0.5)  # let the picture settle
            assert png() != before[1], f"{name}: the picture did not change after the key"
    finally:
        end_session(lab, session, context)
