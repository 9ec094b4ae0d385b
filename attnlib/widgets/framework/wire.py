"""The wire format between an :class:`~attnlib.widgets.framework.explorer.Explorer` (the kernel)
and its front end ``explorer.js``: the ONE definition of every trait and message.

``explorer.js`` parses what is written here in one place (its ``parseMessage`` and the traits
read at the top of ``render``); a static page that plays stored frame sets speaks the same format.

**View traits** (synced once, when the widget is made; :func:`view_traits`):

=========  =====================================================================================
trait      meaning
=========  =====================================================================================
scene      the static picture, ``Scene.to_json()``: ``width, height, panels, luts, bad, hatch``; a
           dynamic artist field is ``{"key": name}`` (an array of a frame, or of a layer)
fast       per fast slider ``i``: ``{"group": g, "values": [...]}``, ``values`` the slider's
           steps *as the linked trait shows them* (a SelectionSlider's index)
groups     per group ``g``: the fast indices ``i`` it holds (a grid group holds several)
meta       ``{"builder", "args", "columns", "digits", "max_layers"}``: the ``BUILDERS`` name and
           its JSON-able arguments (the browser test rebuilds ``BUILDERS[builder](**args)``), the
           readout's column headers and decimals, and :data:`MAX_LAYERS` (the front end reads
           the wire's constants from here, never restates them)
words      the screen reader's words in the current language (:func:`words`): ``name`` (a
           sentence with ``{name}`` and ``{panels}``, which the front end fills), ``described``,
           ``label`` (``{name}. {described}``), ``list`` (the panels' separator) and ``title``
           (the explorer's shown name); the front end falls back to its English
v0..v5     fast slider ``i``'s linked value (``jsdlink`` from the slider, so a drag needs no
           kernel); :data:`MAX_FAST` of them
=========  =====================================================================================

**Messages** (``model.send(content, buffers)``; ``type`` says which):

=========  ==========  ===========================================================================
type       direction   content
=========  ==========  ===========================================================================
ready      JS -> py    ``{"type": "ready"}`` once the front end listens; the kernel then sends
                       ``layer`` (if any), ``now`` and every ``set``
layer      py -> JS    the arrays that depend only on slow controls, once per slow value:
                       ``token`` (the layer's id), ``arrays`` (key -> shape), ``fixed`` (the
                       values it was made at); buffers ``[float32 arrays]``, keys sorted; the
                       front end keeps the last :data:`MAX_LAYERS` received
now        py -> JS    one frame at the kernel's current values (shown until a fresh set is
                       held) + ``want`` ``{group: token}``: the token of each group's current set
set        py -> JS    every frame of one group's grid at the other controls' values
=========  ==========  ===========================================================================

A ``now`` or ``set`` message carries the *frame header* (:func:`frames_header`):

============  ================================================================================
field         meaning
============  ================================================================================
n             frames in the buffers (``now``: 1)
arrays        ``{key: shape}`` of every per-frame array, packed in sorted key order, frame after
              frame, in buffer 0 (float32)
readout       ``[{"label", "kind": "f"|"i"|"b"|"s", "shape"}]``: the readout's layout; the
              non-string entries of each frame, in order, in buffer 1 (float64)
texts         sorted keys of the ``Text(key=...)`` strings
text_values   ``text_values[frame][j]``: the value of ``texts[j]`` (``[]`` when there are no keys)
strings       ``strings[frame]``: the string readout entries, in order (``[]`` when none)
fixed         ``{control: value}`` for the controls a frame does not vary (``now``: every control)
layer         the ``token`` of the layer whose arrays complete each frame, or ``null``
group         the group index (``now``: -1)
token         the set's id (``now``: 0); a set is fresh when its token is ``want[group]``
shape         grid size per slider of the group (``now``: ``[1]``); frame index = row-major
names         ``set`` only: the group's control names
axes          ``set`` only: per name, the values ``compute`` got (frame ``values`` in the browser)
fixed_fast    ``set`` only: ``[[i, k]]``: fast slider ``i`` of another group stood at its step
              ``k``; the set is stale once it moves
want          ``now`` only: see above
============  ================================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnlib.util.i18n import _, gettext

__all__ = [
    "MAX_FAST",
    "MAX_LAYERS",
    "READY",
    "view_traits",
    "words",
    "frames_header",
    "now_message",
    "set_message",
    "layer_message",
    "is_ready",
]

MAX_FAST = 6  # fast sliders per explorer: the front end's traits v0..v5
MAX_LAYERS = 16  # layers the front end keeps (oldest received dropped); the kernel mirrors it
READY = "ready"


def view_traits(
    scene: dict,
    fast: Sequence[tuple[int, list]],
    groups: Sequence[Sequence[int]],
    *,
    builder: str | None,
    args: Mapping[str, Any],
    columns: Sequence[str] | None,
    digits: int,
) -> dict[str, Any]:
    """The synced traits ``scene, fast, groups, meta, words`` (``fast``: ``(group, values)``
    each)."""
    return {
        "scene": scene,
        "fast": [{"group": g, "values": list(values)} for g, values in fast],
        "groups": [list(g) for g in groups],
        "meta": meta(builder, args, columns, digits),
        "words": words(builder),
    }


def words(builder: str | None) -> dict[str, str]:
    """The ``words`` trait: what a screen reader hears, in the current language. ``title`` is the
    explorer's shown name: the builder's name is its English (a catalog message of its module)."""
    return {
        "name": _("{name} explorer: {panels}"),
        "described": _("The numbers are in the table beside the picture."),
        # the canvas's name: the sentence above, then the one before; the panels' titles joined
        "label": _("{name}. {described}"),
        "list": _(", "),
        "title": gettext(builder) if builder else "",
    }


def meta(builder, args, columns, digits) -> dict[str, Any]:
    """The ``meta`` trait."""
    return {
        "builder": builder,
        "args": dict(args),
        "columns": list(columns) if columns is not None else None,
        "digits": digits,
        "max_layers": MAX_LAYERS,  # the front end reads every wire constant from here
    }


def frames_header(
    *,
    n: int,
    arrays: Mapping[str, list[int]],
    readout: list[dict],
    texts: Sequence[str],
    text_values: list[list[str]],
    strings: list[list[str]],
    fixed: Mapping[str, Any],
    layer: int | None = None,
) -> dict[str, Any]:
    """The frame header shared by ``now`` and ``set`` (see the table above)."""
    return {
        "n": n,
        "arrays": dict(arrays),
        "readout": readout,
        "texts": list(texts),
        "text_values": text_values if texts else [],
        "strings": strings if any(strings) else [],
        "fixed": dict(fixed),
        "layer": layer,
    }


def now_message(header: Mapping[str, Any], want: Mapping[int, int]) -> dict[str, Any]:
    """A ``now`` message: one frame (``header`` from :func:`frames_header`) and ``want``."""
    return {**header, "type": "now", "want": dict(want), "group": -1, "token": 0, "shape": [1]}


def set_message(
    header: Mapping[str, Any],
    *,
    group: int,
    token: int,
    shape: Sequence[int],
    names: Sequence[str],
    axes: Sequence[Sequence[Any]],
    fixed_fast: Sequence[tuple[int, int]],
) -> dict[str, Any]:
    """A ``set`` message: every frame of ``group``'s grid."""
    return {
        **header,
        "type": "set",
        "group": group,
        "token": token,
        "shape": list(shape),
        "names": list(names),
        "axes": [list(a) for a in axes],
        "fixed_fast": [[int(i), int(k)] for i, k in fixed_fast],
    }


def layer_message(
    token: int, arrays: Mapping[str, list[int]], fixed: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``layer`` message: the slow-only arrays (buffer: float32, keys sorted)."""
    return {"type": "layer", "token": token, "arrays": dict(arrays), "fixed": dict(fixed)}


def is_ready(content: Any) -> bool:
    """Whether a message from the front end is ``ready``."""
    return isinstance(content, dict) and content.get("type") == READY
