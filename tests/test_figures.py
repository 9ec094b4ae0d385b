"""figures/: every key picture is regenerated from attnlib and matches the committed file.

Figures in ``PIXEL_TESTED`` are compared pixel by pixel; the others opted out explicitly with
``register_figure(..., pixel_test=False)`` and are checked by their content elsewhere (listed in
``CHECKED_BY_CONTENT`` below, with the test that does it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from matplotlib.testing.compare import compare_images

from attnlib.figures import FIGURES, FORMATS, PIXEL_TESTED, register_figure, write_figures

FIGURES_DIR = Path(__file__).resolve().parents[1] / "figures"
TOLERANCE = 2.0  # RMS over 0-255 pixel values: font/antialiasing noise, not a changed picture
#: figures not compared by pixels -> the test that checks what they show.
CHECKED_BY_CONTENT = {
    "decoding_cross_attention": (
        "tests/test_figures_decoding.py::test_c40_figure_is_untrained_then_anti_diagonal"
    ),
}


def _committed(ext: str) -> set[str]:
    return {p.stem for p in FIGURES_DIR.glob(f"*.{ext}")}


def test_every_committed_figure_has_a_generator_and_vice_versa():
    assert _committed("png") == set(FIGURES), (
        "figures/*.png and attnlib.figures.FIGURES differ; run `make figures`"
    )
    assert _committed("svg") == {n for n, f in FORMATS.items() if "svg" in f}


def test_every_figure_is_pixel_tested_unless_it_opted_out():
    """A new figure is pixel-tested by default; opting out must be explicit and listed here."""
    assert PIXEL_TESTED <= set(FIGURES)
    assert set(FIGURES) - PIXEL_TESTED == set(CHECKED_BY_CONTENT)


def test_register_figure_records_the_opt_out():
    """Two throw-away figures, one with the default and one opted out, then unregistered."""

    def draw():
        raise AssertionError("never drawn")

    names = ("_probe_default", "_probe_opted_out")
    try:
        register_figure(names[0], formats=("png", "svg"))(draw)
        register_figure(names[1], pixel_test=False)(draw)
        assert FIGURES[names[0]] is draw and FIGURES[names[1]] is draw
        assert FORMATS[names[0]] == ("png", "svg") and FORMATS[names[1]] == ("png",)
        assert names[0] in PIXEL_TESTED and names[1] not in PIXEL_TESTED
        with pytest.raises(ValueError, match="already registered"):
            register_figure(names[1])(draw)
        assert names[1] not in PIXEL_TESTED  # the refused duplicate changed nothing
    finally:
        for name in names:
            FIGURES.pop(name, None)
            FORMATS.pop(name, None)
            PIXEL_TESTED.discard(name)
    with pytest.raises(TypeError, match="pixel_test must be a bool"):
        register_figure("never_registered", pixel_test="no")
    assert "never_registered" not in FIGURES


@pytest.mark.parametrize("name", sorted(PIXEL_TESTED))
def test_figure_matches_the_committed_png(name, tmp_path):
    committed = FIGURES_DIR / f"{name}.png"
    if not committed.exists():
        pytest.fail(f"{committed} is missing; run `python -m attnlib.figures --out figures`")
    paths = write_figures(str(tmp_path), [name])
    fresh = tmp_path / f"{name}.png"
    assert str(fresh) in paths
    result = compare_images(str(committed), str(fresh), tol=TOLERANCE)
    assert result is None, result


def test_figures_are_byte_for_byte_deterministic(tmp_path):
    name = "query_output_hull"
    a, b = tmp_path / "a", tmp_path / "b"
    write_figures(str(a), [name])
    write_figures(str(b), [name])
    for ext in FORMATS[name]:
        assert (a / f"{name}.{ext}").read_bytes() == (b / f"{name}.{ext}").read_bytes()
    svg = (a / f"{name}.svg").read_text()
    assert "<dc:date>" not in svg


def test_main_writes_into_the_given_folder(tmp_path):
    from attnlib.figures.__main__ import main

    assert main(["--out", str(tmp_path), "query_output_hull"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["query_output_hull.png", "query_output_hull.svg"]
