"""The course as a static site (``make site``, ``tools/site.py``), checked in Chromium from disk.

The site is built into a temporary folder. Every page is opened from ``file://`` with every
request that is not for a local file (``file:``, ``data:``, ``blob:``) aborted and counted: the
count must be 0. On every page: math is MathML and no raw ``$`` TeX is left in the prose, every
``<img>`` has alt text, every explorer is drawn and fits in 620 px of height. Every control of
every explorer is changed the way a hand does (ArrowRight on a slider, the next option of a
menu, a click on a checkbox): the canvas pixels must change, and what the page draws and shows
must equal a fresh ``BUILDERS[name](**args).compute(**values)`` in Python at the values the page
reports (the independent reference: the kernel-side computation, not the page's stored frames).
On a phone (390 x 844) every explorer has no sideways overflow, draws its text at 9 CSS px or
more and has controls at least 24 px tall; at 1280 x 720 it keeps the scene's own layout.

``ATTNLIB_SITE_DIR=site`` checks a site built already; ``ATTNLIB_SITE_PAGES=03_softmax_gradient``
builds and checks those pages only. The blob's layout alone, without Chromium:
``tests/test_site_layout.py``.
"""

from __future__ import annotations

import html
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from harness import (  # noqa: E402
    ALL_PAGES,
    BOTH,
    CANVAS_HASH,
    PAGES,
    chromium,
    missing_browser,
    offline_context,
)

NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?|nan|-?inf|True|False")
HEIGHT = 620  # px: what a 1280x720 browser leaves for a notebook (issue 16)

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # The site computes its frames with one thread (tools/site.py); so does the reference here, so
    # a frame of the trained toy model (notebook 08) is bitwise the one the build computed.
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _numbers(text: str) -> list[str]:
    return [n.replace("−", "-") for n in NUMBER.findall(text)]


def _html_numbers(value: str) -> list[str]:
    return _numbers(html.unescape(re.sub(r"<[^>]+>", " ", value)))


def _readout_floats(frame) -> np.ndarray:
    """The numeric readout entries of ``frame`` flattened in order (strings left out)."""
    parts = []
    for v in frame.readout.values():
        if hasattr(v, "detach"):
            v = v.detach().cpu().double().numpy()
        if isinstance(v, str):
            continue
        parts.append(np.asarray(v, dtype=np.float64).reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0)


