"""``python -m attnlib.figures [--out DIR] [NAME ...]``: write the key pictures NAME (default:
all) into DIR (default ``figures/``). A name that is not a registered figure is an error, so a
folder given where a name goes is never filled with every figure."""

import argparse
import sys

from attnlib.figures import FIGURES, write_figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.figures",
        description="Write the key pictures.",
        epilog="figures: " + ", ".join(sorted(FIGURES)),
    )
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    parser.add_argument("names", nargs="*", metavar="NAME", help="figures to write (default: all)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(
            f"unknown figure name(s) {', '.join(unknown)} (the output folder is --out DIR); "
            f"figures: {', '.join(sorted(FIGURES))}"
        )
    for path in write_figures(args.out, args.names or None):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
