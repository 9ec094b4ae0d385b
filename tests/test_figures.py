"""figures/: every key picture is regenerated from attnlib and matches the committed file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from matplotlib.testing.compare import compare_images

from attnlib.figures import FIGURES, FORMATS, write_figures

FIGURES_DIR = Path(__file__).resolve().parents[1] / "figures"
TOLERANCE = 2.0  # RMS over 0-255 pixel values: font/antialiasing noise, not a changed picture


def _committed(ext: str) -> set[str]:
    return {p.stem for p in FIGURES_DIR.glob(f"*.{ext}")}


def test_every_committed_figure_has_a_generator_and_vice_versa():
    assert _committed("png") == set(FIGURES), (
        "figures/*.png and attnlib.figures.FIGURES differ; run `python -m attnlib.figures figures`")
    assert _committed("svg") == {n for n, f in FORMATS.items() if "svg" in f}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_matches_the_committed_png(name, tmp_path):
    committed = FIGURES_DIR / f"{name}.png"
    if not committed.exists():
        pytest.fail(f"{committed} is missing; run `python -m attnlib.figures figures`")
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

    assert main([str(tmp_path), "query_output_hull"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["query_output_hull.png", "query_output_hull.svg"]
