"""tools/i18n.py's input handling (I18N-1, I18N-2, I18N-4): only English notebooks are extracted,
a translation whose English left is kept as an obsolete entry, a missing catalog or glossary fault
is named."""

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


def _without_prose(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of 05_masking with every markdown cell removed (no English is left for any of its
    translations but the alt texts'), in a notebooks/ folder of its own."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = folder / NB.name
    raw = i18n.read_notebook(NB)
    raw["cells"] = [c for c in raw["cells"] if c["cell_type"] != "markdown"]
    nb.write_text(i18n.notebook_text(raw), encoding="utf-8")
    return folder, nb


def test_translations_whose_english_left_are_kept_as_obsolete_entries(tmp_path):
    folder, nb = _without_prose(tmp_path)
    catalogs = _catalogs(tmp_path)
    po = i18n.read_catalog(catalogs / "05_masking.po")
    done = {e.msgid: e.msgstr for e in po if e.msgstr}
    live = {m.msgid for m in i18n.messages(i18n.read_notebook(nb))}
    assert set(done) - live  # some English did leave

    i18n.extract(nb, catalogs, notebooks=folder)
    after = i18n.read_catalog(catalogs / "05_masking.po")
    assert {e.msgid for e in after if not e.obsolete} == live
    assert {e.msgid: e.msgstr for e in after.obsolete_entries()} == {
        k: v for k, v in done.items() if k not in live
    }
    assert "\n#~ msgid " in (catalogs / "05_masking.po").read_text(encoding="utf-8")
    # generate, check and stats see only the live entries.
    assert set(i18n.translations(after)) <= live
    assert sum(i18n.stats(after)) == len(live)
    assert not [p for p in i18n.problems(nb, catalogs) if "out of step" in p]
    # A second extract writes the same bytes; the English coming back takes its translation back.
    once = (catalogs / "05_masking.po").read_bytes()
    i18n.extract(nb, catalogs, notebooks=folder)
    assert (catalogs / "05_masking.po").read_bytes() == once
    shutil.copy(NB, nb)
    i18n.extract(nb, catalogs, notebooks=folder)
    back = i18n.read_catalog(catalogs / "05_masking.po")
    assert not back.obsolete_entries()
    assert {e.msgid: e.msgstr for e in back if e.msgstr} == done


def test_force_drops_the_obsolete_entries(tmp_path):
    folder, nb = _without_prose(tmp_path)
    catalogs = _catalogs(tmp_path)
    i18n.extract(nb, catalogs, notebooks=folder)
    assert i18n.read_catalog(catalogs / "05_masking.po").obsolete_entries()
    i18n.extract(nb, catalogs, notebooks=folder, force=True)
    po = i18n.read_catalog(catalogs / "05_masking.po")
    assert not po.obsolete_entries()
    assert {e.msgid for e in po} == {m.msgid for m in i18n.messages(i18n.read_notebook(nb))}


def test_a_changed_message_takes_an_obsolete_translation_as_fuzzy(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = folder / "01_x.ipynb"
    cell = {"cell_type": "markdown", "id": "a", "metadata": {}, "source": []}
    raw = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}

    def write(prose: str) -> None:
        cell["source"] = [prose]
        nb.write_text(i18n.notebook_text(raw), encoding="utf-8")

    catalogs = tmp_path / "LC_MESSAGES"
    write("The weights of each row sum to one.\n\nA second paragraph.")
    path = i18n.extract(nb, catalogs, notebooks=folder)
    po = i18n.read_catalog(path)
    po.find("The weights of each row sum to one.").msgstr = "每一行的权重之和为一。"
    path.write_text(str(po) + "\n", encoding="utf-8")
    write("A second paragraph.")  # the sentence leaves: obsolete
    i18n.extract(nb, catalogs, notebooks=folder)
    write("The weights of every row sum to one.\n\nA second paragraph.")  # back, changed
    i18n.extract(nb, catalogs, notebooks=folder)
    po = i18n.read_catalog(path)
    entry = po.find("The weights of every row sum to one.")
    assert (entry.msgstr, entry.flags) == ("每一行的权重之和为一。", ["fuzzy"])
    assert not po.obsolete_entries()  # taken by the new message, as msgmerge does


def test_an_unchanged_notebook_extracts_to_the_same_catalog(tmp_path):
    # Once extracted, again: the same bytes (whether the committed catalog is in step is
    # test_i18n.py's test_catalog_is_in_step_with_its_notebook).
    catalogs = _catalogs(tmp_path)
    i18n.extract(NB, catalogs)
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


def test_a_comment_whose_directive_line_left_its_message_keeps_its_translation():
    # `# NBVAL_IGNORE_OUTPUT` is code, not part of the comment block after it: the block's old
    # translation comes back without the directive, not fuzzy; the old entry stays obsolete.
    import polib

    fixture = ROOT / "tests" / "i18n_fixture" / "99_fixture.ipynb"
    old = polib.POFile(wrapwidth=0)
    old.append(
        polib.POEntry(
            msgid="NBVAL_IGNORE_OUTPUT\nthe English comment stays",
            msgstr="NBVAL_IGNORE_OUTPUT\n这条注释已翻译",
        )
    )
    new = {e.msgid: e for e in i18n.merge(fixture, old)}
    kept = new["the English comment stays"]
    assert (kept.msgstr, kept.flags) == ("这条注释已翻译", [])
    assert new["NBVAL_IGNORE_OUTPUT\nthe English comment stays"].obsolete
