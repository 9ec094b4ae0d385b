"""``python -m attnlib.figures [outdir] [name ...]``: write the key pictures
(default ``figures/``).
"""

import sys

from attnlib.figures import FIGURES, write_figures


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("figures:", ", ".join(sorted(FIGURES)))
        return 0
    outdir = argv[0] if argv else "figures"
    for path in write_figures(outdir, argv[1:] or None):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
