"""Every picture stored in a notebook has alt text, in the notebook's language (issue 35).

A code cell's pictures are its ``image/png`` outputs; their words are the cell's ``metadata.alt``
(one text per picture, tools/nbtext.cell_alts), which the site writes as ``alt`` and a screen
reader reads. The English notebooks' alt texts are English; the Chinese notebooks' are the
catalogs' Chinese (tools/i18n.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools.nbtext import cell_alts, course_notebooks

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u3400-\u9fff]")
NOTEBOOKS = [
    *(("en", p) for p in course_notebooks(ROOT / "notebooks")),
    *(("zh", p) for p in course_notebooks(ROOT / "notebooks" / "zh")),
]


def _pictures(cell: dict) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def test_both_languages_have_every_notebook():
    en = {p.name for lang, p in NOTEBOOKS if lang == "en"}
    zh = {p.name for lang, p in NOTEBOOKS if lang == "zh"}
    assert len(en) == 12 and en == zh


@pytest.mark.parametrize(("lang", "path"), NOTEBOOKS, ids=lambda x: getattr(x, "name", x))
def test_every_stored_picture_has_alt_text_in_its_language(lang, path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    pictures = 0
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        n = _pictures(cell)
        pictures += n
        alts = cell_alts(cell)
        assert len(alts) == n, f"{path.name} cell {i}: {n} picture(s) but {len(alts)} alt text(s)"
        for alt in alts:
            assert alt.strip(), f"{path.name} cell {i}: an empty alt text"
            has_cjk = bool(CJK.search(alt))
            assert has_cjk == (lang == "zh"), (
                f"{path.name} cell {i}: alt text not in {lang}: {alt!r}"
            )
    assert pictures > 0, f"{path.name}: no stored picture found (is the notebook executed?)"
