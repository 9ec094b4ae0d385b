"""The framework's own parts: the wire format (wire.py), the builder decorator, the layer of
slow-only arrays, the grid tables and the slider axes.

References: a hand-written list of the documented fields (the wire's table), the builder's own
signature (``inspect``), each array's float32 cast computed here, torch's softmax on each grid
point alone, and the sliders' ranges written out by hand.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import torch

from attnlib.widgets.framework import wire
from attnlib.widgets.framework.artists import Bars, Heatmap
from attnlib.widgets.framework.controls import (
    dropdown,
    float_slider,
    int_slider,
    log_slider,
    selection_slider,
    toggle,
)
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.frames import SliderAxis, slider_axis
from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells
from attnlib.widgets.framework.tables import GridTable, grid_table
from attnlib.widgets.framework.testing import decode_set


def _documented_fields() -> set[str]:
    """The names in the first column of wire.py's tables."""
    return set(re.findall(r"^(\w+)\s{2,}", wire.__doc__, re.M)) - {"trait", "type", "field"}


def _layered(**kw):
    """A heatmap chosen by a menu (the layer) and bars moved by a slider."""
    surfaces = {"a": np.eye(3), "b": np.ones((3, 3)) / 2}
    calls = []

    def layer(which):
        calls.append(which)
        return {"surface": surfaces[which]}

    def compute(x, which):
        w = torch.softmax(torch.tensor([x, 0.0, -x], dtype=torch.float64), 0)
        return Frame(arrays={"w": w}, readout={"w": w, "which": which})

    controls = {
        "x": float_slider("x", -1.0, 1.0, 0.0, step=0.5),
        "which": dropdown("m", ["a", "b"]),
    }
    scene = Scene(
        [
            Panel([Heatmap("surface")], **cells(3, 3)),
            Panel([Bars("w")], xlim=(-0.6, 2.6), ylim=(0, 1)),
        ],
        cols=2,
    )
    return Explorer(controls, compute, scene, layer=layer, name="layered", **kw), calls


def test_every_message_and_header_field_sent_is_documented_in_wire():
    ex, _ = _layered()
    sent = []
    ex.view.send = lambda content, buffers=None: sent.append(content)
    ex._on_msg(ex.view, {"type": wire.READY}, [])
    assert [m["type"] for m in sent] == ["layer", "now", "set"]
    documented = _documented_fields()
    assert {"ready", "layer", "now", "set", "scene", "fast", "groups", "meta"} <= documented
    for m in sent:
        assert set(m) - {"type"} <= documented, (m["type"], set(m) - documented)
    # the field names another front end reads (a static site) stay as they were
    now, layer_msg, set_msg = sent[1], sent[0], sent[2]
    assert set(now) == {
        "type", "n", "arrays", "readout", "texts", "text_values", "strings", "fixed", "layer",
        "group", "token", "shape", "want",
    }  # fmt: skip
    assert set(set_msg) == set(now) - {"want"} | {"names", "axes", "fixed_fast"}
    assert set(layer_msg) == {"type", "token", "arrays", "fixed"}


def test_the_layer_is_sent_once_per_slow_value_and_frames_leave_its_arrays_out():
    ex, calls = _layered()
    sent = []
    ex.view.send = lambda content, buffers=None: sent.append((content, buffers))
    ex._on_msg(ex.view, {"type": "ready"}, [])
    layer_msg, (b32,) = sent[0]
    assert layer_msg["arrays"] == {"surface": [3, 3]} and layer_msg["fixed"] == {"which": "a"}
    np.testing.assert_array_equal(
        np.frombuffer(b32, np.float32), np.eye(3, dtype=np.float32).ravel()
    )
    now, set_msg = sent[1][0], sent[2][0]
    assert "surface" not in now["arrays"] and "surface" not in set_msg["arrays"]
    assert now["layer"] == set_msg["layer"] == layer_msg["token"]
    # compute() merges the layer in, so the stored picture and tests see whole frames
    np.testing.assert_array_equal(ex.compute(which="b").arrays["surface"], np.ones((3, 3)) / 2)
    sent.clear()
    ex.set(which="b")
    assert [m["type"] for m, _ in sent] == ["layer", "now", "set"]
    sent.clear()
    ex.set(which="a")  # back: the front end still holds layer "a" and its set
    assert [m["type"] for m, _ in sent] == ["now", "set"]
    assert calls.count("a") == 1 and calls.count("b") == 1  # each layer computed once


