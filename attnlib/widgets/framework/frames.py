"""Frame sets: the binary encoding of an explorer's frames for the front end (``explorer.js``).

:func:`slider_axis` lists every step of a fast slider; :func:`check_frame` and
:func:`readout_spec` check the first frame against the scene and fix the readout's layout;
:func:`pack_frames` packs frames into ``(header, [float32 arrays, float64 readout numbers])``.
"""

from __future__ import annotations

import numpy as np

from attnlib.widgets.framework.readout import _kind, _py
from attnlib.widgets.framework.scene import Frame, Scene

__all__ = ["slider_axis", "check_frame", "readout_spec", "pack_frames"]


def slider_axis(c) -> tuple[str, list, list]:
    """``(linked attribute, values compute gets, values the front end sees)`` for every step of a
    slider.
    """
    name = type(c).__name__
    if name in ("SelectionSlider",):
        opts = [o[1] if isinstance(o, tuple) else o for o in c.options]
        return "index", opts, list(range(len(opts)))
    if name in ("IntSlider",):
        ints = list(range(int(c.min), int(c.max) + 1, int(c.step)))
        return "value", ints, ints
    if name in ("FloatSlider", "FloatLogSlider"):
        n = int(round((c.max - c.min) / c.step)) + 1
        exps: list[float] = [round(c.min + i * c.step, 10) for i in range(n)]
        vals = [float(c.base**e) for e in exps] if name == "FloatLogSlider" else exps
        return "value", vals, vals
    raise TypeError(
        "a fast control must be an ipywidgets slider (Float/Int/FloatLog/SelectionSlider), "
        f"got {name}"
    )


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


def readout_spec(f: Frame) -> list[dict]:
    """Label, kind and shape of every readout entry of ``f`` (fixed for all frames)."""
    spec = []
    for label, v in f.readout.items():
        v = _py(v)
        kind = _kind(v)
        shape = [] if kind == "s" else list(np.shape(v))
        spec.append({"label": str(label), "kind": kind, "shape": shape})
    return spec


def _float32(x) -> np.ndarray:
    """An array field as float32, without a detour through Python lists (a tensor of any device
    and dtype, an array or nested lists; the same values as ``np.asarray(_py(x), np.float32)``).
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
) -> tuple[dict, list[bytes]]:
    """Encode ``frames`` as sent to the front end: ``(header, [float32 arrays, float64 readout])``.

    Raises ``ValueError`` when a frame's array shapes differ from the first frame's, or when the
    set exceeds ``max_bytes``.
    """
    keys = scene.keys()
    arr_keys = sorted(k for k, (_, f) in keys.items() if f != "text")
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
        nums, strs = [], []
        for s in spec:
            v = _py(fr.readout.get(s["label"]))
            if s["kind"] == "s":
                strs.append(str(v))
            else:
                nums.append(np.asarray(v, dtype=np.float64).reshape(-1))
        f64.append(np.concatenate(nums) if nums else np.zeros(0))
        rstr.append(strs)
        texts.append([str(fr.texts.get(k, "")) for k in txt_keys])
    b32 = np.concatenate(f32).astype(np.float32).tobytes() if f32 else b""
    b64 = np.concatenate(f64).astype(np.float64).tobytes()
    if len(b32) + len(b64) > max_bytes:
        raise ValueError(
            f"a frame set of {name or 'this explorer'} is "
            f"{(len(b32) + len(b64)) / 1e6:.1f} MB "
            f"({len(frames)} frames) > max_bytes={max_bytes / 1e6:.1f} MB: use a coarser "
            f"slider step, or list the slider in slow="
        )
    header = {
        "n": len(frames),
        "arrays": {k: shapes[k] for k in arr_keys},
        "readout": spec,
        "texts": txt_keys,
        "text_values": texts if txt_keys else [],
        "strings": rstr if any(rstr) else [],
        "fixed": fixed,
    }
    return header, [b32, b64]
