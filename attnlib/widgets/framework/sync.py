"""The kernel side of an explorer's front end: frame sets and layers, computed, cached (LRU) and
sent in the messages of :mod:`attnlib.widgets.framework.wire`.

:class:`FrameSync` is the part of :class:`~attnlib.widgets.framework.explorer.Explorer` that
answers ``ready`` and control changes: the layer the front end lacks, the frame at the current
values (``now``), then every group's current set it lacks (``set``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from attnlib.widgets.framework import wire
from attnlib.widgets.framework.frames import pack_arrays, pack_frames
from attnlib.widgets.framework.readout import to_py
from attnlib.widgets.framework.scene import Frame, Scene

__all__ = ["FrameSync"]

_TOKENS = itertools.count(1)


class FrameSync:
    """Frame sets, layers and their messages (mixed into ``Explorer``, which sets the state)."""

    controls: dict[str, Any]
    groups: list[tuple[str, ...]]
    fast: list[str]
    scene: Scene
    name: str | None
    max_bytes: int
    _axes: dict[str, Any]
    _compute: Callable[..., Frame]
    _cache_size: int
    _spec: list[dict]
    _layer: Callable[..., Mapping[str, Any]] | None
    _layer_args: list[str]
    _layer_keys: frozenset[str]
    _layers: OrderedDict
    _sets: OrderedDict

    def values(self) -> dict[str, Any]:  # the Explorer's
        raise NotImplementedError

    # -- the layer and the frame sets (cached, LRU)
    def _layer_at(self, values: Mapping[str, Any]):
        """``(token, arrays, shapes, float32 bytes)`` of the layer at ``values`` (or empty)."""
        if self._layer is None:
            return None, {}, {}, b""
        at = {k: values[k] for k in self._layer_args}
        key = json.dumps(at, sort_keys=True, default=str)
        if key not in self._layers:
            arrays = dict(self._layer(**at))
            shapes, b32 = pack_arrays(arrays, max_bytes=self.max_bytes, name=self.name)
            self._layers[key] = (next(_TOKENS), arrays, shapes, b32)
            while len(self._layers) > self._cache_size:
                self._layers.popitem(last=False)
        self._layers.move_to_end(key)
        return self._layers[key]

    def _outside(self, gi: int) -> tuple:
        inside = set(self.groups[gi])
        return tuple(
            (k, json.dumps(v, sort_keys=True, default=str))
            for k, v in self.values().items()
            if k not in inside
        )

    def _set_for(self, gi: int, token: int | None = None):
        key = (gi, self._outside(gi))
        if key in self._sets:
            self._sets.move_to_end(key)
            return self._sets[key]
        names = self.groups[gi]
        axes = [self._axes[n].values for n in names]
        base = {k: c.value for k, c in self.controls.items()}
        frames = [
            self._compute(**{**base, **dict(zip(names, combo))})
            for combo in itertools.product(*axes)
        ]
        header, buffers = self._pack(
            frames, {k: to_py(v) for k, v in base.items() if k not in names}
        )
        token = next(_TOKENS) if token is None else token
        message = wire.set_message(
            header,
            group=gi,
            token=token,
            shape=[len(a) for a in axes],
            names=names,
            axes=[[to_py(v) for v in a] for a in axes],
            fixed_fast=[
                (i, self._axes[n].index(self.controls[n]))
                for i, n in enumerate(self.fast)
                if n not in names
            ],
        )
        self._sets[key] = (token, message, buffers)
        while len(self._sets) > self._cache_size:
            self._sets.popitem(last=False)
        return self._sets[key]

    def _pack(self, frames: list[Frame], fixed: dict) -> tuple[dict, list[bytes]]:
        token = self._layer_at(self.values())[0]
        return pack_frames(
            self.scene,
            self._spec,
            frames,
            fixed,
            max_bytes=self.max_bytes,
            name=self.name,
            layer=(token, self._layer_keys),
        )

    # -- the kernel side of the front end (the messages: attnlib.widgets.framework.wire)
    def _on_msg(self, _widget, content, _buffers):
        if wire.is_ready(content):
            self._ready = True
            self._sent.clear()
            self._sent_layers.clear()
            self._push()

    def _on_change(self, change):
        if self._hold:
            return
        name = next(k for k, c in self.controls.items() if c is change["owner"])
        if name not in self.fast:
            self._push()
        elif any(name not in g for g in self.groups):
            # the other groups' sets depend on this value: recompute after the drag
            self._debounce()
        # else: the browser plays this slider's frames; state() computes on demand

    def _debounce(self):
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._push()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(0.3, self._push)

    def _push(self):
        """Send the layer if the front end lacks it, the frame at the current values at once,
        then every frame set the front end lacks.
        """
        self._timer = None
        if not self._ready:
            return
        if self._layer is not None:
            message, buffers = self.layer()
            if message["token"] not in self._sent_layers:
                self.view.send(message, buffers)
                self._sent_layers[message["token"]] = True
                while len(self._sent_layers) > wire.MAX_LAYERS:
                    self._sent_layers.popitem(last=False)
        want = {}
        for gi in range(len(self.groups)):  # a token for each current set, computed or not yet
            hit = self._sets.get((gi, self._outside(gi)))
            want[gi] = hit[0] if hit is not None else next(_TOKENS)
        self._want = want
        header, buffers = self._pack([self._compute(**self.values())], self.values())
        self.view.send(wire.now_message(header, want), buffers)
        for gi, token in want.items():
            if self._sent.get(gi) != token:
                _, message, buffers = self._set_for(gi, token)
                self.view.send(message, buffers)
                self._sent[gi] = token