def test_a_layer_may_only_name_slow_controls():
    ok, _ = _layered()
    with pytest.raises(ValueError, match=r"layer's parameters must be slow controls, got \['x'\]"):
        Explorer(ok.controls, ok._compute, ok.scene, layer=lambda x: {"surface": np.eye(3)})
    with pytest.raises(TypeError, match="layer must be callable"):
        Explorer(ok.controls, ok._compute, ok.scene, layer="surface")


_MODEL = object()  # stands for a trained model: not JSON-able


def test_builder_records_the_bound_arguments_with_defaults_as_json():
    @builder("demo")
    def demo_explorer(xs=(1.0, 2.0), *, t: float = 0.5, model=_MODEL, label=None):
        controls = {"t": float_slider("t", 0.0, 1.0, t, step=0.5)}
        scene = Scene([Panel([Bars("h")], xlim=(-0.6, 1.6), ylim=(0, 3))])
        return Explorer(controls, lambda t: Frame(arrays={"h": [x * t for x in xs]}), scene)

    ex = demo_explorer([3.0, torch.tensor(4.0)], t=1.0)
    # model is not JSON-able: left out (its default rebuilds it); tuples and tensors -> lists
    assert ex.name == "demo" and ex.args == {"xs": [3.0, 4.0], "t": 1.0, "label": None}
    assert ex.view.meta["builder"] == "demo" and ex.view.meta["args"] == ex.args
    assert demo_explorer(**ex.args).state() == ex.state()
    assert demo_explorer.__name__ == "demo_explorer" and "xs" in str(
        __import__("inspect").signature(demo_explorer)
    )


def test_slider_axis_is_a_frozen_record_of_every_step():
    import ipywidgets as w

    class MySlider(w.FloatSlider):  # a subclass is a slider too (isinstance, not a name)
        pass

    cases = [
        (int_slider("n", 2, 5, 3), SliderAxis("value", (2, 3, 4, 5), (2, 3, 4, 5))),
        (float_slider("x", -0.5, 0.5, 0.0, step=0.25), None),
        (log_slider("l", 0, 2, 10.0, step=1.0), SliderAxis("value", (1.0, 10.0, 100.0), (0, 1, 2))),
        (selection_slider("s", [8, 16, 32], 16), SliderAxis("index", (8, 16, 32), (0, 1, 2))),
        (
            MySlider(min=0.0, max=1.0, step=0.5),
            SliderAxis("value", (0.0, 0.5, 1.0), (0.0, 0.5, 1.0)),
        ),
    ]
    for control, want in cases:
        axis = slider_axis(control)
        if want is None:
            assert axis.values == (-0.5, -0.25, 0.0, 0.25, 0.5) == axis.shown
        elif want.attr == "value" and want.shown == (0, 1, 2):  # the log slider: shows the value
            assert axis.values == want.values and axis.shown == want.values
        else:
            assert axis == want
    with pytest.raises(dataclasses.FrozenInstanceError):
        axis.attr = "index"  # type: ignore[misc]
    with pytest.raises(TypeError, match="fast control must be an ipywidgets slider"):
        slider_axis(toggle("t"))


def test_a_grid_table_gives_each_point_the_row_computed_for_it_alone():
    controls = {
        "x": float_slider("x", -1.0, 1.0, 0.0, step=0.5),
        "n": int_slider("n", 1, 3, 1),
    }
    calls = []

    @grid_table(controls, "x", "n", cache=2)
    def table(x, n, gain):
        calls.append(len(x))
        z = torch.stack([x * gain, n.double(), torch.zeros_like(x)], -1)  # (N, 3)
        return torch.softmax(z, -1), x * n

    assert table.names == ["x", "n"] and table.axes == {
        "x": [-1.0, -0.5, 0.0, 0.5, 1.0],
        "n": [1, 2, 3],
    }
    for x in (-1.0, 0.5):
        for n in (1, 3):
            w, xn = table(x=x, n=n, gain=2.0)
            ref = torch.softmax(torch.tensor([2 * x, float(n), 0.0], dtype=torch.float64), 0)
            # the same float64 softmax of the same 3 numbers (the table's row of a batched call):
            # equal to an ulp or two (rtol 1e-15 = 4.5 ulps of 1)
            torch.testing.assert_close(w, ref, rtol=1e-15, atol=0)
            assert float(xn) == x * n
    assert calls == [15]  # the whole 5 x 3 grid in one call, then looked up
    w, _ = table(x=0.25, n=2, gain=2.0)  # x off its grid: the 3 steps of n at x = 0.25
    assert calls[-1] == 3
    table(x=0.25, n=3, gain=2.0)
    assert len(calls) == 2  # the same small table
    torch.testing.assert_close(
        w, torch.softmax(torch.tensor([0.5, 2.0, 0.0], dtype=torch.float64), 0)
    )
    for gain in (3.0, 4.0, 2.0):  # cache=2: the third setting evicts the first (LRU)
        table(x=0.0, n=1, gain=gain)
    assert calls[-3:] == [15, 15, 15]
    table(x=0.3, n=1, gain=2.0), table(x=0.4, n=1, gain=2.0), table(x=0.6, n=1, gain=2.0)
    assert calls[-3:] == [3, 3, 3]
    table(x=0.0, n=1, gain=2.0)  # three small tables evicted none of the whole ones
    assert len(calls) == 8
    with pytest.raises(KeyError, match="needs the axes"):
        table(x=0.0, gain=1.0)
    with pytest.raises(KeyError, match="unknown controls"):
        grid_table(controls, "zz")
    with pytest.raises(ValueError, match="at least one axis"):
        GridTable({}, lambda: None)


