"""The language attnlib speaks: every word it shows (explorer labels and readouts, figure titles,
axis labels and legends, printed tables) is a message of one gettext catalog, shipped with the
package (``attnlib/locale/zh_CN/LC_MESSAGES/attnlib.po``, compiled to ``.mo`` by ``make
translations``) and read with the standard library's :mod:`gettext`. Error messages stay English,
as torch's and numpy's do.

The language is chosen in one place: :func:`set_language` (``attnlib.set_language("zh_CN")``), or
the environment variable ``ATTNLIB_LANG`` for scripts; English by default. It changes what the next
figure, explorer or table says; nothing already drawn changes.

Three markers, as Babel's extractor knows them (``pybabel extract -k _ -k N_``):

- ``_("softmax weights")``: the message in the current language, now;
- ``_("largest weight on a hidden key: {w:.3f}", w=w)``: with named fields, formatted after the
  lookup (a translation moves the fields, never drops one: ``tools/i18n.py check``); a message
  without fields is not formatted, so its braces are literal;
- ``N_("key length |k|")``: marks a message and returns it unchanged, for a key that code reads
  (a readout entry, a menu value) whose shown name is looked up later with :func:`gettext`.

A static page shows the words of every language from frames computed once (``tools/site.py``):
:func:`recording` notes, for every message formatted inside it, how to say the same text in
another language (:meth:`Recording.translate`).
"""

from __future__ import annotations

import gettext as _gettext
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from attnlib.util import fonts

__all__ = [
    "LANGUAGES",
    "ENV",
    "LOCALE_DIR",
    "DOMAIN",
    "set_language",
    "get_language",
    "language",
    "gettext",
    "gettext_in",
    "_",
    "N_",
    "recording",
    "Recording",
    "on_language_change",
]

#: The languages attnlib speaks: code -> its own name for itself.
LANGUAGES = {"en": "English", "zh_CN": "简体中文"}
#: The environment variable a script sets to pick the language (read when attnlib is imported).
ENV = "ATTNLIB_LANG"
#: Where the compiled catalogs live: ``LOCALE_DIR/<lang>/LC_MESSAGES/attnlib.mo``.
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN = "attnlib"

_ALIASES = {
    "en": "en",
    "en_us": "en",
    "en-us": "en",
    "english": "en",
    "c": "en",
    "zh": "zh_CN",
    "zh_cn": "zh_CN",
    "zh-cn": "zh_CN",
    "zh-hans": "zh_CN",
    "zh_hans": "zh_CN",
}


def _normalise(lang: Any, name: str = "lang") -> str:
    if not isinstance(lang, str):
        raise TypeError(f"{name} must be a language code such as 'zh_CN' or 'en', got {lang!r}")
    code = _ALIASES.get(lang.strip().lower())
    if code is None:
        raise ValueError(
            f"{name}={lang!r} is not a language attnlib speaks; choose one of "
            f"{', '.join(repr(k) for k in LANGUAGES)}"
        )
    return code


@cache
def _catalog(lang: str) -> _gettext.NullTranslations:
    if lang == "en":
        return _gettext.NullTranslations()
    mo = LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"
    if not mo.exists():
        raise FileNotFoundError(
            f"no compiled catalog {mo}: run `make translations` (it compiles "
            f"attnlib/locale/{lang}/LC_MESSAGES/{DOMAIN}.po)"
        )
    with mo.open("rb") as f:
        return _gettext.GNUTranslations(f)


_state: dict[str, Any] = {"lang": "en", "recordings": []}
_listeners: list[Callable[[str], None]] = []


def get_language() -> str:
    """The language attnlib speaks now: ``"en"`` or ``"zh_CN"``."""
    return _state["lang"]


def set_language(lang: str) -> str:
    """Speak ``lang`` from now on (``"zh_CN"``, ``"zh"``, ``"en"``); returns the language before.

    The next figure, explorer and printed table use it; with a language whose script the default
    font lacks (Chinese), matplotlib gets attnlib's bundled font as a fallback
    (:mod:`attnlib.util.fonts`).
    """
    code = _normalise(lang)
    _catalog(code)  # a missing catalog fails here, not at the first label
    before = _state["lang"]
    _state["lang"] = code
    fonts.apply(code)
    for listener in list(_listeners):
        listener(code)
    return before


@contextmanager
def language(lang: str) -> Iterator[str]:
    """Speak ``lang`` inside the ``with`` block, then the language before it again."""
    before = set_language(lang)
    try:
        yield get_language()
    finally:
        set_language(before)


def on_language_change(listener: Callable[[str], None]) -> None:
    """Call ``listener(lang)`` now and after every :func:`set_language` (the font set-up)."""
    _listeners.append(listener)
    listener(get_language())


def gettext_in(lang: str, msgid: str) -> str:
    """``msgid`` in ``lang`` (itself when the catalog has no translation)."""
    if not msgid:  # gettext's "" is the catalog's header, never a message: an empty text stays
        return msgid
    return _catalog(_normalise(lang)).gettext(msgid)


def gettext(msgid: str) -> str:
    """``msgid`` in the current language: the shown name of an ``N_`` key."""
    return gettext_in(_state["lang"], msgid)


def _(msgid: str, /, **fields: Any) -> str:
    """The message ``msgid`` in the current language, its named ``fields`` formatted in."""
    text = _catalog(_state["lang"]).gettext(msgid)
    out = text.format(**fields) if fields else text
    for rec in _state["recordings"]:
        rec.note(out, msgid, fields)
    return out


def N_(msgid: str) -> str:
    """Mark ``msgid`` for the catalog and return it unchanged (a key code reads)."""
    return msgid


class Recording:
    """The messages formatted while it was open: each shown text -> ``(msgid, fields)``."""

    def __init__(self) -> None:
        self.made: dict[str, tuple[str, dict[str, Any]]] = {}

    def note(self, text: str, msgid: str, fields: dict[str, Any]) -> None:
        self.made.setdefault(text, (msgid, dict(fields)))

    def translate(self, text: str, lang: str) -> str:
        """``text`` (as shown in the language of the recording) said in ``lang``: a recorded
        message formatted again in ``lang``, else a catalog message (an ``N_`` key) looked up,
        else ``text`` unchanged (a number, a name, a symbol)."""
        made = self.made.get(text)
        if made is None:
            return gettext_in(lang, text)
        msgid, fields = made
        said = gettext_in(lang, msgid)
        return said.format(**fields) if fields else said


@contextmanager
def recording() -> Iterator[Recording]:
    """Note every message formatted inside the block (:class:`Recording`)."""
    rec = Recording()
    _state["recordings"].append(rec)
    try:
        yield rec
    finally:
        _state["recordings"].remove(rec)


def _from_environment() -> None:
    value = os.environ.get(ENV)
    if value:
        set_language(_normalise(value, ENV))


_from_environment()
