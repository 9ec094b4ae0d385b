"""Frame sets: the binary encoding of an explorer's frames for the front end (``explorer.js``).

:func:`slider_axis` lists every step of a fast slider; :func:`check_frame` and
:func:`readout_spec` check the first frame against the scene and fix the readout's layout;
:func:`pack_frames` packs frames into ``(header, [float32 arrays, float64 readout numbers])``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlib.widgets.framework import wire
from attnlib.widgets.framework.readout import shown_name, to_py, value_kind
from attnlib.widgets.framework.scene import Frame, Scene

__all__ = [
    "SliderAxis",
    "slider_axis",
    "is_slider",
    "check_frame",
    "readout_spec",
    "pack_frames",
    "pack_arrays",
]


@dataclass(frozen=True)
class SliderAxis:
    """Every step of a fast slider.

    Attributes:
        attr: the slider's trait linked to the front end (``"value"``, or ``"index"`` for a
            ``SelectionSlider``).
        values: the values ``compute`` gets, one per step.
        shown: the linked trait's value at each step (what ``explorer.js`` compares with).
    """

    attr: str
    values: tuple
    shown: tuple

    def index(self, control) -> int:
        """The step nearest to ``control``'s linked value."""
        v = float(getattr(control, self.attr))
        return int(np.argmin([abs(v - float(a)) for a in self.shown]))


def slider_axis(c) -> SliderAxis:
    """The :class:`SliderAxis` of an ipywidgets slider (Float/Int/FloatLog/SelectionSlider)."""
    import ipywidgets as w

    if isinstance(c, w.SelectionSlider):
        opts = tuple(o[1] if isinstance(o, tuple) else o for o in c.options)
        return SliderAxis("index", opts, tuple(range(len(opts))))
    if isinstance(c, w.IntSlider):
        ints = tuple(range(int(c.min), int(c.max) + 1, int(c.step)))
        return SliderAxis("value", ints, ints)
    if isinstance(c, (w.FloatSlider, w.FloatLogSlider)):
        n = int(round((c.max - c.min) / c.step)) + 1
        exps = tuple(round(c.min + i * c.step, 10) for i in range(n))
        vals = tuple(float(c.base**e) for e in exps) if isinstance(c, w.FloatLogSlider) else exps
        return SliderAxis("value", vals, vals)
    raise TypeError(
        "a fast control must be an ipywidgets slider (Float/Int/FloatLog/SelectionSlider), "
        f"got {type(c).__name__}"
    )


def is_slider(c) -> bool:
    """Whether ``c`` is a slider the explorer can precompute (see :func:`slider_axis`)."""
    import ipywidgets as w

    return isinstance(c, (w.SelectionSlider, w.IntSlider, w.FloatSlider, w.FloatLogSlider))


def check_frame(scene: Scene, f: Frame) -> None:
    """Raise unless ``f`` is a :class:`Frame` with every dynamic key of ``scene``, well shaped."""
    if not isinstance(f, Frame):
        raise TypeError(f"compute must return a Frame, got {type(f).__name__}")
    for key, (artist, field) in scene.keys().items():
        have = f.texts if field == "text" else f.arrays
        if key not in have:
            raise KeyError(
                f"compute's Frame has no {'text' if field == 'text' else 'array'} {key!r} "
                f"for {artist.kind}.{field}; it has {sorted(have)}"
            )
        if field != "text":
            artist.check(field, f.arrays[key])


_KIND_NAMES = {"b": "a bool", "s": "a str", "i": "integers", "f": "floats"}


def _readout_entry(label, v) -> dict:
    """Label, kind and shape of one readout value; a value the readout cannot show (more than 2-D,
    ragged, not numbers) is a ``ValueError`` naming the label."""
    v = to_py(v)
    # the key code reads stays as it is; the page shows its name in the current language
    named = {"label": str(label), "name": shown_name(label)}

    if isinstance(v, str):
        return {**named, "kind": "s", "shape": []}
    try:
        a = np.asarray(v)
    except ValueError:  # ragged nested lists
        a = np.asarray(v, dtype=object)
    if a.dtype == object or not (a.dtype == bool or np.issubdtype(a.dtype, np.number)):
        raise ValueError(
            f"readout entry {str(label)!r} must be a number, bool, str or a 1-D/2-D block of "
            f"numbers of one length per row, got {v!r:.80}"
        )
    if a.ndim > 2:
        raise ValueError(
            f"readout entry {str(label)!r} has shape {list(a.shape)}: the readout shows a "
            "number, a row (1-D) or a table (2-D); split it or pass a 2-D slice"
        )
    return {**named, "kind": value_kind(v), "shape": list(a.shape)}


def readout_spec(f: Frame) -> list[dict]:
    """Label, kind and shape of every readout entry of ``f`` (the same for all frames: see
    :func:`check_readout`)."""
    return [_readout_entry(label, v) for label, v in f.readout.items()]


