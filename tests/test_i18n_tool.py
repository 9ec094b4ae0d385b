"""tools/i18n.py's input handling (I18N-1, I18N-2, I18N-4): only English notebooks are extracted,
a merge that loses translations is refused, a missing catalog or glossary fault is named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools import i18n

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks" / "05_masking.ipynb"
ZH = ROOT / "notebooks" / "zh" / "05_masking.ipynb"


def _catalogs(tmp_path: Path) -> Path:
    catalogs = tmp_path / "LC_MESSAGES"
    catalogs.mkdir()
    shutil.copy(i18n.catalog_path(NB), catalogs / "05_masking.po")
    return catalogs


def test_extract_refuses_the_chinese_notebook_and_leaves_the_catalog_as_it_was(tmp_path):
    catalogs = _catalogs(tmp_path)
    before = (catalogs / "05_masking.po").read_bytes()
    with pytest.raises(i18n.I18nError, match="not an English notebook"):
        i18n.extract(ZH, catalogs)
    assert (catalogs / "05_masking.po").read_bytes() == before


def test_extract_refuses_an_english_copy_outside_notebooks(tmp_path):
    catalogs = _catalogs(tmp_path)
    before = (catalogs / "05_masking.po").read_bytes()
    copy = tmp_path / NB.name
    shutil.copy(NB, copy)
    with pytest.raises(i18n.I18nError, match="not an English notebook"):
        i18n.extract(copy, catalogs)
    assert (catalogs / "05_masking.po").read_bytes() == before


def test_extract_refuses_a_translated_notebook_inside_the_notebooks_folder(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(ZH, folder / ZH.name)
    with pytest.raises(i18n.I18nError, match="metadata.attnlib.language"):
        i18n.extract(folder / ZH.name, _catalogs(tmp_path), notebooks=folder)


def test_a_merge_that_drops_translations_is_refused_unless_forced(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = folder / NB.name
    shutil.copy(NB, nb)
    catalogs = _catalogs(tmp_path)
    po = i18n.read_catalog(catalogs / "05_masking.po")
    m = sum(1 for e in po if e.msgstr)
    # Remove every markdown cell: no English is left for any translation.
    raw = i18n.read_notebook(nb)
    raw["cells"] = [c for c in raw["cells"] if c["cell_type"] != "markdown"]
    nb.write_text(i18n.notebook_text(raw), encoding="utf-8")
    n = sum(1 for e in i18n.merge(nb, po) if e.msgstr)
    assert n < m
    before = (catalogs / "05_masking.po").read_bytes()
    with pytest.raises(i18n.I18nError, match=rf"kept \d+ of {m} translations"):
        i18n.extract(nb, catalogs, notebooks=folder)
    assert (catalogs / "05_masking.po").read_bytes() == before
    i18n.extract(nb, catalogs, notebooks=folder, force=True)
    assert (catalogs / "05_masking.po").read_bytes() != before


def test_an_unchanged_notebook_extracts_to_the_same_catalog(tmp_path):
    catalogs = _catalogs(tmp_path)
    before = (catalogs / "05_masking.po").read_bytes()
    i18n.extract(NB, catalogs)
    assert (catalogs / "05_masking.po").read_bytes() == before


def test_a_missing_catalog_is_named_with_the_command_that_makes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no catalog .*99_nope\.po.*i18n extract"):
        i18n.read_catalog(tmp_path / "99_nope.po")


def test_a_glossary_line_with_the_wrong_fields_names_its_line(tmp_path):
    g = tmp_path / "glossary.tsv"
    g.write_text("english\tchinese\tseed\nquery\t查询\t§1\nkey\t键\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"glossary\.tsv:3: .*got 2"):
        i18n.read_glossary(g)


def test_a_translation_that_adds_html_or_an_attribute_fails_the_check():
    msgid = "The weights sum to 1."
    bad = "权重之和为 1。<img src=x onerror=alert(1)><script>alert(2)</script>"
    found = i18n.markup_problems(msgid, bad)
    assert any("HTML tags" in p and "img onerror src" in p and "script" in p for p in found)
    summary = "<summary>Answer</summary>"
    assert i18n.markup_problems(summary, "<summary>答案</summary>") == []
    assert i18n.markup_problems(summary, '<summary onclick="x()">答案</summary>') != []
    # A tag inside a code span is text, not HTML.
    assert i18n.markup_problems("Use `<s>`.", "使用 `<s>`。") == []


def test_the_catalogs_split_prose_with_the_sites_parser():
    from tools import mdparse, site

    text = "# T\n\n- a $x$ ~~b~~\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n$$y$$\n\n<details>\n"

    def shape(md):
        return [(t.type, t.map) for t in md.parse(text)]

    assert shape(i18n._markdown()) == shape(site._markdown()) == shape(mdparse.parser())
    assert "table" in i18n._markdown().get_active_rules()["block"]
