"""The canvas explorer framework (attnlib.widgets.framework.explorer, scene, controls, testing),
without a browser.

The browser side (explorer.js) is checked in tests/browser/: there the frame the front end drew
is compared with ``compute``. Here: the registry, every precomputed frame against ``compute``,
the messages a front end receives, the static picture and the display bundle, bad arguments.
"""

from __future__ import annotations

import base64
import importlib
import io
import math
import pkgutil

import numpy as np
import pytest
import torch

from attnlib.widgets import BUILDERS, Explorer
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
from attnlib.widgets.framework.controls import (
    dropdown,
    float_slider,
    int_slider,
    selection_slider,
    toggle,
)
from attnlib.widgets.framework.explorer import readout_html
from attnlib.widgets.framework.render import render
from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells
from attnlib.widgets.framework.testing import control_values, decode_set, readout_numbers

CANVAS = sorted(BUILDERS)


def _tiny(**kw):
    """Every artist of the vocabulary, two fast sliders (a grid), a slow slider and a dropdown."""

    def compute(a, b, n, cmap):
        w = torch.softmax(torch.tensor([a, b, 0.0], dtype=torch.float64), 0)  # (3,)
        grid = torch.outer(w, w)  # (3, 3)
        return Frame(
            arrays={
                "w": w,
                "grid": grid,
                "hid": torch.eye(3),
                "pt": [[a, b]],
                "seg": [[[0.0, 0.0], [a, b]]],
                "widths": [1.0 + n],
            },
            readout={
                "weights": w,
                "n": n,
                "sum": w.sum(),
                "ok": bool(a > b),
                "name": cmap,
                "grid": grid,
            },
            texts={"label": f"a={a:.1f}"},
        )

    controls = {
        "a": float_slider("a", -1.0, 1.0, 0.0, step=0.25),
        "b": float_slider("b", -1.0, 1.0, 0.5, step=0.5),
        "n": int_slider("n", 1, 3, 1),
        "cmap": dropdown("map", ["viridis", "cividis"], "viridis"),
    }
    scene = Scene(
        [
            Panel(
                [Heatmap("grid", hidden="hid", annotate=True, colorbar=True)],
                title="grid",
                **cells(3, 3),
            ),
            Panel(
                [
                    Bars("w", label="w"),
                    Line([[0, 0], [2, 1]], dash=True, label="line"),
                    Points("pt", labels=["p"]),
                    Segments("seg", widths="widths"),
                    Arrows([[[0, 0], [1, 1]]]),
                    Polygon([[0, 0], [1, 0], [0, 1]]),
                    Text(0.1, 0.9, key="label", axes=True),
                ],
                xlim=(-1, 3),
                ylim=(-1, 1.2),
                legend="upper right",
            ),
        ],
        cols=2,
        width=600,
        height=240,
    )
    return Explorer(
        controls, compute, scene, **{"grid": [("a", "b")], "slow": ["n"], "name": "tiny", **kw}
    )


def test_registry_lists_every_builder_callable_without_arguments():
    assert {"query", "scaling"} <= set(CANVAS)
    for name in CANVAS:
        ex = BUILDERS[name]()
        assert isinstance(ex, Explorer) and ex.name == name
        assert BUILDERS[name](**ex.args).state() == ex.state()  # args rebuild the same explorer


def test_every_explorer_builder_in_the_package_is_registered():
    """A builder left out of BUILDERS is not dragged by the browser test nor benchmarked."""
    import attnlib.widgets.explorers as package

    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {
            fn
            for fname, fn in vars(module).items()
            if fname.endswith("_explorer")
            and callable(fn)
            and getattr(fn, "__module__", None) == module.__name__
        }
    assert len(found) >= 2  # the scan itself sees builders
    assert found == set(BUILDERS.values())


