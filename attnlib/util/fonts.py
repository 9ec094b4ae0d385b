"""Chinese glyphs on every machine: matplotlib's default font (DejaVu Sans) has no CJK glyphs, so a
Chinese figure would show empty boxes where most servers and CI runners have no CJK font. attnlib
ships a subset of Noto Sans CJK SC (SIL Open Font License 1.1, ``attnlib/locale/fonts/OFL.txt``),
cut by ``tools/fonts.py`` to the characters its catalogs use. While the language is Chinese it is
matplotlib's fallback font: Latin text and math keep the current font (each glyph is taken from
the first family of ``font.family`` that has it), and the CJK characters come from the subset.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FONT_PATH", "FONT_FAMILY", "CANVAS_FONTS", "uses_cjk_font", "apply"]

#: The bundled subset and the family name it carries.
FONT_PATH = Path(__file__).resolve().parent.parent / "locale" / "fonts" / "NotoSansSC-attnlib.otf"
FONT_FAMILY = "Noto Sans SC attnlib"
#: What an explorer's canvas names for its text, per language: a CJK font stack every system has.
CANVAS_FONTS = {
    "en": "sans-serif",
    "zh_CN": '"Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", "Source Han Sans SC", '
    '"Noto Sans SC", sans-serif',
}

_saved: dict[str, object] = {}


def uses_cjk_font(lang: str) -> bool:
    return lang.startswith("zh")


def apply(lang: str) -> None:
    """Make matplotlib draw ``lang``: the bundled font as the fallback family for Chinese, the
    families as they were for English. Without matplotlib (the core install) there is nothing to
    do. Called by :func:`attnlib.set_language`."""
    try:
        import matplotlib as mpl
        from matplotlib import font_manager
    except ImportError:
        return

    if uses_cjk_font(lang):
        if not Path(FONT_PATH).exists():
            raise FileNotFoundError(
                f"no bundled CJK font {FONT_PATH}: run `make translations` (it cuts it from "
                "Noto Sans CJK; install that with `apt-get install fonts-noto-cjk`)"
            )
        if FONT_FAMILY not in {f.name for f in font_manager.fontManager.ttflist}:
            font_manager.fontManager.addfont(str(FONT_PATH))
        if "font.family" not in _saved:
            _saved["font.family"] = list(mpl.rcParams["font.family"])
        first = [f for f in _saved["font.family"] if f != FONT_FAMILY]  # type: ignore[attr-defined]
        mpl.rcParams["font.family"] = [*first, FONT_FAMILY]
    elif "font.family" in _saved:
        mpl.rcParams["font.family"] = _saved.pop("font.family")
