"""The course as a static site (``make site``, ``tools/site.py``), checked in Chromium from disk.

The site is built into a temporary folder. Every page is opened from ``file://`` with every
request that is not for a local file (``file:``, ``data:``, ``blob:``) aborted and counted: the
count must be 0. On every page: math is MathML and no raw ``$`` TeX is left in the prose, every
``<img>`` has alt text, every explorer is drawn and fits in 620 px of height. Every control of
every explorer is changed the way a hand does (ArrowRight on a slider, the next option of a
menu, a click on a checkbox): the canvas pixels must change, and what the page draws and shows
must equal a fresh ``BUILDERS[name](**args).compute(**values)`` in Python at the values the page
reports (the independent reference: the kernel-side computation, not the page's stored frames).
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from harness import chromium, missing_browser, offline_context  # noqa: E402

PAGES = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?|nan|-?inf|True|False")
HEIGHT = 620  # px: what a 1280x720 browser leaves for a notebook (issue 16)

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))

HASH = """(c) => { const d = new Uint32Array(c.getContext('2d')
  .getImageData(0, 0, c.width, c.height).data.buffer);
  let h = 2166136261; for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i], 16777619);
  return h >>> 0; }"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built now (``ATTNLIB_SITE_DIR=site`` checks one built already instead)."""
    if os.environ.get("ATTNLIB_SITE_DIR"):
        return Path(os.environ["ATTNLIB_SITE_DIR"]).resolve()
    out = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "site.py"), "build", "--out", str(out)],
        check=True,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    return out


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


@pytest.mark.parametrize("stem", PAGES)
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
            before = (root.get_attribute("data-values"), canvas.evaluate(HASH))
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
            if canvas.evaluate(HASH) == before[1]:
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


def test_index_links_every_page_and_says_how_to_run_it_live(site):
    text = (site / "index.html").read_text()
    for stem in PAGES:
        assert f'href="{stem}.html"' in text
    assert "make lab" in text
    shown = re.sub(
        r"<code>.*?</code>", "", re.sub(r"<(style|script)[^>]*>.*?</\1>", "", text, flags=re.S)
    )
    assert "$" not in re.sub(r"<[^>]+>", "", shown), "raw $ TeX in the index"
    assert "<math" in text
    for stem in [*PAGES, "index"]:
        page = (site / f"{stem}.html").read_text()
        # nothing loaded from elsewhere (links to read are fine; MathML's xmlns is a name)
        assert re.search(r"<(script|link|img|iframe)[^>]+(src|href)=\"(https?:)?//", page) is None
        assert "@import" not in page and "url(http" not in page
        assert len(page.encode()) <= 8_000_000


