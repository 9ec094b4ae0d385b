"""The static site for keyboard and screen-reader users (issue 35, WCAG 2.1 AA).

Every page of ``site/`` and ``site/zh/`` opened from disk in Chromium: axe-core's WCAG 2.0/2.1 A
and AA rules (axe-playwright-python bundles axe-core: nothing is fetched) find no violation; every
explorer canvas is an image with a name; a slider moved with the keyboard alone changes the picture,
the readout and, once the move has settled, the polite live description, in the page's language.

``ATTNLIB_SITE_DIR`` and ``ATTNLIB_SITE_PAGES`` as in tests/test_site.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from harness import (  # noqa: E402
    BOTH,
    CANVAS_HASH,
    chromium,
    missing_browser,
    offline_context,
)

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@pytest.fixture(scope="module", autouse=True)
def _chromium():
    msg = missing_browser()
    if msg is not None:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(msg + " (REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _open(browser, path: Path):
    ctx, aborted = offline_context(browser)
    page = ctx.new_page()
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    for host in page.locator(".site-explorer").all():
        host.locator(".attnlib-canvas[data-frames]:not([data-frames='0'])").wait_for(timeout=20_000)
    return ctx, page, aborted


def _violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    res = Axe().run(page, options={"runOnly": {"type": "tag", "values": WCAG_AA}})
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in res.response["violations"]
    ]


@pytest.mark.parametrize("stem", ["index", "zh/index", *BOTH])
def test_no_axe_wcag_aa_violation(site, browser, stem):
    ctx, page, aborted = _open(browser, site / f"{stem}.html")
    try:
        assert _violations(page) == []
        assert aborted == [], aborted
    finally:
        ctx.close()


@pytest.mark.parametrize("stem", BOTH)
def test_every_explorer_by_keyboard_alone_with_a_named_picture_and_a_live_description(
    site, browser, stem
):
    ctx, page, _ = _open(browser, site / f"{stem}.html")
    zh = stem.startswith("zh/")
    try:
        for host in page.locator(".site-explorer").all():
            name = host.get_attribute("data-builder")
            root = host.locator(".attnlib-canvas")
            canvas = root.locator("canvas")
            live = root.locator(".attnlib-live")
            assert canvas.get_attribute("role") == "img", name
            label = canvas.get_attribute("aria-label") or ""
            # the explorer's shown name: its words' title in the page's language (issue 32), the
            # builder's name where it has none
            spec = json.loads(host.locator("script.attnlib-spec").text_content())
            shown = (spec["traits"].get("words") or {}).get("title") or name
            assert shown in label, (name, shown, label)
            assert ("交互演示" in label) == zh, (name, label)
            assert live.get_attribute("aria-live") == "polite", name
            # the first description comes once the first frame has settled
            page.wait_for_function("e => e.textContent.length > 0", arg=live.element_handle())
            sliders = host.locator("input[type=range][data-control]:not([disabled])").all()
            if not sliders:
                continue
            slider = sliders[0]
            slider.focus()
            assert slider.evaluate("e => document.activeElement === e"), name
            before = (
                root.get_attribute("data-values"),
                canvas.evaluate(CANVAS_HASH),
                live.text_content(),
            )
            lo, hi, v = slider.evaluate("e => [+e.min, +e.max, +e.value]")
            page.keyboard.press("ArrowLeft" if v >= hi else "ArrowRight")
            page.wait_for_function(
                "([e, t]) => e.textContent !== t",
                arg=[live.element_handle(), before[2]],
                timeout=10_000,
            )
            after = (
                root.get_attribute("data-values"),
                canvas.evaluate(CANVAS_HASH),
                live.text_content(),
            )
            assert after[0] != before[0], f"{name}: the key did not move {slider}"
            assert after[1] != before[1], f"{name}: the picture did not change"
            assert after[2] != before[2], f"{name}: the live description did not change"
    finally:
        ctx.close()
