"""Every notebook is paired with its jupytext text file, and saved without volatile metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import notebooks as nbtools

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = nbtools.all_notebooks()


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_clean_and_its_text_pair_is_in_step(path):
    assert nbtools.problems(path) == []


def test_a_stale_pair_is_detected(tmp_path):
    # The check itself can fail: change one source line and the pair no longer matches.
    import nbformat

    src = NOTEBOOKS[0]
    nb = nbformat.read(src, as_version=4)
    nbtools.clean(nb)
    copy = tmp_path / src.name
    nbformat.write(nb, copy)
    nbtools.pair_path(copy).write_text(nbtools.paired_text(nb))
    assert nbtools.problems(copy) == []
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    first_code.source += "\n# edited"
    nbformat.write(nb, copy)
    assert any("out of step" in msg for msg in nbtools.problems(copy))
    nb.cells[0].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    nbformat.write(nb, copy)
    assert any("volatile" in msg for msg in nbtools.problems(copy))


def test_results_are_numbers_not_bare_booleans():
    # Issue 11: a reader sees the quantity a claim rests on; a few yes/no facts may stay.
    bare = [f"{p.name}: {line}" for p in NOTEBOOKS for line in nbtools.bare_booleans(p)]
    assert len(bare) <= 8, "\n".join(bare)