def _site_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("attnlib_site_tool", ROOT / "tools" / "site.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readout_columns_store_what_to_fixed_shows():
    # Truth table from the browser's own Number.prototype.toFixed(3) (node/Chromium: 0.0625 ->
    # "0.063", a tie rounds away from zero; 1.0005 is 1.000499... in binary -> "1.000";
    # -0.0004 -> "-0.000", which the readout shows as 0.000).
    tool = _site_tool()
    xs = [0.0625, -0.0625, 1.0005, 0.1875, 0.00025, -0.0004, 123.4565, 2.0]
    shown = [63, -63, 1000, 188, 0, 0, 123457, 2000]
    rows = np.array([[x, float(k), float("nan") if k == 3 else 1.0, 1.0] for k, x in enumerate(xs)])
    cols, n, remap = tool.readout_columns(rows, ["f", "i", "f", "b"], 3)
    assert n == len(xs) and sorted(remap.tolist()) == list(range(len(xs)))
    (c0, d0, b0), (c1, d1, b1), (c2, d2, _), (c3, d3, b3) = cols
    types = {"i1": np.int8, "i2": np.int16, "i4": np.int32}
    assert (c0, d0) == ("i4", 1000)  # 123457 needs 32 bits
    assert np.frombuffer(b0, types[c0])[remap].tolist() == shown
    assert (d1, np.frombuffer(b1, types[c1])[remap].tolist()) == (1, list(range(len(xs))))
    assert (c2, d2) == ("f8", 1)  # a nan: kept as float64
    assert (c3, d3, np.frombuffer(b3, types[c3]).tolist()) == ("i1", 1, [1] * len(xs))
    # rows equal once rounded are stored once
    cols, n, remap = tool.readout_columns(np.array([[0.1231], [0.1229], [0.5]]), ["f"], 3)
    assert n == 2 and remap.tolist() == [0, 0, 1]
    assert np.frombuffer(cols[0][2], types[cols[0][0]]).tolist() == [123, 500]


def _one_value_explorer(f, text=lambda v: "fixed"):
    """An explorer with a slider ``t`` and a slider ``v`` declared affine; its frame is
    ``f(t, v)`` (a point, and a readout number) and a text ``text(v)``."""
    from attnlib.widgets import Explorer
    from attnlib.widgets.framework.artists import Points, Text
    from attnlib.widgets.framework.controls import float_slider
    from attnlib.widgets.framework.scene import Frame, Panel, Scene

    def compute(t, v):
        y = f(t, v)
        return Frame(arrays={"p": [[t, y]]}, readout={"y": y, "t": t}, texts={"note": text(v)})

    controls = {
        "t": float_slider("t", 0, 1, 0.5, step=0.5),
        "v": float_slider("v", -3, 3, 1, step=1),
    }
    scene = Scene([Panel([Points("p"), Text(0.1, 0.9, key="note")], xlim=(0, 1), ylim=(-9, 9))])
    ex = Explorer(controls, compute, scene, affine=("v",), name="fake")
    return ex, [{"t": t, "v": 0.0} for t in (0.0, 0.5, 1.0)]


def test_the_affine_check_accepts_an_affine_frame_and_rejects_others(monkeypatch):
    from attnlib.widgets import BUILDERS

    tool = _site_tool()
    affine = tool._site_affine()
    # affine in v (t fixed): accepted; B0, B1 are the frame at v = 0 and its slope, by hand
    ex, states = _one_value_explorer(lambda t, v: 2.5 * t - 0.1 * v)
    basis = affine.affine_basis(ex, ("v",), states, checks=5)
    assert basis.akeys == ["p"] and basis.rcols == [0]  # y moves; the point's x and t do not
    assert basis.B[:, 0].tolist() == [[t, 2.5 * t, 2.5 * t, t] for t in (0.0, 0.5, 1.0)]
    # B1 = f(t, 1) - f(t, 0), two float64 roundings of numbers <= 2.5: within 2 u 2.5 of -0.1
    want_b1 = np.array([[0.0, -0.1, -0.1, 0.0] for _ in states])  # p = (t, y), then y, t
    np.testing.assert_allclose(basis.B[:, 1], want_b1, rtol=0, atol=2 * 2.0**-53 * 2.5)
    # v**2: B1 = 1 from v = 0, 1, but v = 3 gives 9, not 3
    ex, states = _one_value_explorer(lambda t, v: t + v * v)
    with pytest.raises(affine.AffineError, match=r"fake: array 'p'\[1\] is not affine in"):
        affine.affine_basis(ex, ("v",), states)
    # v (v - 1): the same at v = 0 and 1 (so declared not to move), another at v = 3
    ex, states = _one_value_explorer(lambda t, v: t + v * (v - 1.0))
    with pytest.raises(affine.AffineError, match="does not move with .* but does at v"):
        affine.affine_basis(ex, ("v",), states, checks=20)
    # a text that changes with v cannot be combined
    ex, states = _one_value_explorer(lambda t, v: t + v, text=lambda v: f"v = {v:.0f}")
    with pytest.raises(affine.AffineError, match="texts or strings change"):
        affine.affine_basis(ex, ("v",), states, checks=20)
    # and the site's build of such an explorer fails loudly
    monkeypatch.setitem(BUILDERS, "fake", lambda: _one_value_explorer(lambda t, v: v**3)[0])
    with pytest.raises(affine.AffineError, match="is not affine"):
        tool.explorer_state_space("fake", {})