@pytest.mark.parametrize("name", CANVAS)
def test_every_frame_sent_equals_compute_at_its_values(name):
    ex = BUILDERS[name]()
    for g in range(len(ex.groups)):
        header, buffers = ex.frame_set(g)
        frames = decode_set(header, buffers)
        assert len(frames) == header["n"] == math.prod(header["shape"])
        for values, arrays, nums in frames:
            ref = ex.compute(**values)
            for k, a in arrays.items():  # float32 on the wire: the exact cast of compute's numbers
                np.testing.assert_array_equal(
                    a, np.asarray(ref.arrays[k], dtype=np.float64).astype(np.float32)
                )
            np.testing.assert_array_equal(nums, readout_numbers(ref, ex._spec))


@pytest.mark.parametrize("name", CANVAS)
def test_every_control_gives_finite_numbers_and_the_picture_follows(name):
    ex = BUILDERS[name]()
    rng = np.random.default_rng(0)
    png0 = ex.png()
    changed = False
    for cname, control in ex.controls.items():
        for value in control_values(control, rng, n_random=2):
            st = ex.set(**{cname: value})
            nums = readout_numbers(ex.frame(), ex._spec)
            assert np.all(np.isfinite(nums)), f"{name}: {cname}={value!r} gives {st}"
        changed |= ex.png() != png0
    assert changed, f"{name}: no control changed the picture"


@pytest.mark.parametrize("name", CANVAS)
def test_display_bundle_has_the_live_widget_and_a_picture(name):
    from PIL import Image

    ex = BUILDERS[name]()
    bundle, metadata = ex._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.widget.model_id
    # the output's metadata names the builder and args (a static page rebuilds it from them)
    assert metadata == {"attnlib": {"builder": name, "args": ex.args}}
    assert BUILDERS[metadata["attnlib"]["builder"]](**metadata["attnlib"]["args"]).values() == (
        ex.values()
    )
    img = Image.open(io.BytesIO(base64.b64decode(bundle["image/png"])))
    assert img.size == (ex.scene.width, ex.scene.height)
    assert ex.name in bundle["text/plain"]
    assert "attnlib-explorer" in ex.widget._dom_classes


def test_the_front_end_gets_the_current_frame_first_then_the_sets_and_cached_sets_again():
    ex = _tiny()
    sent = []
    ex.view.send = lambda content, buffers=None: sent.append((content, buffers))
    ex.controls["a"].value = 0.5  # no front end yet: nothing is sent
    assert sent == []
    ex._on_msg(ex.view, {"type": "ready"}, [])
    assert [m["type"] for m, _ in sent] == ["now", "set"]
    now, buffers = sent[0]
    ((values, arrays, nums),) = decode_set(now, buffers)
    assert values == ex.values() and now["want"] == {0: sent[1][0]["token"]}
    np.testing.assert_array_equal(nums, readout_numbers(ex.frame(), ex._spec))
    token = sent[1][0]["token"]
    sent.clear()
    ex.controls[
        "b"
    ].value = -0.5  # a fast slider of the only group: the browser plays it, no message
    assert sent == []
    ex.controls["cmap"].value = "cividis"  # slow: the frame now, then the recomputed set
    assert [m["type"] for m, _ in sent] == ["now", "set"] and sent[1][0]["token"] != token
    assert sent[1][0]["fixed"]["cmap"] == "cividis"
    sent.clear()
    ex.set(cmap="viridis")  # back: the cached set, sent again (the front end keeps one per group)
    assert sent[1][0]["token"] == token


def test_two_slider_groups_recompute_each_other_and_values_stay_true():
    ex = _tiny(grid=[], slow=[])
    assert ex.groups == [("a",), ("b",), ("n",)]
    sent = []
    ex.view.send = lambda content, buffers=None: sent.append(content)
    ex._on_msg(ex.view, {"type": "ready"}, [])
    sent.clear()
    ex.controls["a"].value = -1.0  # outside an event loop the other groups are recomputed at once
    assert sorted(m["group"] for m in sent if m["type"] == "set") == [1, 2]
    assert ex.values()["a"] == -1.0
    np.testing.assert_allclose(
        ex.state()["weights"], torch.softmax(torch.tensor([-1.0, 0.5, 0.0]), 0).numpy(), rtol=1e-6
    )


