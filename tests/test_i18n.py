"""The Chinese edition (tools/i18n.py): the block splitter, catalog merging, the generated
notebooks and the checks, on a small fixture (tests/i18n_fixture/) and on the real catalogs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tools import i18n

ROOT = Path(__file__).resolve().parents[1]

FIXTURE = ROOT / "tests" / "i18n_fixture"
FIXTURE_NB = FIXTURE / "99_fixture.ipynb"
NOTEBOOKS = i18n.all_notebooks()
GLOSSARY = i18n.read_glossary()

# Notebooks whose catalogs the translators have not finished: for these only the translated
# entries are checked (placeholders, markup, glossary), not that every entry is translated and
# none is fuzzy. Remove a notebook from this set when its catalog is done; the edition is done
# when the set is empty (tools/i18n.py stats shows what is left). A frozenset, so that emptying the
# braces leaves an empty set, not an empty dict.
UNFINISHED = frozenset({})


def _fixture_copy(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture notebook and its catalog in tmp_path (nb, catalogs folder)."""
    nb = tmp_path / FIXTURE_NB.name
    shutil.copy(FIXTURE_NB, nb)
    catalogs = tmp_path / "LC_MESSAGES"
    catalogs.mkdir()
    shutil.copy(FIXTURE / "99_fixture.po", catalogs / "99_fixture.po")
    return nb, catalogs


def _edit_markdown(nb_path: Path, cell: int, old: str, new: str) -> None:
    nb = i18n.read_notebook(nb_path)
    src = "".join(nb["cells"][cell]["source"])
    assert old in src
    nb["cells"][cell]["source"] = src.replace(old, new).splitlines(keepends=True)
    nb_path.write_text(i18n.notebook_text(nb), encoding="utf-8")


# --- split --------------------------------------------------------------------------------------


