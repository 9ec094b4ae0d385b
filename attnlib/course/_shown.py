"""A name that is both a key and a shown word: code compares and looks it up by its English (as
it always did), and printing it says it in the current language."""

from __future__ import annotations

import unicodedata

from attnlib.util.i18n import gettext

__all__ = ["ShownKey"]


class ShownKey(str):
    """A ``str`` equal to (and hashing as) its English key, ``"self-attention"``, whose ``str()``
    and ``format()`` give its name in the current language (``gettext``): a table's rows keep the
    keys that code reads (``row.layer == "self-attention"``), and a notebook that prints them
    (``f"{row.layer:15s}"``) shows the reader's language. ``repr`` stays the key, as code.

    A width in the format spec counts screen columns: a CJK character takes two, so it gets one
    padding space less and the printed columns stay aligned."""

    __slots__ = ()

    def __str__(self) -> str:
        return gettext(str.__str__(self))

    def __format__(self, spec: str) -> str:
        name = str(self)
        text = format(name, spec)
        wide = sum(1 for ch in name if unicodedata.east_asian_width(ch) in "WF")
        cut = min(wide, len(text) - len(name))  # padding spaces the wide characters use up
        if cut > 0 and text.endswith(" " * cut):
            return text[:-cut]
        if cut > 0 and text.startswith(" " * cut):
            return text[cut:]
        return text