def test_readout_html_rounds_escapes_and_never_shows_negative_zero():
    h = readout_html(
        {"v": torch.tensor([0.5, -1e-9, 1 / 3]), "m": [[1, 2], [3, 4]], "s": "x<y", "b": True},
        columns=["c1"],
        digits=3,
    )
    assert "<td>0.333</td>" in h and "-0.000" not in h and "x&lt;y" in h and "<td>True</td>" in h
    assert "<td>4</td>" in h and "<th>c1</th>" in h


# (x, digits, what JavaScript's x.toFixed(digits) writes: checked with node 20 on these values).
# Ties on the exact binary value go away from zero (1/16 -> 0.063, not Python's half-even 0.062);
# 1.0005 and 0.0015 are not ties in binary (1.000499..., 0.0015000...03): down, then up.
TO_FIXED = [
    (1 / 16, 3, "0.063"),
    (-1 / 16, 3, "-0.063"),
    (0.125, 2, "0.13"),
    (2.5, 0, "3"),
    (-2.5, 0, "-3"),
    (0.5, 0, "1"),
    (1.0005, 3, "1.000"),
    (0.0015, 3, "0.002"),
    (123.4565, 3, "123.457"),
    (0.1 + 0.2, 3, "0.300"),
    (1e21, 3, "1e+21"),
]


@pytest.mark.parametrize("x, digits, js", TO_FIXED)
def test_readout_numbers_follow_javascripts_to_fixed_rule(x, digits, js):
    from attnlib.widgets.framework.readout import to_fixed

    assert to_fixed(x, digits) == js
    shown = js if float(js) != 0 else to_fixed(0.0, digits)
    assert f"<td>{shown}</td>" in readout_html({"x": x}, digits=digits)


def test_static_render_draws_every_artist_in_the_scene_layout():
    ex = _tiny()
    fig = render(ex.scene, ex.frame())
    assert fig.get_size_inches().tolist() == [6.0, 2.4]
    heat = fig.axes[0]
    np.testing.assert_allclose(
        heat.images[0].get_array(), torch.outer(*[ex.frame().arrays["w"]] * 2).numpy()
    )
    assert len(heat.patches) == 3  # the three hidden (hatched) cells
    assert (
        len(fig.axes) == 3 and fig.axes[2].get_legend() is not None
    )  # heatmap, its colorbar, the plane
    assert len(ex.png()) > 1000


def test_bad_explorer_arguments_raise_clear_errors():
    ok = _tiny()
    c, s = ok.controls, ok.scene
    with pytest.raises(TypeError, match="compute must return a Frame"):
        Explorer(c, lambda **v: {"w": 1}, s)
    with pytest.raises(KeyError, match="no array 'grid'"):
        Explorer(c, lambda **v: Frame(arrays={}), s)
    with pytest.raises(ValueError, match=r"bars.heights must have shape 1-D"):
        Explorer(
            {"a": c["a"]},
            lambda a: Frame(arrays={"h": [[a]]}),
            Scene([Panel([Bars("h")], xlim=(0, 1), ylim=(0, 1))]),
        )
    with pytest.raises(KeyError, match="unknown control"):
        Explorer(c, ok._compute, s, grid=[("a", "zz")])
    with pytest.raises(TypeError, match="scene must be a Scene"):
        Explorer(c, ok._compute, "scene")
    with pytest.raises(ValueError, match="max_bytes"):
        _tiny(max_bytes=100).frame_set(0)
    with pytest.raises(TypeError, match="fast control must be an ipywidgets slider"):
        Explorer(
            {"t": toggle("t")},
            lambda t: Frame(),
            Scene([Panel([], xlim=(0, 1), ylim=(0, 1))]),
            grid=[("t",)],
        )
    with pytest.raises(ValueError, match="same shapes"):
        Explorer(
            {"n": int_slider("n", 1, 3, 1)},
            lambda n: Frame(arrays={"h": [0.0] * n}),
            Scene([Panel([Bars("h")], xlim=(0, 1), ylim=(0, 1))]),
        ).frame_set(0)


