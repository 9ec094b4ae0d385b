"""An explorer's spec in another language, its frames computed once (``tools/site.py``).

A page's explorer is its spec (JSON: controls, traits, the frames' layout and text tables) and its
frames (the blob). Only words differ between languages: the frames are computed once, in English,
inside :func:`attnlib.util.i18n.recording`; then, per other language, :func:`translated_spec`
builds the same explorer again under ``attnlib.language(lang)`` (no frames: its controls, scene,
meta and one frame's readout) and takes from it everything that is words:

- the controls' labels and option labels (a checkbox's "off"/"on": the page's words);
- the traits: the scene JSON (titles, axis and tick labels, legends, static texts; its ``font``,
  the canvas font stack of the language, :data:`attnlib.util.fonts.CANVAS_FONTS`), the meta and
  the screen-reader sentences (``traits["words"]``) when the explorer has them;
- each readout entry's shown ``name`` (its ``label``, the key code reads, stays);
- the frame-time texts and string readouts (``texts_table``, ``strings_table``), re-said with
  :meth:`~attnlib.util.i18n.Recording.translate` from the English recording.

The other language's explorer must be the English one but for its words: the same controls (names,
kinds, values, starting index), the same traits but for strings (the same panels and artists, the
same numbers, the same array keys and kinds: :data:`FIXED`) and the same readout entries; anything
else is a :class:`ValueError` naming the explorer and where they differ (the site raises it as a
``SiteError``).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["FIXED", "translated_spec", "words_traits", "explorer_words"]

#: Strings of the traits that are structure, not words: they must be the same in every language
#: (an artist's kind, the frame key it draws, colours and colour maps, alignments, markers).
FIXED = frozenset(
    {"kind", "key", "builder", "cmap", "color", "edge", "ha", "va", "marker", "legend", "hatch"}
)


def explorer_words(ex) -> dict | None:
    """The explorer's screen-reader sentences (``traits["words"]``), if it or its view has them."""
    for owner in (getattr(ex, "view", None), ex):
        words = getattr(owner, "words", None)
        if isinstance(words, dict) and words:
            return dict(words)
    return None


def words_traits(ex, meta: dict) -> dict:
    """The traits of ``ex`` that hold its words: its scene JSON, its meta and its sentences."""
    traits: dict[str, Any] = {"scene": ex.scene.to_json(), "meta": meta}
    words = explorer_words(ex)
    if words is not None:
        traits["words"] = words
    return traits


def _same_but_words(en, other, where: str, parent: str = "") -> None:
    """Raise ``ValueError`` unless ``other`` is ``en`` but for strings outside :data:`FIXED`."""
    if isinstance(en, dict) and isinstance(other, dict):
        if set(en) != set(other):
            raise ValueError(f"{where}: keys {sorted(en)} != {sorted(other)}")
        for k in en:
            _same_but_words(en[k], other[k], f"{where}.{k}", k)
    elif isinstance(en, list) and isinstance(other, list):
        if len(en) != len(other):
            raise ValueError(f"{where}: {len(en)} items in English, {len(other)} in the other")
        for i, (a, b) in enumerate(zip(en, other)):
            _same_but_words(a, b, f"{where}[{i}]", parent)
    elif isinstance(en, str) and isinstance(other, str):
        if parent in FIXED and en != other:
            raise ValueError(f"{where}: {en!r} in English, {other!r} in the other")
    elif type(en) is not type(other) or en != other:
        raise ValueError(f"{where}: {en!r} in English, {other!r} in the other")


def _controls(name: str, en: list[dict], other: list[dict], checkbox: tuple[str, str]):
    same = ("name", "kind", "values", "index")
    if [[c[k] for k in same] for c in en] != [[c[k] for k in same] for c in other]:
        raise ValueError(
            f"{name}: its controls are {[c['name'] for c in en]} in English but "
            f"{[c['name'] for c in other]} (or other values) in the other language"
        )
    out = []
    for c, o in zip(en, other):
        labels = list(checkbox) if c["kind"] == "checkbox" else o["labels"]
        if len(labels) != len(c["labels"]):
            raise ValueError(f"{name}: control {c['name']!r} has another number of labels")
        out.append({**c, "label": o["label"], "labels": labels})
    return out


def _readout(name: str, en: list[dict], other: list[dict]) -> list[dict]:
    same = ("label", "kind", "shape")
    if [[s[k] for k in same] for s in en] != [[s[k] for k in same] for s in other]:
        raise ValueError(
            f"{name}: its readout entries are {[s['label'] for s in en]} in English but "
            f"{[s['label'] for s in other]} in the other language"
        )
    return [{**s, "name": o["name"]} for s, o in zip(en, other)]


def _resaid(rec, text: str, lang: str) -> str:
    # "" is no message: gettext would answer it with the catalog's header
    return rec.translate(text, lang) if text else text


def translated_spec(spec: dict, rec, lang: str, checkbox: tuple[str, str]) -> dict:
    """``spec`` (English, its frames computed inside the recording ``rec``) with the words of
    ``lang`` (an attnlib language code); ``checkbox``: the page's words for a checkbox's states.
    Raises ``ValueError`` naming the explorer when the explorer of ``lang`` is not the English
    one but for its words (module doc)."""
    from attnlib.util.fonts import CANVAS_FONTS
    from attnlib.util.i18n import get_language, language
    from attnlib.widgets import BUILDERS
    from attnlib.widgets.framework.frames import readout_spec
    from tools.site_state import _view_meta, discover_controls

    name = spec["builder"]
    with language(lang):
        code = get_language()
        ex = BUILDERS[name](**spec["args"])
        controls, _ = discover_controls(ex)
        traits = words_traits(ex, _view_meta(ex))
        readout = readout_spec(ex.frame())
    out = copy.deepcopy(spec)
    where = f"{name} in {code}"
    out["controls"] = _controls(where, spec["controls"], controls, checkbox)
    en_traits = {k: spec["traits"][k] for k in traits if k in spec["traits"]}
    _same_but_words(en_traits, traits, f"{where}: traits")
    out["traits"].update(traits)
    # the language's canvas font stack (explorer.js draws every text with scene.font)
    out["traits"]["scene"]["font"] = CANVAS_FONTS[code]
    out["template"]["readout"] = _readout(where, spec["template"]["readout"], readout)
    for table in ("texts_table", "strings_table"):
        out[table] = [[_resaid(rec, s, code) for s in row] for row in spec[table]]
    return out
