"""Explorers: controls + a pure ``compute`` + a static
:class:`~attnlib.widgets.framework.scene.Scene`, drawn in the browser.

How to write a builder (``attnlib/widgets/<concept>.py``)::

    import torch
    from attnlib.widgets.framework.artists import Bars, Line, Points
    from attnlib.widgets.framework.controls import float_slider, toggle
    from attnlib.widgets.framework.explorer import Explorer, builder
    from attnlib.widgets.framework.scene import Frame, Panel, Scene

    @builder("temperature")                           # records name and arguments (ex.args)
    def temperature_explorer(logits=(2.0, 1.0, 0.1), *, t: float = 1.0) -> Explorer:
        z = torch.tensor(logits, dtype=torch.float64)                     # (S,)
        ts = torch.linspace(0.1, 5.0, 50, dtype=torch.float64)
        curve = torch.softmax(z / ts[:, None], -1)[:, 0]                   # static: computed once
        controls = {"t": float_slider("temperature", 0.1, 5.0, t, step=0.05),
                    "log": toggle("log scale", False)}

        def compute(t, log):                                               # pure: values -> Frame
            w = torch.softmax(z / t, -1)                                   # (S,)
            return Frame(arrays={"w": w, "mark": [[t, float(w[0])]]},
                         readout={"weights": w, "max weight": w.max()})

        scene = Scene([
            Panel([Bars("w")], xlim=(-0.6, len(z) - 0.4), ylim=(0, 1), title="softmax(z / t)",
                  xticks=range(len(z)), xticklabels=["z1", "z2", "z3"]),
            Panel([Line(torch.stack([ts, curve], 1)), Points("mark", color="black")],
                  xlim=(0, 5), ylim=(0, 1), title="weight of z1", xlabel="t"),
        ], cols=2, width=640, height=260)
        return Explorer(controls, compute, scene, columns=["z1", "z2", "z3"])

Then add ``"temperature": temperature_explorer`` to ``BUILDERS`` in ``attnlib/widgets/__init__.py``
and the notebook to ``tests/browser/specs.py``.

Every word the reader sees is a message (:mod:`attnlib.util.i18n`), made when the builder runs:
labels, menu entries (the shown label; the value stays), titles, axes, legends and texts with
``_("...")``, a frame's strings with fields (``_("source: {tokens}", tokens=...)``, never glued),
readout keys with ``N_`` (the key stays, the readout shows ``gettext(key)``; a key made from
numbers is a :class:`~attnlib.widgets.framework.readout.Key`), and the builder's name with
``@builder(N_("temperature"))`` (the explorer's shown name). ``tests/test_widgets_language.py``
checks every builder of ``BUILDERS`` in Chinese.

How it runs. Every slider is *fast*: for each slider (or each ``grid=[("x", "y")]`` pair of
sliders, precomputed as a 2-D grid) the kernel calls ``compute`` at every step of its range, at
the current values of the other controls, and sends that *frame set* (float32 arrays + float64
readout numbers, binary) to the browser once; the slider drives the front end directly
(``ipywidgets.jsdlink``), which draws the frame of the slider's value, readout included, with
no kernel round trip. Changing a *slow* control (toggle, dropdown, a slider named in ``slow=``)
sends the frame at the new values at once, then the recomputed sets; sets are cached (LRU, by
the values they depend on), so toggling back is instant. The kernel still learns every value:
``values()`` and ``state()`` are always true. Keep a set under ``max_bytes`` (choose ``step``).

The framework owns the plumbing a builder would otherwise repeat:

- ``@builder(name)`` records the builder's bound arguments (``ex.name``, ``ex.args``);
- ``data=`` declares the inputs tests and readers read (``ex.data``);
- ``affine=`` declares fast sliders in which every array and readout number of a frame is
  affine (for fixed other values) and the texts do not change: a static page then stores 1 + k
  frames per setting of the others, not a product (``tools/site_affine.py`` checks the claim);
- ``layer=fn``: arrays that depend only on slow controls (``fn``'s parameters name them, e.g. a
  surface chosen in a menu) are sent once per value, not in every frame; ``compute`` need not
  return them;
- :func:`~attnlib.widgets.framework.tables.grid_table`: one vectorised function over a whole
  slider axis (or grid), cached per setting of the other controls; ``compute`` looks its row up;
- the messages between kernel and browser are defined in :mod:`attnlib.widgets.framework.wire`.

From Python: ``ex.set(**values)`` (synchronous; returns ``state()``), ``ex.state()`` (the
readout numbers, unrounded), ``ex.values()``, ``ex.compute(**values)`` (the pure function),
``ex.state(**values)`` (the readout at other values, moving nothing), ``ex.frame()`` (the
current :class:`Frame`), ``ex.figure()`` / ``ex.png()`` (a matplotlib
picture of the current state, drawn from the same scene and frame). Displayed, the explorer's
output carries the live widget *and* an ``image/png`` of its initial state for readers without a
kernel. A notebook cell that shows numbers calls ``compute`` or a fresh explorer, never the
displayed one.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import inspect
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attnlib.widgets.framework import wire
from attnlib.widgets.framework.builder import builder
from attnlib.widgets.framework.frames import (
    check_frame,
    is_slider,
    readout_spec,
    slider_axis,
)
from attnlib.widgets.framework.readout import readout_html, to_py
from attnlib.widgets.framework.render import render, render_png
from attnlib.widgets.framework.scene import Frame, Scene
from attnlib.widgets.framework.sync import FrameSync
from attnlib.widgets.framework.view import view_class

__all__ = ["Explorer", "Frame", "readout_html", "builder", "MAX_FAST"]

MAX_FAST = wire.MAX_FAST


class Explorer(FrameSync):
    """Controls, a pure ``compute(**values) -> Frame`` and a :class:`Scene` (see the module doc).

    Args:
        controls: ``{name: ipywidget}`` (from :mod:`attnlib.widgets.framework.controls`);
            ``compute`` gets one keyword per name.
        compute: pure function of the control values returning a :class:`Frame`: an array for
            every dynamic key of ``scene`` that ``layer`` does not give (same shapes for every
            value) and the readout.
        scene: the static picture (:class:`Scene`).
        grid: tuples of sliders precomputed jointly (e.g. ``[("x", "y")]``: every (x, y) pair).
        slow: sliders that are *not* precomputed (each move asks the kernel; use for costly ones).
        layer: optional ``layer(**some slow controls) -> {key: array}``: the arrays that depend
            only on the slow controls its parameters name (e.g. a surface chosen in a menu). They
            are sent once per value of those controls, not in every frame; ``compute`` need not
            return them (:meth:`compute` merges them in).
        data: the inputs the builder computed from (a dict of tensors, or the demo's own result
            object), for tests and readers who want the numbers behind the picture.
        affine: fast sliders (each its own group, 0 on its range) in which every array and
            readout number of a frame is affine, and the texts and strings do not change, at
            fixed values of the other controls (e.g. the values ``v`` of ``o = a @ v``). A
            declaration for the static site, which verifies it when it builds (``ex.affine``).
        name, args: the ``BUILDERS`` name and the builder's JSON-able keyword arguments; a
            builder decorated with :func:`builder` gets both without writing them.
        title: heading above the controls; columns: readout column headers; digits: decimals.
        max_bytes: the largest frame set allowed (a clear error suggests a coarser step).
        cache: frame sets (and layers) kept per explorer (LRU).
    """

    def __init__(
        self,
        controls: Mapping[str, Any],
        compute: Callable[..., Frame],
        scene: Scene,
        *,
        grid: Sequence[Sequence[str]] = (),
        slow: Sequence[str] = (),
        layer: Callable[..., Mapping[str, Any]] | None = None,
        data: Any = None,
        affine: Sequence[str] = (),
        name: str | None = None,
        args: Mapping[str, Any] | None = None,
        title: str | None = None,
        columns: Sequence[str] | None = None,
        digits: int = 3,
        max_bytes: int = 3_000_000,
        cache: int = 8,
    ):
        import ipywidgets as w

        if not isinstance(controls, Mapping) or not controls:
            raise ValueError("controls must be a non-empty dict {name: ipywidget}")
        if not callable(compute):
            raise TypeError(f"compute must be callable, got {type(compute).__name__}")
        if not isinstance(scene, Scene):
            raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
        if layer is not None and not callable(layer):
            raise TypeError(f"layer must be callable or None, got {type(layer).__name__}")
        self.controls = dict(controls)
        self.data = {} if data is None else data
        self._compute, self.scene, self.name, self.digits = compute, scene, name, digits
        self.args = dict(args or {})
        self.dropped: list[str] = []  # builder arguments args cannot rebuild (builder.py)
        self.columns = list(columns) if columns is not None else None
        self.max_bytes, self._cache_size = max_bytes, cache
        named = [n for g in grid for n in g] + list(slow)
        unknown = sorted(set(named) - set(self.controls))
        if unknown:
            raise KeyError(
                f"grid/slow name unknown control(s) {unknown}; controls are {sorted(self.controls)}"
            )
        in_grid = {m for g in grid for m in g}
        sliders = [n for n, c in self.controls.items() if is_slider(c) and n not in slow]
        self.groups: list[tuple[str, ...]] = [tuple(g) for g in grid]
        self.groups += [(n,) for n in sliders if n not in in_grid]
        self.fast = [n for g in self.groups for n in g]
        if len(self.fast) > MAX_FAST:
            raise ValueError(
                f"at most {MAX_FAST} fast sliders per explorer, got {self.fast}; list some in slow="
            )
        self._axes = {n: slider_axis(self.controls[n]) for n in self.fast}
        self.affine = _affine(affine, self.groups, self._axes)
        self._layer = layer
        self._layer_args = list(inspect.signature(layer).parameters) if layer else []
        bad = sorted(set(self._layer_args) & set(self.fast) | set(self._layer_args) - set(controls))
        if bad:
            raise ValueError(
                f"layer's parameters must be slow controls, got {bad}; fast are {self.fast}"
            )
        self._layers: OrderedDict = OrderedDict()  # layer values -> (token, arrays, shapes, b32)
        self._sets: OrderedDict = OrderedDict()  # (group, outside values) -> (token, msg, bufs)
        self._sent: dict[int, int] = {}
        self._sent_layers: OrderedDict = OrderedDict()  # as the front end keeps them
        self._want: dict[int, int] = {}
        self._timer = None
        self._hold = False
        self._ready = False
        self._layer_keys: frozenset[str] = frozenset(self._layer_at(self.values())[1])
        first = self.frame()
        check_frame(scene, first)
        self._spec = readout_spec(first)

        self.view = view_class()(
            **wire.view_traits(
                scene.to_json(),
                [(gi, self._axes[n].shown) for gi, g in enumerate(self.groups) for n in g],
                [[self.fast.index(n) for n in g] for g in self.groups],
                builder=name,
                args=self.args,
                columns=self.columns,
                digits=digits,
            )
        )
        self.view.add_class("attnlib-view")
        self._links = []
        for i, n in enumerate(self.fast):
            attr = self._axes[n].attr
            setattr(self.view, f"v{i}", getattr(self.controls[n], attr))
            self._links.append(w.jsdlink((self.controls[n], attr), (self.view, f"v{i}")))
        self.view.on_msg(self._on_msg)
        for c in self.controls.values():
            c.observe(self._on_change, names="value")
        box = w.HBox(list(self.controls.values()), layout=w.Layout(flex_flow="row wrap"))
        children = ([w.HTML(f"<b>{html.escape(title)}</b>")] if title else []) + [box, self.view]
        self.widget = w.VBox(children)
        self.widget.add_class("attnlib-explorer")

    def _named(self, name: str, args: Mapping[str, Any], dropped: Sequence[str] = ()) -> None:
        """Set the ``BUILDERS`` name and arguments (from :func:`builder`); ``dropped``: the
        arguments given that ``args`` cannot rebuild (a static page refuses to show them)."""
        self.name, self.args, self.dropped = name, dict(args), list(dropped)
        self.view.meta = wire.meta(name, self.args, self.columns, self.digits)
        self.view.words = wire.words(name)

    @property
    def words(self) -> dict[str, str]:
        """The screen reader's words, in the language the explorer was built in (the ``words``
        trait, :func:`~attnlib.widgets.framework.wire.words`); a static page passes them on."""
        return dict(self.view.words)

    @property
    def axes(self) -> dict[str, tuple]:
        """Each fast slider's values, as :meth:`compute` gets them: ``{name: (v0, v1, ...)}``."""
        return {n: tuple(a.values) for n, a in self._axes.items()}

    # -- Python API
    def values(self) -> dict[str, Any]:
        """The current control values ``{name: value}``."""
        return {k: to_py(c.value) for k, c in self.controls.items()}

    def compute(self, **values) -> Frame:
        """The pure function: the :class:`Frame` at these control values (missing ones: current),
        the layer's arrays included."""
        values = {**self.values(), **values}
        frame = self._compute(**values)
        if self._layer is None:
            return frame
        return dataclasses.replace(frame, arrays={**self._layer_at(values)[1], **frame.arrays})

    def frame(self) -> Frame:
        """The frame of the current control values."""
        return self.compute()

    def state(self, **values) -> dict[str, Any]:
        """The readout numbers shown now (unrounded floats, ints, bools, str, nested lists).

        With ``values``: the numbers the explorer *would* show there, moving nothing (for a
        notebook cell that prints what the reader will see at another setting).
        """
        return {str(k): to_py(v) for k, v in self.compute(**values).readout.items()}

    def set(self, **values) -> dict[str, Any]:
        """Set controls by name (sliders clip to their range), update the front end, return
        :meth:`state`.
        """
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise KeyError(
                f"unknown control(s) {unknown}; this explorer has {sorted(self.controls)}"
            )
        self._hold = True
        try:
            for k, v in values.items():
                _set_control(k, self.controls[k], v)
        finally:
            self._hold = False
        self._push()
        return self.state()

    def readout_html(self, frame: Frame | None = None) -> str:
        """The readout of ``frame`` (default: the current state) as HTML, as the
        browser shows it.
        """
        frame = self.frame() if frame is None else frame
        return readout_html(frame.readout, columns=self.columns, digits=self.digits)

    def figure(self):
        """A matplotlib ``Figure`` of the current state
        (the same scene and frame as the browser).
        """
        return render(self.scene, self.frame())

    def png(self) -> bytes:
        """:meth:`figure` as PNG bytes."""
        return render_png(self.scene, self.frame())

    def frame_set(self, group: int = 0) -> tuple[dict, list[bytes]]:
        """The frame set of ``group`` at the current values, as sent: ``(set message, [f32,
        f64])``."""
        _, message, buffers = self._set_for(group)
        return message, buffers

    @property
    def has_layer(self) -> bool:
        """Whether the explorer has a layer (arrays of its slow controls): see :meth:`layer`."""
        return self._layer is not None

    def layer(self) -> tuple[dict, list[bytes]]:
        """The layer at the current values, as sent: ``(layer message, [f32])``.

        Raises ``ValueError`` when the explorer has no layer (check :attr:`has_layer` first)."""
        if self._layer is None:
            raise ValueError(f"{self.name or 'this explorer'} has no layer")
        token, _, shapes, b32 = self._layer_at(self.values())
        fixed = {k: to_py(self.controls[k].value) for k in self._layer_args}
        return wire.layer_message(token, shapes, fixed), [b32]

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["image/png"] = base64.b64encode(self.png()).decode("ascii")
        bundle["text/plain"] = repr(self)
        # The output's metadata names the builder and its args, so a static page (tools/site.py)
        # can rebuild this explorer (nbval ignores output metadata).
        meta: dict[str, Any] = {"builder": self.name, "args": self.args}
        if self.dropped:  # arguments args cannot rebuild: the site refuses this output
            meta["dropped"] = self.dropped
        return bundle, {"attnlib": meta}

    def __repr__(self):
        return f"<Explorer {self.name or '(unnamed)'} controls={list(self.controls)}>"