def test_affine_declares_fast_sliders_alone_in_their_group_with_0_on_their_range():
    # (the site checks the claim itself: tests/test_site.py)
    assert BUILDERS["two_key"]().affine == ("v1x", "v1y", "v2x", "v2y")
    assert _tiny().affine == ()
    with pytest.raises(ValueError, match=r"affine names sliders that are fast and alone.*\['a'\]"):
        _tiny(affine=("a",))  # in the grid (a, b)
    with pytest.raises(ValueError, match=r"alone in their group, got \['n', 'cmap'\]"):
        _tiny(affine=("n", "cmap"))  # a slow slider, a dropdown
    with pytest.raises(TypeError, match="affine must be a sequence of control names, got 'ab'"):
        _tiny(affine="ab")
    c = {"v": float_slider("v", 0.5, 2.0, 1.0, step=0.5)}
    with pytest.raises(ValueError, match=r"0 on their range, got \['v'\]"):
        Explorer(
            c,
            lambda v: Frame(arrays={"h": [v]}),
            Scene([Panel([Bars("h")], xlim=(0, 1), ylim=(0, 2))]),
            affine=("v",),
        )


def test_bad_scene_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="cmap must be one of"):
        Heatmap("w", cmap="jet")
    with pytest.raises(ValueError, match="vmax > vmin"):
        Heatmap("w", vmin=1, vmax=1)
    with pytest.raises(ValueError, match="xlim must be two different finite numbers"):
        Panel([], xlim=(0, 0), ylim=(0, 1))
    with pytest.raises(ValueError, match="xticklabels has 1 labels for 2 ticks"):
        Panel([], xlim=(0, 1), ylim=(0, 1), xticks=[0, 1], xticklabels=["a"])
    with pytest.raises(ValueError, match="legend must be one of"):
        Panel([], xlim=(0, 1), ylim=(0, 1), legend="middle")
    with pytest.raises(TypeError, match="Panel artists must be scene artists"):
        Panel(["w"], xlim=(0, 1), ylim=(0, 1))
    with pytest.raises(ValueError, match="marker must be"):
        Points("p", marker="x")
    with pytest.raises(ValueError, match=r"points.xy must have shape \(N, 2\)"):
        Scene([Panel([Points([1, 2, 3])], xlim=(0, 1), ylim=(0, 1))]).to_json()
    with pytest.raises(ValueError, match="col_widths needs 2"):
        Scene([Panel([], xlim=(0, 1), ylim=(0, 1))], cols=2, col_widths=[1])
    with pytest.raises(ValueError, match="slider 'd'"):
        selection_slider("d", [1, 2], 3)


def test_control_values_cover_min_max_and_stay_in_range():
    import ipywidgets as w

    rng = np.random.default_rng(0)
    s = w.FloatSlider(min=-2.0, max=3.0, value=0.0)
    vals = control_values(s, rng, n_random=4)
    assert vals[:2] == [-2.0, 3.0] and len(vals) == 6 and all(-2 <= v <= 3 for v in vals)
    assert control_values(w.Checkbox(value=True), rng) == [False, True]
    assert control_values(w.Dropdown(options=["a", "b"]), rng) == ["a", "b"]
    assert control_values(w.FloatLogSlider(min=0, max=3, base=2, value=2), rng)[:2] == [1.0, 8.0]
    assert control_values(w.IntSlider(min=1, max=4, value=2), rng)[:2] == [1, 4]


def test_the_documented_example_builder_runs():
    """The example at the top of attnlib/widgets/framework/explorer.py (what porters copy)
    works as written.
    """
    import re

    import attnlib.widgets.framework.explorer as module

    code = re.search(
        r"How to write a builder.*?::\n\n(.*?)\n\nThen add", module.__doc__, re.S
    ).group(1)
    scope: dict = {}
    exec(compile(textwrap_dedent(code), "explorer-doc-example", "exec"), scope)
    ex = scope["temperature_explorer"]()
    st = ex.set(t=2.0)
    np.testing.assert_allclose(
        st["weights"], torch.softmax(torch.tensor([2.0, 1.0, 0.1], dtype=torch.float64) / 2, 0)
    )
    header, buffers = ex.frame_set(0)
    assert header["n"] == 99 and len(decode_set(header, buffers)) == 99
    assert ex.png()[:4] == b"\x89PNG"


def textwrap_dedent(s: str) -> str:
    import textwrap

    return textwrap.dedent(s)
