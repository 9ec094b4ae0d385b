"""Cut attnlib's bundled CJK font: Noto Sans CJK SC Regular (``fonts-noto-cjk``), subset with
fontTools to the characters of every Chinese catalog (attnlib's own and the notebooks'), renamed
"Noto Sans SC attnlib" (the OFL asks a Modified Version not to pass for the original).

    python -m tools.fonts check   # exit 1 and name the characters the bundled font lacks
    python -m tools.fonts cut     # recut it (needs the full Noto Sans CJK installed)

``make translations`` runs ``cut`` only when ``check`` finds a missing character, so the committed
font changes only when a catalog gains one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attnlib.util.fonts import FONT_FAMILY, FONT_PATH  # noqa: E402

#: Where Debian/Ubuntu's fonts-noto-cjk puts the full font (a collection: JP, KR, SC, TC, HK...).
SOURCES = (
    Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
    Path("/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc"),
    Path("/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc"),
)
SOURCE_FAMILY = "Noto Sans CJK SC"
CATALOGS = (ROOT / "attnlib" / "locale", ROOT / "locale")
#: Always in the font, whatever the catalogs hold: the full-width punctuation a sentence may take.
ALWAYS = "，。、；：？！（）《》“”‘’…—·【】「」"


def catalog_files() -> list[Path]:
    return sorted(p for base in CATALOGS for p in base.glob("zh_CN/LC_MESSAGES/*.po"))


def needed_characters(paths: list[Path] | None = None) -> set[str]:
    """Every non-ASCII character of every translation (the ASCII ones DejaVu Sans draws)."""
    chars = set(ALWAYS)
    for path in paths or catalog_files():
        for entry in polib.pofile(str(path)):
            text = entry.msgstr + "".join(entry.msgstr_plural.values())
            chars |= {c for c in text if ord(c) > 127 and not c.isspace()}
    return chars


def font_characters(path: Path = FONT_PATH) -> set[str]:
    from fontTools.ttLib import TTFont

    return {chr(c) for c in TTFont(str(path)).getBestCmap()}


def _source_font():
    from fontTools.ttLib import TTCollection

    for path in SOURCES:
        if path.exists():
            for font in TTCollection(str(path)).fonts:
                if font["name"].getDebugName(1) == SOURCE_FAMILY:
                    return font
    raise SystemExit(
        f"no {SOURCE_FAMILY} in {', '.join(map(str, SOURCES))}: install the full Noto Sans CJK "
        "(Debian/Ubuntu: `apt-get install fonts-noto-cjk`), then run `make translations` again"
    )


def cut(out: Path = FONT_PATH, chars: set[str] | None = None) -> int:
    """Write the subset to ``out``; return how many characters it holds."""
    from fontTools import subset

    font = _source_font()
    chars = needed_characters() if chars is None else chars
    cmap = font.getBestCmap()
    missing = sorted(c for c in chars - latin_characters() if ord(c) not in cmap)
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    sub = subset.Subsetter(options)
    sub.populate(unicodes=sorted(ord(c) for c in chars if ord(c) in cmap))
    sub.subset(font)
    names = font["name"]
    for record in names.names:
        text = record.toUnicode()
        if record.nameID in (1, 4, 16):
            record.string = FONT_FAMILY
        elif record.nameID == 6:
            record.string = FONT_FAMILY.replace(" ", "") + "-Regular"
        elif record.nameID == 3:
            record.string = f"{text};attnlib-subset"
    font.recalcTimestamp = False  # the same catalogs give the same bytes
    out.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(out))
    if missing:
        print(f"not in {SOURCE_FAMILY}: {''.join(missing)}", file=sys.stderr)
    return len(font_characters(out))


def latin_characters() -> set[str]:
    """What matplotlib's own DejaVu Sans draws (the first family: Latin text stays in it)."""
    from matplotlib import font_manager

    return font_characters(Path(font_manager.findfont("DejaVu Sans")))


def missing_characters() -> set[str]:
    """The catalogs' characters that neither DejaVu Sans nor the bundled font has."""
    have = font_characters() if FONT_PATH.exists() else set()
    return needed_characters() - have - latin_characters()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.fonts", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=["check", "cut", "update"])
    args = parser.parse_args(argv)
    missing = missing_characters()
    if args.command == "check":
        if missing:
            print(
                f"{FONT_PATH.relative_to(ROOT)} lacks {len(missing)} character(s) of the catalogs: "
                f"{''.join(sorted(missing))[:80]}; run `make translations`"
            )
            return 1
        print(f"{FONT_PATH.relative_to(ROOT)} has every character of the catalogs")
        return 0
    if args.command == "update" and not missing:
        return 0
    n = cut()
    print(f"wrote {FONT_PATH.relative_to(ROOT)}: {n} characters, {FONT_PATH.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