def check_readout(spec: list[dict], f: Frame) -> None:
    """Raise unless ``f``'s readout has the entries of ``spec``, each of the same kind and shape
    (the front end lays out the readout once and formats each entry by its kind: an int in one
    frame and 1.5 in another would read "2")."""
    values = {str(k): v for k, v in f.readout.items()}
    if set(values) != {s["label"] for s in spec}:
        raise ValueError(
            f"the readout has entries {sorted(values)} in one frame and "
            f"{sorted(s['label'] for s in spec)} in another: every frame must have the same "
            "readout entries"
        )
    for s in spec:
        v = values[s["label"]]
        e = _readout_entry(s["label"], v)
        if (e["kind"], e["shape"]) != (s["kind"], s["shape"]):
            mixed = {e["kind"], s["kind"]} == {"i", "f"}
            hint = " (write it as float(...) in every frame)" if mixed else ""
            raise ValueError(
                f"readout entry {s['label']!r} holds {_KIND_NAMES[s['kind']]} of shape "
                f"{s['shape']} in one frame but {_KIND_NAMES[e['kind']]} of shape {e['shape']} "
                f"in another ({to_py(v)!r:.60}): every frame must give it one kind and "
                f"shape{hint}"
            )


def _float32(x) -> np.ndarray:
    """An array field as float32, without a detour through Python lists (a tensor of any device
    and dtype, an array or nested lists; the same values as ``np.asarray(to_py(x), np.float32)``).
    """
    if hasattr(x, "detach"):
        x = x.detach().to("cpu")
        x = x.double() if x.is_floating_point() else x
        return x.numpy().astype(np.float32)
    return np.asarray(x, dtype=np.float32)


def pack_frames(
    scene: Scene,
    spec: list[dict],
    frames: list[Frame],
    fixed: dict,
    *,
    max_bytes: int,
    name: str | None = None,
    layer: tuple[int | None, frozenset[str]] = (None, frozenset()),
) -> tuple[dict, list[bytes]]:
    """Encode ``frames`` as sent to the front end: ``(frame header, [float32 arrays, float64
    readout])`` (:func:`attnlib.widgets.framework.wire.frames_header`).

    ``layer``: ``(token, keys)`` of the layer that completes every frame; its keys are not packed.
    Raises ``ValueError`` when a frame's array shapes differ from the first frame's, or when the
    set exceeds ``max_bytes``.
    """
    token, layer_keys = layer
    keys = scene.keys()
    arr_keys = sorted(k for k, (_, f) in keys.items() if f != "text" and k not in layer_keys)
    txt_keys = sorted(k for k, (_, f) in keys.items() if f == "text")
    shapes = {k: list(_float32(frames[0].arrays[k]).shape) for k in arr_keys}
    f32, f64, texts, rstr = [], [], [], []
    for fr in frames:
        for k in arr_keys:
            a = _float32(fr.arrays[k])
            if list(a.shape) != shapes[k]:
                raise ValueError(
                    f"array {k!r} has shape {list(a.shape)} in one frame and {shapes[k]} "
                    f"in another: every frame of an explorer must have the same shapes"
                )
            f32.append(a.reshape(-1))
        check_readout(spec, fr)
        nums, strs = [], []
        for s in spec:
            v = to_py(fr.readout.get(s["label"]))
            if s["kind"] == "s":
                strs.append(str(v))
            else:
                nums.append(np.asarray(v, dtype=np.float64).reshape(-1))
        f64.append(np.concatenate(nums) if nums else np.zeros(0))
        rstr.append(strs)
        texts.append([str(fr.texts.get(k, "")) for k in txt_keys])
    b32 = np.concatenate(f32).astype(np.float32).tobytes() if f32 else b""
    b64 = np.concatenate(f64).astype(np.float64).tobytes()
    _check_size(len(b32) + len(b64), max_bytes, name, f"{len(frames)} frames")
    header = wire.frames_header(
        n=len(frames),
        arrays={k: shapes[k] for k in arr_keys},
        readout=spec,
        texts=txt_keys,
        text_values=texts,
        strings=rstr,
        fixed=fixed,
        layer=token,
    )
    return header, [b32, b64]


def pack_arrays(
    arrays: dict, *, max_bytes: int, name: str | None = None
) -> tuple[dict[str, list[int]], bytes]:
    """A layer's arrays as ``({key: shape}, float32 bytes)``, keys sorted."""
    keys = sorted(arrays)
    parts = [_float32(arrays[k]) for k in keys]
    b32 = b"".join(a.astype(np.float32).tobytes() for a in parts)
    _check_size(len(b32), max_bytes, name, "a layer")
    return {k: list(a.shape) for k, a in zip(keys, parts)}, b32


def _check_size(size: int, max_bytes: int, name: str | None, what: str) -> None:
    if size > max_bytes:
        raise ValueError(
            f"a frame set of {name or 'this explorer'} is {size / 1e6:.1f} MB ({what}) > "
            f"max_bytes={max_bytes / 1e6:.1f} MB: use a coarser slider step, or list the "
            f"slider in slow="
        )