def _affine(names, groups, axes) -> tuple[str, ...]:
    """The checked ``affine=`` declaration: fast sliders, each its own group, 0 on its range."""
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"affine must be a sequence of control names, got {names!r}")
    names = tuple(names)
    bad = [n for n in names if (n,) not in groups]
    if bad:
        raise ValueError(
            f"affine names sliders that are fast and alone in their group, got {bad}; "
            f"the groups are {groups}"
        )
    off = [n for n in names if 0 not in axes[n].values]
    if off:
        raise ValueError(f"affine sliders must have 0 on their range, got {off}")
    return names


def _set_control(name: str, control, value) -> None:
    """``control.value = value``, a wrong value named by the control's name (traitlets' own
    error names only the widget class: "The 'value' trait of a Checkbox instance ...")."""
    import traitlets

    if isinstance(getattr(control, "value", None), bool) and not isinstance(value, bool):
        raise TypeError(
            f"control {name!r} is a checkbox: set it to True or False, got "
            f"{type(value).__name__} ({value!r})"
        )
    try:
        control.value = value
    except traitlets.TraitError as e:
        current = getattr(control, "value", None)
        raise TypeError(
            f"control {name!r} cannot take {type(value).__name__} ({value!r}); it holds "
            f"{type(current).__name__} values like {current!r} ({type(control).__name__}: {e})"
        ) from None
