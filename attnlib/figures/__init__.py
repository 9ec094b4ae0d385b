"""Each notebook's key picture, drawn from attnlib's plotting functions and saved deterministically.

``python -m attnlib.figures [--lang LANG] [--out DIR] [NAME ...]`` (default: every figure, into
``figures/``, in the current language: ``ATTNLIB_LANG`` or English) writes the registered figures to
``DIR/NAME.png`` (and ``NAME.svg`` where registered); ``--lang zh_CN --out figures/zh`` writes the
Chinese ones. A figure
module registers a function that takes no arguments and returns a ``matplotlib.figure.Figure``
(made with ``Figure(...)``, not pyplot)::

    from attnlib.figures import register_figure

    @register_figure("query_output_hull", formats=("png", "svg"))
    def query_output_hull_figure():
        ...
        return fig

and gets one import line at the bottom of this file. ``tests/test_figures.py`` regenerates every
figure in ``PIXEL_TESTED`` and compares it with the committed PNG. A figure whose pixels depend on
the machine (e.g. one drawn from a model trained where it runs) opts out explicitly with
``register_figure(..., pixel_test=False)`` and is checked by its numbers in its own test instead.
"""

from __future__ import annotations

from attnlib.util._extras import require_extra

require_extra("widgets", what="attnlib.figures")

import os
from collections.abc import Callable, Iterable

from attnlib.util.fonts import FONT_FAMILY, uses_cjk_font
from attnlib.util.i18n import get_language

__all__ = [
    "FIGURES",
    "FORMATS",
    "PIXEL_TESTED",
    "register_figure",
    "save_figure",
    "write_figures",
    "RC",
    "DPI",
]

#: name -> function returning a Figure.
FIGURES: dict[str, Callable] = {}
#: name -> file formats written for it.
FORMATS: dict[str, tuple[str, ...]] = {}
#: names whose fresh PNG must match the committed one pixel for pixel (within a small RMS).
PIXEL_TESTED: set[str] = set()

DPI = 100
#: Settings in effect while a figure is drawn and saved (never set globally).
RC: dict = {  # matplotlib's rcParams keys
    "svg.hashsalt": "attnlib",  # fixed ids in the SVG instead of random ones
    "svg.fonttype": "path",
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.family": ["DejaVu Sans"],
    "axes.unicode_minus": True,
}
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


def _rc() -> dict:
    """:data:`RC` for the current language: with Chinese, the bundled CJK font follows DejaVu Sans
    as the fallback family (:mod:`attnlib.util.fonts`); Latin text and math stay as in English."""
    if not uses_cjk_font(get_language()):
        return RC
    return {**RC, "font.family": [*RC["font.family"], FONT_FAMILY]}


def register_figure(name: str, formats: Iterable[str] = ("png",), *, pixel_test: bool = True):
    """Decorator: register a function returning a ``Figure`` as ``figures/NAME.{formats}``.

    Args:
        name: the file name stem.
        formats: ``("png",)`` or ``("png", "svg")``.
        pixel_test: compare the fresh PNG with the committed one in the tests (default). Pass
            False only for a figure that is not the same on every machine, and say in a comment
            where its content is checked instead.
    """
    if not isinstance(pixel_test, bool):
        raise TypeError(f"pixel_test must be a bool, got {type(pixel_test).__name__}")
    formats = tuple(formats)
    if "png" not in formats or not set(formats) <= {"png", "svg"}:
        raise ValueError(f"formats must include 'png' and may add 'svg', got {formats}")

    def decorate(fn):
        if name in FIGURES:
            raise ValueError(f"a figure named {name!r} is already registered")
        FIGURES[name] = fn
        FORMATS[name] = formats
        if pixel_test:
            PIXEL_TESTED.add(name)
        return fn

    return decorate


def save_figure(fig, path: str, fmt: str) -> None:
    """Save ``fig`` to ``path`` as ``fmt`` ("png" or "svg") with no dates or
    versions in the file.
    """
    import matplotlib

    with matplotlib.rc_context(_rc()):
        fig.savefig(path, format=fmt, dpi=DPI, metadata=_METADATA[fmt])


def write_figures(outdir: str = "figures", names: Iterable[str] | None = None) -> list[str]:
    """Draw the figures ``names`` (default: all) in the current language
    (:func:`attnlib.set_language`) and write them under ``outdir``; return the paths.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    names = list(FIGURES) if names is None else list(names)
    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        raise KeyError(f"unknown figure(s) {unknown}; registered: {sorted(FIGURES)}")
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for name in sorted(names):
        with matplotlib.rc_context(_rc()):
            fig = FIGURES[name]()
            if fig.canvas is None or type(fig.canvas).__name__ == "FigureCanvasBase":
                FigureCanvasAgg(fig)
            for fmt in FORMATS[name]:
                path = os.path.join(outdir, f"{name}.{fmt}")
                save_figure(fig, path, fmt)
                paths.append(path)
    return paths


# One import line per figure module (authors: add yours below).
from attnlib.figures import (  # noqa: E402  (the modules register themselves with the above)
    bilinear,  # noqa: E402,F401
    decoding,  # noqa: E402,F401
    heads,  # noqa: E402,F401
    induction,  # noqa: E402,F401
    jacobian,  # noqa: E402,F401
    masking,  # noqa: E402,F401
    pooling,  # noqa: E402,F401
    positions,  # noqa: E402,F401
    query,  # noqa: E402,F401
    scaling,  # noqa: E402,F401
    sequence_costs,  # noqa: E402,F401
    worked,  # noqa: E402,F401
)