def _check_readout_numbers(name, got, want, columns) -> None:
    """The page's readout numbers against Python's float64 ones. A column stored at the digits
    shown (``tools/site.py readout_columns``: ``[code, offset, rows, div]``, code "i1".."i4")
    holds a whole number of ``1/div`` within half a unit of Python's number (floats), or exactly
    Python's number (ints, bools: div 1); a float64 column equals it to float64 rounding."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert len(got) == len(want) == len(columns), (name, len(got), len(want), len(columns))
    for c, ((code, _, _, div), g, w) in enumerate(zip(columns, got, want)):
        where = f"{name}: readout number {c} (page {g!r}, Python {w!r})"
        if code == "f8":
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15, err_msg=where)
        elif div == 1:
            assert g == w, where
        else:
            units = g * div
            assert abs(units - round(units)) < 1e-6, where
            assert abs(g - w) <= 0.5 / div * (1 + 1e-9), where


def _check_against_python(name, ref, snap, shown_text, columns):
    frame = ref.compute(**snap["values"])
    for key, drawn in snap["arrays"].items():
        want = np.asarray(frame.arrays[key], dtype=np.float64).astype(np.float32).reshape(-1)
        # float32 casts of float64 numbers: equal up to 2 float32 ulps should the build's
        # float64 differ from this process's in its last bits
        np.testing.assert_allclose(
            np.asarray(drawn, dtype=np.float32),
            want,
            rtol=2.0**-22,
            atol=0,
            err_msg=f"{name} {key}",
        )
    _check_readout_numbers(name, snap["nums"], _readout_floats(frame), columns)
    assert _numbers(shown_text) == _html_numbers(ref.readout_html(frame)), (
        f"{name}: the page shows\n{shown_text}\nbut Python shows\n{ref.readout_html(frame)}"
    )


def _settle(page, root, before):
    deadline = time.monotonic() + 10
    while root.get_attribute("data-values") == before and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


@pytest.mark.parametrize("stem", BOTH)
def test_page_works_offline_and_every_control_of_every_explorer_is_live(site, browser, stem):
    from attnlib.widgets import BUILDERS

    ctx, aborted = offline_context(browser)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto((site / f"{stem}.html").as_uri())
    page.wait_for_load_state("load")
    # math: MathML present, no raw TeX left in the prose
    # (textContent: cells off screen are not rendered, so their innerText would be empty)
    prose = " ".join(
        page.locator("section.cell.md, .site-header, .site-footer").all_text_contents()
    )
    assert page.locator("section.cell.md math").count() > 0, f"{stem}: no MathML"
    assert "$" not in prose, f"{stem}: raw $ TeX left: {prose[prose.index('$') - 40 :][:120]!r}"
    assert page.locator("code.tex").count() == 0, f"{stem}: TeX latex2mathml could not convert"
    for img in page.locator("img").all():
        assert (img.get_attribute("alt") or "").strip(), f"{stem}: an image without alt text"
    hosts = page.locator(".site-explorer").all()
    assert hosts, f"{stem}: no explorer"
    for host in hosts:
        host.locator(".attnlib-canvas[data-frames]:not([data-frames='0'])").wait_for(timeout=20_000)
    assert not errors, errors
    too_tall: list[str] = []
    for host in hosts:
        name = host.get_attribute("data-builder")
        spec = json.loads(host.locator("script.attnlib-spec").text_content())
        ref = BUILDERS[name](**spec["args"])
        host.scroll_into_view_if_needed()
        height = host.bounding_box()["height"]
        if height > HEIGHT:
            too_tall.append(f"{name}: {height:.0f} px tall > {HEIGHT}")
        root = host.locator(".attnlib-canvas")
        canvas = root.locator("canvas")
        readout = root.locator(".attnlib-readout")
        controls = host.locator("[data-control]").all()
        # every control is live (notebook 04's four value sliders through their affine basis)
        assert spec["not_live"] == [], f"{name}: controls not live on the page: {spec['not_live']}"
        unchanged: list[str] = []
        assert len(controls) == len(ref.controls)
        for ctl in controls:
            cname = ctl.get_attribute("data-control")
            assert not ctl.is_disabled(), f"{name}: {cname} is disabled"
            before = (root.get_attribute("data-values"), canvas.evaluate(CANVAS_HASH))
            tag, kind = ctl.evaluate("e => [e.tagName, e.type]")
            if tag == "SELECT":
                n = ctl.locator("option").count()
                ctl.select_option(str((int(ctl.input_value()) + 1) % n))
            elif kind == "checkbox":
                ctl.click()
            else:
                at_end = ctl.input_value() == ctl.get_attribute("max")
                ctl.focus()
                page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
            _settle(page, root, before[0])
            values = json.loads(root.get_attribute("data-values"))
            old = json.loads(before[0])
            assert values[cname] != old[cname], f"{name}: {cname} did not move"
            assert {k: v for k, v in values.items() if k != cname} == {
                k: v for k, v in old.items() if k != cname
            }
            if canvas.evaluate(CANVAS_HASH) == before[1]:
                # The same picture is right only if Python's arrays at the two values agree to far
                # below anything drawable (1e-6: a 256-level colour map step is ~4e-3 of its
                # range, a pixel ~1e-3 of a panel's), e.g. weights that move by one float32 ulp.
                a, b = ref.compute(**old).arrays, ref.compute(**values).arrays
                same = all(
                    np.allclose(np.asarray(a[k], float), np.asarray(b[k], float), rtol=0, atol=1e-6)
                    for k in a
                )
                assert same, f"{name}: {cname} changed the frame but left the pixels alone"
                unchanged.append(cname)
            snap = root.evaluate("r => r.__attnlib.snapshot()")
            _check_against_python(
                f"{name} after {cname}",
                ref,
                snap,
                readout.inner_text(),
                spec["layout"]["readout"],
            )
        assert len(unchanged) < len(controls), f"{name}: no control changed the picture"
    assert not errors, errors
    assert not too_tall, f"{stem}: controls, picture and readout must fit {HEIGHT} px: {too_tall}"
    assert aborted == [], f"{stem}: requests for the network: {aborted}"
    ctx.close()


# Every font size the canvas draws text in (CSS px of the canvas's own coordinates), recorded by
# wrapping fillText before the page runs: the background's canvas and the visible one both draw at
# devicePixelRatio scale, so font px * (transform scale / dpr) is the size in scene pixels.
FONTS = """(() => { const P = CanvasRenderingContext2D.prototype, fill = P.fillText;
  window.__fonts = [];
  P.fillText = function (...a) { const m = /([0-9.]+)px/.exec(this.font);
    const dpr = window.devicePixelRatio || 1;
    const t = this.getTransform();  // its scale, rotated or not (a y label)
    if (m) window.__fonts.push(Number(m[1]) * Math.hypot(t.a, t.b) / dpr);
    return fill.apply(this, a); }; })()"""
PHONE = (390, 844)


@pytest.mark.parametrize("stem", BOTH)
def test_every_explorer_reads_on_a_phone(site, browser, stem):
    ctx, aborted = offline_context(browser, viewport=PHONE)
    ctx.add_init_script(FONTS)
    page = ctx.new_page()
    page.goto((site / f"{stem}.html").as_uri())
    hosts = page.locator(".site-explorer").all()
    for host in hosts:
        host.locator(".attnlib-canvas[data-frames]:not([data-frames='0'])").wait_for(timeout=20_000)
    width = page.evaluate("() => document.documentElement.clientWidth")
    overflow = page.evaluate("() => document.documentElement.scrollWidth")
    assert overflow <= width, f"{stem}: the page is {overflow} px wide on a {width} px screen"
    for host in hosts:
        name = host.get_attribute("data-builder")
        host.scroll_into_view_if_needed()
        box = host.bounding_box()
        root = host.locator(".attnlib-canvas")
        m = host.evaluate(
            """h => { const c = h.querySelector('.attnlib-canvas canvas'),
              r = h.querySelector('.attnlib-readout').getBoundingClientRect();
              return { scroll: h.scrollWidth - h.clientWidth, readoutRight: r.right,
                scale: c.getBoundingClientRect().width / parseFloat(c.style.width),
                readoutFont: Math.min(...Array.from(
                  h.querySelectorAll('.attnlib-readout td, .attnlib-readout th'),
                  e => parseFloat(getComputedStyle(e).fontSize))) }; }"""
        )
        assert m["scroll"] <= 0, f"{name}: scrolls {m['scroll']} px sideways on a phone"
        assert m["readoutRight"] <= box["x"] + box["width"] + 0.5, f"{name}: readout off the edge"
        fonts = page.evaluate("() => window.__fonts")
        smallest = min(fonts) * m["scale"]
        assert smallest >= 9, (
            f"{name}: text drawn at {smallest:.1f} CSS px (scale {m['scale']:.2f})"
        )
        assert m["readoutFont"] >= 9, f"{name}: readout text {m['readoutFont']} px"
        assert root.get_attribute("data-layout") in ("narrow", "wide")
        for ctl in host.locator("[data-control]").all():
            h = ctl.bounding_box()["height"]
            assert h >= 24, (
                f"{name}: control {ctl.get_attribute('data-control')} is {h:.0f} px tall"
            )
    # on a laptop the same explorers keep the scene's own layout (what render_png draws)
    page.set_viewport_size({"width": 1280, "height": 720})
    layouts = []
    for host in hosts:  # (a cell off screen is not laid out until it is scrolled to)
        host.scroll_into_view_if_needed()
        page.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        layouts.append(host.locator(".attnlib-canvas").get_attribute("data-layout"))
    assert set(layouts) == {"wide"}, f"{stem}: at 1280 px the layouts are {layouts}"
    assert aborted == []
    ctx.close()


@pytest.mark.parametrize("index", ["index", "zh/index"])
def test_index_links_every_page_and_says_how_to_run_it_live(site, index):
    text = (site / f"{index}.html").read_text()
    for stem in ALL_PAGES:
        assert f'href="{stem}.html"' in text
    assert "make lab" in text
    shown = re.sub(
        r"<code>.*?</code>", "", re.sub(r"<(style|script)[^>]*>.*?</\1>", "", text, flags=re.S)
    )
    assert "$" not in re.sub(r"<[^>]+>", "", shown), "raw $ TeX in the index"
    assert "<math" in text
    for stem in [*BOTH, "index", "zh/index"]:
        page = (site / f"{stem}.html").read_text()
        # nothing loaded from elsewhere (links to read are fine; MathML's xmlns is a name)
        assert re.search(r"<(script|link|img|iframe)[^>]+(src|href)=\"(https?:)?//", page) is None
        assert "@import" not in page and "url(http" not in page
        assert len(page.encode()) <= 8_000_000


def _alts_of(nb_path: Path) -> set[str]:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for cell in nb["cells"]:
        alt = cell.get("metadata", {}).get("alt")
        out |= {alt} if isinstance(alt, str) else set(alt or [])
    return out


@pytest.mark.parametrize("stem", [*PAGES, "index"])
def test_each_page_links_its_other_language_and_the_two_share_their_frames(site, stem):
    en, zh = (site / f"{stem}.html").read_text(), (site / "zh" / f"{stem}.html").read_text()
    assert en.startswith('<!DOCTYPE html><html lang="en">')
    assert zh.startswith('<!DOCTYPE html><html lang="zh-CN">')
    assert f'class="site-lang" href="zh/{stem}.html" hreflang="zh-CN"' in en
    assert f'class="site-lang" href="../{stem}.html" hreflang="en"' in zh
    if stem == "index":
        return
    # the same explorers, from one computation: the stored frames are byte-identical
    frames = r'<script type="application/octet-stream" class="attnlib-frames">([^<]*)</script>'
    assert re.findall(frames, zh) == re.findall(frames, en)
    # the anchors of the sections are the English page's, so a section has one address
    ids = r'<h[23] id="([^"]+)"'
    assert re.findall(ids, zh) == re.findall(ids, en)
    # every alt text of the Chinese page is the Chinese notebook's (the catalog's translation)
    shown = {html.unescape(a) for a in re.findall(r'(?:alt|aria-label)="([^"]*)"', zh)}
    zh_alts = _alts_of(ROOT / "notebooks" / "zh" / f"{stem}.ipynb")
    assert zh_alts <= shown
    en_only = _alts_of(ROOT / "notebooks" / f"{stem}.ipynb") - zh_alts
    assert not (en_only & shown), f"{stem}: English alt text on the Chinese page"
