"""CLAIMS.md, the claim index, is generated (tools/claims.py) and must be in step with the tests
and notebooks; every claim has a test and a notebook cell, and every ID cited is a claim."""

from __future__ import annotations

from pathlib import Path

from tools import claims

ROOT = Path(__file__).resolve().parents[1]


def test_claims_md_is_in_step_with_the_tests_and_notebooks():
    assert (ROOT / "CLAIMS.md").read_text() == claims.render(), "CLAIMS.md is stale: make claims"


def test_every_claim_has_a_test_and_a_notebook_cell_and_every_cited_id_is_a_claim():
    assert claims.problems() == []


def test_the_scan_finds_markers_names_and_cells():
    tests = claims.tests_by_claim()
    # a name-based test, a marker-based one, and a module-level pytestmark would all count
    assert any("::test_c13_" in t for t in tests["C13"])
    assert "tests/test_core_scoring.py" in " ".join(tests["C24"])
    cells = claims.cells_by_claim()
    assert "05_masking" in cells["C25"]
    text = claims.render()
    assert text.count("\n## C") == len(claims.STATEMENTS) == 54