def test_frames_sent_equal_compute_when_compute_reads_a_grid_table():
    controls = {
        "x": float_slider("x", -1.0, 1.0, 0.5, step=0.1),
        "y": float_slider("y", -1.0, 1.0, 0.0, step=0.1),
    }

    @grid_table(controls, "x", "y")
    def plane(x, y):
        return torch.softmax(torch.stack([x, y, x * y], -1), -1)

    def compute(x, y):
        return Frame(arrays={"w": plane(x=x, y=y)}, readout={"w": plane(x=x, y=y)})

    scene = Scene([Panel([Bars("w")], xlim=(-0.6, 2.6), ylim=(0, 1))])
    ex = Explorer(controls, compute, scene, grid=[("x", "y")])
    header, buffers = ex.frame_set(0)
    frames = decode_set(header, buffers)
    assert len(frames) == 21 * 21
    for values, arrays, nums in frames[::37]:
        ref = torch.softmax(
            torch.tensor(
                [values["x"], values["y"], values["x"] * values["y"]], dtype=torch.float64
            ),
            0,
        )
        np.testing.assert_array_equal(
            arrays["w"], ex.compute(**values).arrays["w"].numpy().astype(np.float32)
        )
        np.testing.assert_allclose(nums, ref.numpy(), rtol=1e-15)


def test_a_key_read_as_a_text_and_as_an_array_is_refused():
    # The two-key explorer once had Segments("mix") and Text(key="mix"): the text won and the
    # segments were never sent. A Scene now refuses such a pair when it is made.
    from attnlib.widgets.framework.artists import Segments, Text

    with pytest.raises(ValueError, match=r"'mix'.*text.*array"):
        Scene([Panel([Segments("mix"), Text(0.1, 0.9, key="mix", axes=True)], (0, 1), (0, 1))])
    # two artists reading the same array, or two texts the same string, stay allowed
    Scene([Panel([Segments("mix"), Segments("mix", color="C1")], (0, 1), (0, 1))])
    Scene(
        [
            Panel(
                [Text(0.1, 0.9, key="t", axes=True), Text(0.5, 0.9, key="t", axes=True)],
                (0, 1),
                (0, 1),
            )
        ]
    )


def test_the_two_key_explorer_text_matches_its_weights_and_output():
    # The weight lines were dropped (they hid the dashed segment); the formula text carries the
    # weights instead. Its numbers are the frame's weights, and o = a1 v1 + a2 v2 in float64.
    from attnlib.widgets import BUILDERS

    ex = BUILDERS["two_key"]()
    keys = ex.scene.keys()
    assert keys["mix_text"][1] == "text" and "mix" not in keys
    fr = ex.compute(**{n: c.value for n, c in ex.controls.items()})
    a = np.asarray(fr.readout["weights (a1, a2)"], dtype=np.float64)
    assert fr.texts["mix_text"] == f"o = {a[0]:.3f} v1 + {a[1]:.3f} v2"
    o = np.asarray(fr.arrays["output"], dtype=np.float64)[0]
    v = np.asarray(fr.arrays["values"], dtype=np.float64)
    # the frame's output is computed in float32 by the library: 2 products and a sum, each
    # rounded once, on values of size <= 8 -> |error| <= 3 * 2**-24 * 8 * (a1 + a2) < 2e-6
    np.testing.assert_allclose(o, a[0] * v[0] + a[1] * v[1], rtol=0, atol=2e-6)
