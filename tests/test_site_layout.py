"""The static site's blob without a browser (fast tier): every explorer's state space, packed as a
page carries it (``tools/site_state.py``, layout version 2), read back by ``decode_blob`` and
compared with ``compute`` at the frame's values; the readout quantisation's truth table; the
affine check's accept and reject paths; explorers found in a notebook by their metadata, a
progress bar before one; an argument the site cannot rebuild fails the build, naming it (and
the head view declares how its encoder is rebuilt); each page's contents list and the index's
links to the sections; the narrow (phone) layout of every scene.

The page itself (Chromium, from disk) is ``tests/test_site.py``.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tools import site, site_affine, site_state

ROOT = Path(__file__).resolve().parents[1]
#: A small live product (a few hundred frames) keeps each explorer's build to about a second;
#: every explorer still stores a fast group, its tables, index and (two_key) its affine basis.
SMALL = 400


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _builders() -> list[str]:
    from attnlib.widgets import BUILDERS

    return sorted(BUILDERS)


def _readout_reference(frame, rspec) -> tuple[np.ndarray, list[str]]:
    from attnlib.widgets.framework.readout import to_py

    nums, strs = [], []
    for s in rspec:
        v = to_py(frame.readout.get(s["label"]))
        if s["kind"] == "s":
            strs.append(str(v))
        else:
            nums.append(np.asarray(v, dtype=np.float64).reshape(-1))
    return (np.concatenate(nums) if nums else np.zeros(0)), strs


@pytest.mark.parametrize("name", _builders())
def test_every_explorer_blob_round_trips_to_compute(name):
    from attnlib.widgets import BUILDERS

    spec, blob = site_state.explorer_state_space(name, {}, max_frames=SMALL)
    # as the page carries it: gzip, base64, and back
    packed = base64.b64encode(gzip.compress(blob, 6, mtime=0))
    spec = json.loads(json.dumps(spec))  # the page reads JSON
    got = site_state.decode_blob(spec, gzip.decompress(base64.b64decode(packed)))
    assert spec["layout"]["version"] == site_state.LAYOUT_VERSION
    ref = BUILDERS[name](**spec["args"])
    dims = spec["dims"]
    rng = np.random.default_rng(0)
    flats = sorted({0, spec["frames"] - 1, *rng.integers(0, spec["frames"], 4).tolist()})
    affine = (spec["layout"]["affine"] or {}).get("names", [])
    by_name = {c["name"]: c for c in spec["controls"]}
    for flat in flats:
        idx = dict(zip([n for n, _ in dims], np.unravel_index(flat, [s for _, s in dims])))
        idx = {n: int(i) for n, i in idx.items()}
        v = {n: float(rng.choice(by_name[n]["values"])) for n in affine}
        values = got.values(idx, v)
        frame = ref.compute(**values)
        decoded = got.frame(idx, v)
        where = f"{name} at {values}"
        assert sorted(decoded["arrays"]) == sorted(k for k, _ in spec["keys"]), where
        for key, drawn in decoded["arrays"].items():
            want = np.asarray(frame.arrays[key], dtype=np.float64).reshape(-1).astype(np.float32)
            # The build computes a group's frames in one batch, compute() one at a time: float64
            # results may differ in their last bits, and the float32 cast of a number that close
            # to a rounding boundary then moves by one float32 ulp (<= 2**-23 relative); an
            # affine entry is B0 + sum v_j Bj in float64 within 4 (m + 1) u M (site_affine's
            # bound; M ~ 10 here: below 1e-13) before the same cast.
            atol = 1e-13 if key in got.affine else 0.0
            np.testing.assert_allclose(
                drawn, want, rtol=2.0**-22, atol=atol, err_msg=f"{where} {key}"
            )
        from attnlib.widgets.framework.frames import readout_spec

        nums, strs = _readout_reference(frame, readout_spec(frame))
        assert len(decoded["readout"]) == len(nums) == len(spec["layout"]["readout"]), where
        for c, ((code, _, _, div), g, w) in enumerate(
            zip(spec["layout"]["readout"], decoded["readout"], nums)
        ):
            at = f"{where}: readout number {c} (blob {g!r}, compute {w!r})"
            if code == "f8":  # stored exactly (float64), or B0 + sum v_j Bj within the bound
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=at)
            elif div == 1:  # ints and bools: exact
                assert g == w, at
            else:  # the digits shown: a whole number of 1/div within half a unit
                assert abs(g * div - round(g * div)) < 1e-6, at
                assert abs(g - w) <= 0.5 / div * (1 + 1e-9), at
        texts = [str(frame.texts.get(k, "")) for k in spec["template"]["texts"]]
        assert decoded["texts"] == (texts if spec["template"]["texts"] else []), where
        assert decoded["strings"] == (strs if spec["has_strings"] else []), where


def test_decode_blob_refuses_another_layout_version_and_a_short_blob():
    spec, blob = site_state.explorer_state_space("scaling", {}, max_frames=20)
    old = copy.deepcopy(spec)
    old["layout"]["version"] = 1
    with pytest.raises(ValueError, match="layout version 1, this reader reads 2"):
        site_state.decode_blob(old, blob)
    with pytest.raises(ValueError, match="does not fit a 10-byte blob"):
        site_state.decode_blob(spec, blob[:10])


def test_readout_columns_store_what_to_fixed_shows():
    # Truth table from the browser's own Number.prototype.toFixed(3) (node/Chromium: 0.0625 ->
    # "0.063", a tie rounds away from zero; 1.0005 is 1.000499... in binary -> "1.000";
    # -0.0004 -> "-0.000", which the readout shows as 0.000).
    xs = [0.0625, -0.0625, 1.0005, 0.1875, 0.00025, -0.0004, 123.4565, 2.0]
    shown = [63, -63, 1000, 188, 0, 0, 123457, 2000]
    rows = np.array([[x, float(k), float("nan") if k == 3 else 1.0, 1.0] for k, x in enumerate(xs)])
    cols, n, remap = site.readout_columns(rows, ["f", "i", "f", "b"], 3)
    assert n == len(xs) and sorted(remap.tolist()) == list(range(len(xs)))
    (c0, d0, b0), (c1, d1, b1), (c2, d2, _), (c3, d3, b3) = cols
    types = {"i1": np.int8, "i2": np.int16, "i4": np.int32}
    assert (c0, d0) == ("i4", 1000)  # 123457 needs 32 bits
    assert np.frombuffer(b0, types[c0])[remap].tolist() == shown
    assert (d1, np.frombuffer(b1, types[c1])[remap].tolist()) == (1, list(range(len(xs))))
    assert (c2, d2) == ("f8", 1)  # a nan: kept as float64
    assert (c3, d3, np.frombuffer(b3, types[c3]).tolist()) == ("i1", 1, [1] * len(xs))
    # rows equal once rounded are stored once
    cols, n, remap = site.readout_columns(np.array([[0.1231], [0.1229], [0.5]]), ["f"], 3)
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


@pytest.mark.parametrize("chunk", [1, 2, 256])
def test_the_affine_check_accepts_an_affine_frame_and_rejects_others(monkeypatch, chunk):
    from attnlib.widgets import BUILDERS

    # affine in v (t fixed): accepted; B0, B1 are the frame at v = 0 and its slope, by hand
    ex, states = _one_value_explorer(lambda t, v: 2.5 * t - 0.1 * v)
    basis = site_affine.affine_basis(ex, ("v",), states, checks=5, chunk=chunk)
    assert basis.akeys == ["p"] and basis.rcols == [0]  # y moves; the point's x and t do not
    assert basis.block("p")[:, 0].tolist() == [[t, 2.5 * t] for t in (0.0, 0.5, 1.0)]
    assert basis.block("@readout")[:, 0].tolist() == [[2.5 * t] for t in (0.0, 0.5, 1.0)]
    # B1 = f(t, 1) - f(t, 0), two float64 roundings of numbers <= 2.5: within 2 u 2.5 of -0.1
    bound = 2 * 2.0**-53 * 2.5
    want = np.array([[0.0, -0.1] for _ in states])
    np.testing.assert_allclose(basis.block("p")[:, 1], want, rtol=0, atol=bound)
    np.testing.assert_allclose(basis.block("@readout")[:, 1], want[:, 1:], rtol=0, atol=bound)
    # v**2: B1 = 1 from v = 0, 1, but v = 3 gives 9, not 3
    ex, states = _one_value_explorer(lambda t, v: t + v * v)
    with pytest.raises(site_affine.AffineError, match=r"fake: array 'p'\[1\] is not affine in"):
        site_affine.affine_basis(ex, ("v",), states, chunk=chunk)
    # v (v - 1): the same at v = 0 and 1 (so declared not to move), another at v = 3
    ex, states = _one_value_explorer(lambda t, v: t + v * (v - 1.0))
    with pytest.raises(site_affine.AffineError, match="does not move with .* but does at v"):
        site_affine.affine_basis(ex, ("v",), states, checks=20, chunk=chunk)
    # a text that changes with v cannot be combined
    ex, states = _one_value_explorer(lambda t, v: t + v, text=lambda v: f"v = {v:.0f}")
    with pytest.raises(site_affine.AffineError, match="texts or strings change"):
        site_affine.affine_basis(ex, ("v",), states, checks=20, chunk=chunk)
    # and the site's build of such an explorer fails loudly
    monkeypatch.setitem(BUILDERS, "fake", lambda: _one_value_explorer(lambda t, v: v**3)[0])
    with pytest.raises(site_affine.AffineError, match="is not affine"):
        site.explorer_state_space("fake", {})


# ---------------------------------------------------------------- explorers found by metadata
WIDGET = "application/vnd.jupyter.widget-view+json"


def _widget_output(meta=None, text="widget"):
    out = {
        "output_type": "display_data",
        "data": {WIDGET: {"model_id": "x", "version_major": 2}, "text/plain": [text]},
        "metadata": {},
    }
    if meta is not None:
        out["metadata"]["attnlib"] = meta
    return out


def _notebook(tmp_path, cells) -> Path:
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# A test notebook\n"]},
            *cells,
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "99_test.ipynb"
    path.write_text(json.dumps(nb))
    return path


def _code(*outputs):
    return {"cell_type": "code", "metadata": {}, "source": ["x\n"], "outputs": list(outputs)}


def test_a_progress_bar_before_an_explorer_shifts_nothing(tmp_path):
    meta = {"builder": "scaling", "args": {"seed": 0}, "dropped": []}
    tqdm = _widget_output(text="100%|##########| 10/10 [00:00<00:00]")  # a tqdm.notebook bar
    path = _notebook(tmp_path, [_code(tqdm), _code(tqdm, _widget_output(meta)), _code(tqdm)])
    found = site.explorer_outputs(path)
    assert list(found) == [(2, 1)]  # cell 2 (after the title), its second output
    assert found[(2, 1)]["builder"] == "scaling" and found[(2, 1)]["args"] == {"seed": 0}
    html = site.page_html(path, site.notebook_info(path), None, None, {(2, 1): "<b>EXPLORER</b>"})
    assert html.count("<b>EXPLORER</b>") == 1
    # the bars are shown as their text, the explorer in its own cell, after that cell's bar
    assert html.count("100%|##########| 10/10") == 3
    assert html.index("100%|") < html.index("<b>EXPLORER</b>") < html.rindex("100%|")


def test_an_argument_the_site_cannot_rebuild_fails_the_build_naming_it(tmp_path):
    from attnlib.widgets.framework.builder import builder

    meta = {"builder": "decoding", "args": {}, "dropped": ["model"]}
    path = _notebook(tmp_path, [_code(_widget_output(meta))])
    with pytest.raises(site.SiteError, match=r"99_test.ipynb cell 1: the decoding explorer was "):
        site.explorer_outputs(path)
    with pytest.raises(site.SiteError, match="built with model, which the site cannot rebuild"):
        site.explorer_outputs(path)
    assert site.main(["build", "--out", str(tmp_path / "out"), str(path)]) == 2

    # the builder records it: a non-JSON argument given is dropped and named, unless declared
    class Model:
        pass

    def make(tag, model=None):
        ex, _ = _one_value_explorer(lambda t, v: t + v)
        return ex

    plain = builder("fake_plain")(make)
    ex = plain("a", model=Model())
    assert ex.args == {"tag": "a"} and ex.dropped == ["model"]
    assert plain("a").dropped == []  # the default (None) is JSON: rebuilt as it is
    declared = builder("fake_declared", rebuild={"model": lambda m: None})(make)
    ex = declared("a", model=Model())
    assert ex.args == {"tag": "a", "model": None} and ex.dropped == []
    refuses = builder("fake_refuses", rebuild={"model": lambda m: (_ for _ in ()).throw(TypeError)})
    assert refuses(make)("a", model=Model()).dropped == ["model"]
    with pytest.raises(TypeError, match=r"rebuild names \['modle'\]"):
        builder("fake_typo", rebuild={"modle": lambda m: None})(make)


# ---------------------------------------------------------------- contents lists
def test_each_page_lists_its_sections_and_the_index_links_to_them(tmp_path):
    import re

    md = {"cell_type": "markdown", "metadata": {}}
    path = _notebook(
        tmp_path,
        [
            {**md, "source": ["## 1. Scores ($q^\\top k$)\n", "text\n"]},
            {**md, "source": ["### A detail\n"]},
            {**md, "source": ["## Exercises\n"]},
            {**md, "source": ["## Exercises\n"]},  # the same title again: its own anchor
        ],
    )
    info = site.notebook_info(path)
    page = site.page_html(path, info, None, None, {})
    ids = re.findall(r'<h[23] id="([^"]+)">', page)
    assert ids == ["1-scores-q-k", "a-detail", "exercises", "exercises-2"]
    toc = re.search(r'<nav class="site-toc"[^>]*>(.*?)</nav>', page, re.S).group(1)
    assert re.findall(r'href="#([^"]+)"', toc) == ids  # every section, in order
    assert '<ol><li><a href="#a-detail">' in toc  # the ### nested under its ##
    assert page.index('class="site-toc"') < page.index('id="1-scores-q-k"')
    index = site.index_html([info])
    assert [f"99_test.html#{i}" for i in ids] == re.findall(r'href="(99_test\.html#[^"]+)"', index)


@pytest.mark.parametrize("name", [n for n in _builders() if n != "head_view"])
def test_the_narrow_layout_is_one_column_of_the_same_panels(name):
    from attnlib.widgets import BUILDERS
    from attnlib.widgets.framework.scene import NARROW_WIDTH

    scene = BUILDERS[name]().scene
    narrow = scene.to_json()["narrow"]
    assert narrow["width"] == NARROW_WIDTH and len(narrow["rects"]) == len(scene.panels)
    tops = [t for _, t, _, _ in narrow["rects"]]
    assert tops == sorted(tops)  # one below the other, in the scene's order
    for (left, top, w, h), (_, _, w0, h0), p in zip(narrow["rects"], scene.rects(), scene.panels):
        assert 0 <= left and left + w <= NARROW_WIDTH and 0 <= top and top + h <= narrow["height"]
        if p.equal:  # the same aspect: an arrow at 45 degrees stays at 45 degrees
            assert w / h == pytest.approx(w0 / h0, rel=0.02)
    bottoms = [t + h for _, t, _, h in narrow["rects"]]
    assert all(b <= t for b, t in zip(bottoms, tops[1:]))  # no two panels overlap


@pytest.mark.slow
@pytest.mark.pretrained
def test_the_head_view_declares_how_to_rebuild_its_encoder():
    # notebook 10 passes encoder=load_minilm(device): the pretrained weights, which the site
    # rebuilds as the default (encoder=None); an encoder with other weights cannot be rebuilt
    from attnlib.models.minilm import load_minilm
    from attnlib.widgets.explorers.head_view import head_view_explorer

    enc = load_minilm("cpu")
    ex = head_view_explorer(encoder=enc)
    assert ex.args["encoder"] is None and ex.dropped == []
    with torch.no_grad():
        next(enc.parameters()).add_(1.0)  # another model
    ex = head_view_explorer(encoder=enc)
    assert "encoder" not in ex.args and ex.dropped == ["encoder"]