def test_blocks_are_the_leaf_blocks_sphinx_would_make_messages_of():
    md = "\n".join(
        [
            "## 2. Overflow",
            "",
            "A paragraph",
            "on two lines.",
            "",
            "- item one;",
            "- item two",
            "  continued.",
            "",
            "> **Note**: quoted,",
            "> still quoted.",
            "",
            "$$",
            "x = 1",
            "$$",
            "",
            "| a | b |",
            "|---|---|",
            "| 1 | 2 |",
            "",
            "```python",
            "print('code is not translated')",
            "```",
            "",
            "<details><summary>Answer</summary>",
            "",
            "</details>",
        ]
    )
    got = [(b.kind, b.first_prefix, b.text) for b in i18n.blocks(md)]
    assert got == [
        ("heading", "## ", "2. Overflow"),
        ("paragraph", "", "A paragraph\non two lines."),
        ("list item", "- ", "item one;"),
        ("list item", "- ", "item two\ncontinued."),
        ("paragraph", "> ", "**Note**: quoted,\nstill quoted."),
        ("math", "", "$$\nx = 1\n$$"),
        ("table", "", "| a | b |\n|---|---|\n| 1 | 2 |"),
        ("html", "", "<details><summary>Answer</summary>"),
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_markdown_cell_is_rebuilt_exactly_from_its_blocks(path):
    # Put each block's English back through the same path a translation takes: the cell must come
    # out byte for byte, so nothing outside the blocks is lost and no prefix is changed.
    for cell in i18n.read_notebook(path)["cells"]:
        if cell["cell_type"] == "markdown":
            src = "".join(cell["source"])
            identity = {b.text: b.text for b in i18n.blocks(src)}
            assert i18n.translate_markdown(src, identity) == src


def test_a_translation_longer_than_the_english_keeps_the_list_and_quote_prefixes():
    md = "- one\n- two\n\n> quoted"
    table = {"two": "第一行\n第二行", "quoted": "引用\n续行"}
    assert i18n.translate_markdown(md, table) == "- one\n- 第一行\n  第二行\n\n> 引用\n> 续行"


# --- extract ------------------------------------------------------------------------------------


def test_extraction_makes_one_empty_entry_per_message_naming_its_cell():
    po = i18n.merge(FIXTURE_NB)
    msgs = i18n.messages(i18n.read_notebook(FIXTURE_NB))
    assert [e.msgid for e in po] == [m.msgid for m in msgs]
    assert all(e.msgstr == "" for e in po)
    alt = next(e for e in po if e.msgid.startswith("Bars of"))
    assert alt.comment == "99_fixture.ipynb cell 1 (id c1), alt 1"
    assert alt.occurrences == [("99_fixture.ipynb", "1")]


def test_merging_keeps_translations_marks_changed_ones_fuzzy_and_removed_ones_obsolete(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    old = i18n.read_catalog(catalogs / "99_fixture.po")
    # Change one block a little, remove another, add a new one.
    _edit_markdown(nb, 2, "a weighted sum of the values.", "a weighted sum of the value rows.")
    _edit_markdown(nb, 0, "**What you will learn**\n\n", "")
    _edit_markdown(nb, 2, "## 1. The output\n", "## 1. The output\n\nA brand new paragraph.\n")
    new = {e.msgid: e for e in i18n.merge(nb, old)}

    changed = new["The output is a weighted sum of the value rows."]
    assert changed.flags == ["fuzzy"]
    assert changed.msgstr == "输出是各个值的加权求和。"
    assert changed.previous_msgid == "The output is a weighted sum of the values."
    assert new["A brand new paragraph."].msgstr == ""
    assert new["A brand new paragraph."].flags == []
    removed = new["**What you will learn**"]  # kept, as msgmerge does: its English may come back
    assert removed.obsolete and removed.msgstr == old.find("**What you will learn**").msgstr
    assert not [e for e in new.values() if e.obsolete and e is not removed]
    kept = new["1. The output"]
    assert (kept.msgstr, kept.flags) == ("1. 输出", [])


def test_the_same_english_twice_is_one_entry_with_two_places(tmp_path):
    nb, _ = _fixture_copy(tmp_path)
    _edit_markdown(nb, 2, "## 1. The output\n", "## 1. The output\n\nA key with weight 0.\n")
    entry = next(e for e in i18n.merge(nb) if e.msgid == "A key with weight 0.")
    assert entry.occurrences == [("99_fixture.ipynb", "0"), ("99_fixture.ipynb", "2")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_catalog_is_in_step_with_its_notebook(path):
    # As for the .py pairs: extracting again gives the committed catalog (`make translations`).
    committed = i18n.catalog_path(path)
    assert committed.exists(), f"no {committed.name}: run `make translations`"
    merged = str(i18n.merge(path, i18n.read_catalog(committed))) + "\n"
    assert merged == committed.read_text(encoding="utf-8"), (
        f"{committed.name} is out of step with {path.name}: run `make translations`"
    )


# --- generate -----------------------------------------------------------------------------------


def test_generated_fixture_is_chinese_prose_around_the_same_code(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    out = i18n.generate(nb, catalogs, tmp_path / "zh")
    en, zh = i18n.read_notebook(nb), json.loads(out.read_text(encoding="utf-8"))
    md = "".join(zh["cells"][0]["source"])
    assert md.startswith("# 99 · 一个测试样例\n")
    assert "- 一行**注意力分数**（attention score）如何变成权重；\n" in md
    assert "> **常见错误**：" in md and "\n> logit 较大时它会溢出。" in md
    assert "| 查询 | 键 | 权重 |" in md and "<details><summary>答案</summary>" in md
    assert "2. 每个查询都读取所有的键。\n   同一项的第二行。" in md
    code_en, code_zh = en["cells"][1], zh["cells"][1]
    assert code_zh["metadata"].pop("alt") == "4 个权重的柱状图，最大的为 0.50。"
    code_en["metadata"].pop("alt")
    assert code_zh["metadata"] == code_en["metadata"] and code_zh["id"] == code_en["id"]
    # The first code cell sets the language; comments and printed strings are Chinese; the
    # English outputs are not copied (the Chinese notebook's come from its own run).
    assert code_zh["source"] == [
        i18n.LANGUAGE_LINE + "\n",
        'print("权重：", [0.5, 0.25, 0.25])  # 这条注释已翻译',
    ]
    assert (code_zh["outputs"], code_zh["execution_count"]) == ([], None)
    assert i18n.unrun_cells(zh) == [1]
    assert "jupytext" not in zh["metadata"] and "widgets" not in zh["metadata"]
    assert zh["metadata"]["attnlib"] == {
        "language": "zh-CN",
        "translated_from": "../99_fixture.ipynb",
    }


def _run_fixture(path: Path, text: str) -> None:
    """What `make notebooks-run` does to the fixture's code cell, without a kernel."""
    zh = json.loads(path.read_text(encoding="utf-8"))
    cell = zh["cells"][1]
    cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": [text]}]
    cell["execution_count"] = 1
    path.write_text(i18n.notebook_text(zh), encoding="utf-8")


def test_generate_keeps_the_outputs_of_unchanged_code_and_clears_the_others(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    out = i18n.generate(nb, catalogs, tmp_path / "zh")
    _run_fixture(out, "权重： [0.5, 0.25, 0.25]\n")
    ran = out.read_text(encoding="utf-8")
    assert i18n.generate(nb, catalogs, tmp_path / "zh") == out
    assert out.read_text(encoding="utf-8") == ran  # nothing changed: the run's outputs stay
    assert "outputs kept (no code cell changed" in i18n.generate_report(out, json.loads(ran))
    # The prose changes: the outputs stay. The code's translation changes: they go.
    po = i18n.read_catalog(catalogs / "99_fixture.po")
    po.find("1. The output").msgstr = "1. 输出结果"
    (catalogs / "99_fixture.po").write_text(str(po) + "\n", encoding="utf-8")
    i18n.generate(nb, catalogs, tmp_path / "zh")
    assert json.loads(out.read_text(encoding="utf-8"))["cells"][1] == json.loads(ran)["cells"][1]
    po.find("the English comment stays").msgstr = "注释"
    (catalogs / "99_fixture.po").write_text(str(po) + "\n", encoding="utf-8")
    i18n.generate(nb, catalogs, tmp_path / "zh")
    zh = json.loads(out.read_text(encoding="utf-8"))
    assert (zh["cells"][1]["outputs"], zh["cells"][1]["execution_count"]) == ([], None)
    report = i18n.generate_report(out, json.loads(ran))
    assert "none for 1: cells 1; run `make notebooks-run NB=" in report


def test_a_run_chinese_notebook_is_saved_unpaired_in_the_layout_generate_writes(tmp_path):
    # tools/notebooks.py run ends with sync: for a translation, no .py pair and no jupytext
    # pairing, and nbformat's bytes are generate's, so the next generate changes nothing.
    from tools import notebooks

    nb, catalogs = _fixture_copy(tmp_path)
    out = i18n.generate(nb, catalogs, tmp_path / "zh")
    _run_fixture(out, "权重： [0.5, 0.25, 0.25]\n")
    ran = out.read_text(encoding="utf-8")
    notebooks.sync(out)
    assert out.read_text(encoding="utf-8") == ran
    assert not out.with_suffix(".py").exists()
    assert notebooks.problems(out) == []
    i18n.generate(nb, catalogs, tmp_path / "zh")
    assert out.read_text(encoding="utf-8") == ran


def test_a_chinese_notebook_generated_before_the_language_line_keeps_no_english_output(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    old = i18n.read_notebook(nb)  # as the old generate wrote it: the English code and outputs
    zh = i18n.translated_notebook(nb, i18n.read_catalog(catalogs / "99_fixture.po"), old)
    assert zh["cells"][1]["outputs"] == [] and i18n.unrun_cells(zh) == [1]


def test_an_entry_not_yet_translated_or_fuzzy_leaves_the_english(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    po = i18n.read_catalog(catalogs / "99_fixture.po")
    po.find("1. The output").msgstr = ""
    po.find("The output is a weighted sum of the values.").flags = ["fuzzy"]
    zh = i18n.translated_notebook(nb, po)
    assert zh["cells"][2]["source"] == i18n.read_notebook(nb)["cells"][2]["source"]


def _code_metadata(nb: dict) -> list[dict]:
    """Each code cell's metadata but its alt text (the one translated key)."""
    return [
        {k: v for k, v in cell["metadata"].items() if k != "alt"}
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chinese_notebook_is_in_step_with_the_english_and_its_catalog(path):
    # Generating again changes nothing: the prose and code are the catalog's, and the outputs
    # (the Chinese notebook's own, from `make notebooks-run`) stay where the code is unchanged.
    # The code itself is the English code: tests/test_i18n_code.py; the outputs' numbers:
    # tests/test_i18n_outputs.py.
    zh_path = i18n.output_path(path)
    assert zh_path.exists(), f"no {zh_path.relative_to(ROOT)}: run `make translations`"
    text = zh_path.read_text(encoding="utf-8")
    zh = json.loads(text)
    expected = i18n.notebook_text(
        i18n.translated_notebook(path, i18n.read_catalog(i18n.catalog_path(path)), zh)
    )
    assert text == expected, f"{zh_path.name} is stale: run `make translations`"
    en = i18n.read_notebook(path)
    assert [c["cell_type"] for c in zh["cells"]] == [c["cell_type"] for c in en["cells"]]
    assert [c.get("id") for c in zh["cells"]] == [c.get("id") for c in en["cells"]]
    assert _code_metadata(zh) == _code_metadata(en)
    assert "widgets" not in zh["metadata"]


# --- check --------------------------------------------------------------------------------------


def test_the_complete_fixture_catalog_passes_every_check():
    assert i18n.problems(FIXTURE_NB, FIXTURE) == []


def test_a_missing_entry_is_reported_with_its_notebook_cell_and_english(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    po = i18n.read_catalog(catalogs / "99_fixture.po")
    po.find("A key with weight 0.").msgstr = ""
    entry = po.find("The output is a weighted sum of the values.")
    entry.flags = ["fuzzy"]
    (catalogs / "99_fixture.po").write_text(str(po) + "\n", encoding="utf-8")
    found = i18n.problems(nb, catalogs)
    assert found == [
        "99_fixture.ipynb cell 0 (id m0), list item 11: not translated\n"
        "    English: 'A key with weight 0.'",
        "99_fixture.ipynb cell 2 (id m2), paragraph 2: fuzzy (the English changed: check the "
        "translation, then remove the flag)\n"
        "    English: 'The output is a weighted sum of the values.'",
    ]


def test_a_catalog_out_of_step_is_reported(tmp_path):
    nb, catalogs = _fixture_copy(tmp_path)
    _edit_markdown(nb, 2, "## 1. The output\n", "## 1. The output\n\nNew.\n")
    assert "out of step" in i18n.problems(nb, catalogs)[0]


def test_placeholders_are_numbers_code_formulas_link_targets_and_attnlib_names():
    msgid = (
        "See [notebook 03](03_softmax_gradient.ipynb): `masked_softmax` gives $a_j$ at "
        "about 88.7 (10,000 rows, §9.2), as attnlib.core.softmax does; float32 is not a number."
    )
    assert i18n.placeholders(msgid) == [
        "`masked_softmax`",
        "$a_j$",
        "03_softmax_gradient.ipynb",
        "attnlib.core.softmax",
        "03",
        "88.7",
        "10000",
        "9.2",
    ]


@pytest.mark.parametrize(
    "msgstr, problem",
    [
        ("参见[笔记本 03](03_softmax_gradient.ipynb)和 `attnlib.masked_softmax`。", None),
        ("参见[笔记本 3](03_softmax_gradient.ipynb)和 `attnlib.masked_softmax`。", "03"),
        ("参见[笔记本 03](03_softmax.ipynb)和 `attnlib.masked_softmax`。", "03_softmax_gradient"),
        ("参见[笔记本 03](03_softmax_gradient.ipynb)和 `masked_softmax`。", "`attnlib.masked"),
    ],
)
def test_a_lost_placeholder_is_reported(msgstr, problem):
    entry = i18n.read_catalog(FIXTURE / "99_fixture.po").find(
        "See [notebook 03](03_softmax_gradient.ipynb) and `attnlib.masked_softmax`."
    )
    entry.msgstr = msgstr
    found = [p for p in i18n.entry_problems(entry, GLOSSARY) if p.startswith("keep unchanged")]
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0]


def test_chapter_numbers_may_be_chinese_ordinals_but_other_numbers_not():
    assert i18n._kept("2", "《第二章 注意力机制的数学推导》")
    assert not i18n._kept("2", "两个头")
    assert not i18n._kept("0.25", "四分之一")


def test_lost_bold_is_reported():
    msgid = "how a row of **attention scores (注意力分数)** becomes weights;"
    assert i18n.markup_problems(msgid, "一行**注意力分数**（attention score）如何变成权重；") == []
    assert i18n.markup_problems(msgid, "一行**注意力分数（attention score）**如何变成权重；") == [
        "markup: 1 bold span(s) in the English, 0 in the Chinese"
    ]


def test_an_italic_may_become_bold_or_a_title_but_no_span_is_lost():
    # Chinese sets no italics: *emphasis* may become **强调**, an italic title 《书名》
    msgid = "the *whole* row, as *Attention Is All You Need* says, with **two** keys"
    ok = "**整**行，如《Attention Is All You Need》所说，有**两**个键"
    assert i18n.markup_problems(msgid, ok) == []
    assert (
        i18n.markup_problems(msgid, "*整*行，如《Attention Is All You Need》所说，有**两**个键")
        == []
    )
    # an italic dropped, not replaced: reported
    assert i18n.markup_problems(
        msgid, "整行，如《Attention Is All You Need》所说，有**两**个键"
    ) == ["markup: 2 italic span(s) in the English, 0 in the Chinese"]
    # the English bold span lost while an italic became bold: still a lost bold span
    lost = "**整**行，如《Attention Is All You Need》所说，有两个键"
    assert "markup: 1 bold span(s) in the English, 1 in the Chinese" not in i18n.markup_problems(
        msgid, lost
    )
    assert i18n.markup_problems(msgid, lost) != []
    # more italics than the English: reported
    assert i18n.markup_problems("a *b* c", "*甲* *乙* 丙") != []


def test_a_translation_that_changes_the_blocks_shape_is_reported():
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    assert i18n.structure_problems("table", table, "| 甲 | 乙 |\n|---|---|\n| 1 | 2 |") == []
    assert i18n.structure_problems("table", table, "| 甲 乙 |\n|---|---|\n| 1 | 2 |") == [
        "structure: the table's rows have [3, 3, 3] pipes in the English, [2, 3, 3] here"
    ]
    assert i18n.structure_problems("heading", "1. The output", "1. 输出\n续") == [
        "structure: a heading is one line"
    ]
    assert i18n.structure_problems("paragraph", "One. Two.", "一。\n\n二。") == [
        "structure: a blank line inside the block (it would split it in two)"
    ]
    entry = i18n.read_catalog(FIXTURE / "99_fixture.po").find("1. The output")
    entry.msgstr = "1. 输出\n续"
    assert "structure: a heading is one line" in i18n.entry_problems(entry, GLOSSARY)


def test_glossary_terms_must_be_the_glossarys_chinese():
    msgid = "The attention weights of each query; every key gets a weight."
    assert (
        i18n.glossary_problems(msgid, "每个查询的注意力权重；每个键都得到一个权重。", GLOSSARY)
        == []
    )
    found = i18n.glossary_problems(msgid, "每个查询的注意力系数；每个键都得到一个权重。", GLOSSARY)
    assert found == ["glossary: 'attention weight' is '注意力权重'"]
    # Plurals, -ise/-ize, en dashes and a trailing * match; code spans and formulas are not read.
    assert i18n.glossary_problems("the queries", "", GLOSSARY) == ["glossary: 'query' is '查询'"]
    assert i18n.glossary_problems("layer normalisation", "层归一化", GLOSSARY) == []
    assert i18n.glossary_problems("encoder–decoder", "编码器-解码器", GLOSSARY) == []
    assert i18n.glossary_problems("it saturates", "", GLOSSARY) == [
        "glossary: 'saturat*' is '饱和'"
    ]
    assert i18n.glossary_problems("`key_padding_mask` and $key$", "", GLOSSARY) == []


def test_the_glossary_is_the_seeds_terms_each_with_its_seed_section():
    # Committed excerpts of the course seed texts (each header names its source file).
    seeds = {
        p.name[:3]: p.read_text(encoding="utf-8")
        for p in (Path(__file__).parent / "data" / "seeds").glob("*_excerpt.txt")
    }
    assert set(seeds) == {"000", "004"}
    assert 40 <= len(GLOSSARY) <= 100
    assert len({t.english.lower() for t in GLOSSARY}) == len(GLOSSARY)
    for term in GLOSSARY:
        assert term.seed, term
        if term.seed == "—":  # STYLE.md: a term the seeds do not use (batch: d2l-zh's 批量)
            continue
        for section in term.seed.split(";"):
            seed = section.split()[0]
            assert seed in ("000", "004"), term
            assert term.chinese in seeds[seed], f"{term.chinese} not in seed {seed}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_catalog_is_complete_and_faithful(path):
    # The real catalogs: placeholders, markup and glossary on every translated entry; and, once a
    # notebook leaves UNFINISHED, no entry untranslated or fuzzy.
    found = i18n.problems(path)
    if path.stem in UNFINISHED:
        found = [p for p in found if ": not translated\n" not in p and ": fuzzy (" not in p]
    assert found == [], f"{len(found)} problems:\n" + "\n".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chinese_notebook_names_its_seed_sections_at_the_top(path):
    first = "".join(
        json.loads(i18n.output_path(path).read_text(encoding="utf-8"))["cells"][0]["source"]
    )
    if path.stem in UNFINISHED:
        assert "taught:**" in first  # the English paragraph its translation replaces
    else:
        assert "讲义" in first and "§" in first


def test_unfinished_names_real_notebooks():
    assert UNFINISHED <= {p.stem for p in NOTEBOOKS}


# --- the site in Chinese (tools/site.py) ---------------------------------------------------------


def test_a_chinese_page_is_zh_cn_with_the_english_anchors_and_a_link_back(tmp_path):
    from tools import site

    nb, catalogs = _fixture_copy(tmp_path)
    zh = i18n.generate(nb, catalogs, tmp_path / "zh")
    ids = [s["id"] for s in site.notebook_sections(nb)]
    assert ids == ["1-the-output"]
    info = site.notebook_info(zh, "zh", ids)
    assert info["title"] == "99 · 一个测试样例" and info["learn"].startswith("- 一行")
    page = site.page_html(zh, info, None, None, {}, "zh", ids)
    assert page.startswith('<!DOCTYPE html><html lang="zh-CN">')
    assert '<h2 id="1-the-output">1. 输出</h2>' in page
    assert 'class="site-lang" href="../99_fixture.html" hreflang="en"' in page
    assert "<code>make lab</code>，然后打开" in page and "<summary>答案</summary>" in page
    english = site.page_html(nb, site.notebook_info(nb), None, None, {})
    assert english.startswith('<!DOCTYPE html><html lang="en">')
    assert 'class="site-lang" href="zh/99_fixture.html" hreflang="zh-CN"' in english
    index = site.index_html([info], "zh")
    assert '<html lang="zh-CN">' in index and 'href="../index.html"' in index
    assert 'href="99_fixture.html"' in index and "<summary>各节</summary>" in index


def test_an_explorer_block_is_the_same_frames_with_each_languages_alt():
    from tools import site

    frames = ('{"frames":1}', "AAAA")
    en = site.explorer_block("heads", "06-c3-o0", frames, None, "Two heads.")
    zh = site.explorer_block("heads", "06-c3-o0", frames, None, "两个头。")
    assert en.replace("Two heads.", "两个头。") == zh
