"""``python -m attnlib.figures [--lang LANG] [--out DIR] [NAME ...]``: write the key pictures NAME
(default: all) into DIR (default ``figures/``) in LANG (default: the current language, i.e.
``ATTNLIB_LANG`` or English; ``--lang zh_CN --out figures/zh`` writes the Chinese pictures). A name
that is not a registered figure is an error, so a folder given where a name goes is never filled
with every figure."""

import argparse
import sys

from attnlib.figures import FIGURES, write_figures
from attnlib.util.i18n import LANGUAGES, get_language, set_language


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.figures",
        description="Write the key pictures.",
        epilog="figures: " + ", ".join(sorted(FIGURES)),
    )
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    parser.add_argument(
        "--lang",
        default=get_language(),
        help=f"language of the words drawn: {', '.join(LANGUAGES)} "
        f"(default: ATTNLIB_LANG or en, now {get_language()})",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="figures to write (default: all)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(
            f"unknown figure name(s) {', '.join(unknown)} (the output folder is --out DIR); "
            f"figures: {', '.join(sorted(FIGURES))}"
        )
    try:
        before = set_language(args.lang)
    except ValueError as e:
        parser.error(f"--lang: {e}")
    try:
        paths = write_figures(args.out, args.names or None)
    finally:
        set_language(before)
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
