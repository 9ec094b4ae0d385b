"""The Chinese notebooks' code is the English code (tools/code_text.py, tools/i18n.py): only the
comments, the strings a cell prints or draws and the language line differ, token for token."""

from __future__ import annotations

import io
import json
import re
import tokenize

import pytest

from tools import i18n
from tools.code_text import (
    DIRECTIVE,
    code_messages,
    code_problems,
    mask_magics,
    translate_code,
)
from tools.code_text import (
    fields as code_fields,
)

NOTEBOOKS = i18n.all_notebooks()

CELL = '''%matplotlib inline
# The first line of a block
# and its second line.
x = 1  # a trailing comment
def f():
    # inside f
    return 2
w = 0.25
print(f"largest weight: {w:.3f}\\n", "ok")
plt.title("Scores and weights")
ax.plot([1], label="query 0")
print("{} of {}".format(1, 2))
print("x")
legend(["first line", "second line"])
print(b"bytes here")
print("sampled sd: " + ", ".join(sds), "ok" if w else "not ok")
s = "not shown at all"'''


# --- tools/code_text.py -------------------------------------------------------------------------


def test_a_run_of_comment_lines_is_one_message_and_a_trailing_comment_another():
    comments = [(m.text, m.start, m.lines) for m in code_messages(CELL) if m.kind == "comment"]
    assert comments == [
        ("The first line of a block\nand its second line.", (2, 0), 2),
        ("a trailing comment", (4, 7), 1),
        ("inside f", (6, 4), 1),
    ]


def test_the_shown_strings_are_those_printed_drawn_or_labelled_with_their_fields():
    strings = [m.text for m in code_messages(CELL) if m.kind == "string"]
    # f-string fields and escapes are kept as written; "x" has no word, b"..." is not text, and a
    # phrase that no code reads as a key is shown too (a label kept in a variable).
    assert strings == [
        "largest weight: {w:.3f}\\n",
        "ok",
        "Scores and weights",
        "query 0",
        "{} of {}",
        "first line",
        "second line",
        "sampled sd: ",
        "ok",
        "not ok",
        "not shown at all",
    ]


def test_a_directive_is_code_not_a_message_and_ends_a_comment_block():
    src = "# NBVAL_IGNORE_OUTPUT\n# C41: times measured\n# on this machine\nx = 1  # noqa: E501"
    assert [m.text for m in code_messages(src)] == ["C41: times measured\non this machine"]
    out = translate_code(src, {"C41: times measured\non this machine": "C41: 本机测得的时间"})
    assert out == "# NBVAL_IGNORE_OUTPUT\n# C41: 本机测得的时间\nx = 1  # noqa: E501"
    lost = "# 忽略输出\n# C41: 本机测得的时间\nx = 1  # noqa: E501"
    assert code_tokens(lost, shown=False) != code_tokens(src)


def test_a_comment_block_after_code_on_another_indent_is_its_own_message():
    src = "x = 1\n# one\n    # two words"
    assert [m.text for m in code_messages(src)] == ["one", "two words"]


TABLE = {
    "The first line of a block\nand its second line.": "块的第一行\n第二行\n第三行",
    "a trailing comment": "行尾注释",
    "inside f": "在 f 内",
    "largest weight: {w:.3f}\\n": "最大权重：{w:.3f}\\n",
    "Scores and weights": "分数与权重",
    "query 0": "查询 0",
    "first line": "第一条",
}


def test_translate_code_replaces_each_message_in_place_keeping_quotes_and_indentation():
    out = translate_code(CELL, TABLE)
    assert out.split("\n")[:8] == [
        "%matplotlib inline",
        "# 块的第一行",
        "# 第二行",
        "# 第三行",
        "x = 1  # 行尾注释",
        "def f():",
        "    # 在 f 内",
        "    return 2",
    ]
    assert 'print(f"最大权重：{w:.3f}\\n", "ok")' in out
    assert 'plt.title("分数与权重")' in out and 'label="查询 0"' in out
    assert 'legend(["第一条", "second line"])' in out and 's = "not shown at all"' in out


def test_a_translation_round_trips_to_the_english():
    # Chinese -> English again: the English cell, byte for byte (a comment block of another
    # length than the English included).
    zh = translate_code(CELL, TABLE)
    back = {v: k for k, v in TABLE.items()}
    assert translate_code(zh, back) == CELL
    assert translate_code(CELL, {m.text: m.text for m in code_messages(CELL)}) == CELL


def test_the_translated_cell_still_runs_and_prints_its_numbers():
    src = 'w = 0.25\nprint(f"largest weight: {w:.3f}")  # the largest\n'
    out = io.StringIO()
    zh = translate_code(
        src, {"largest weight: {w:.3f}": "最大权重：{w:.3f}", "the largest": "最大"}
    )
    exec(compile(zh, "<zh>", "exec"), {"print": lambda *a: out.write(" ".join(a))})
    assert out.getvalue() == "最大权重：0.250"


@pytest.mark.parametrize(
    "msgid, msgstr, problem",
    [
        ("weight {w:.3f} of {n}", "{n} 个中的权重 {w:.3f}", None),  # fields may move
        ("weight {w:.3f}", "权重 {w:.2f}", "fields ['{w:.3f}']"),
        ("weight {w}", "权重", "fields ['{w}']"),
        ("{{literal}} {w}", "{w} {literal}", "fields"),
        ("a\\nb", "甲乙", "escapes"),
        ("a\\tb", "甲\\n乙", "escapes"),
        ("key", '"键"', 'adds the quote "'),
        ("key", "'键'", "adds the quote '"),
        ("the 'key'", "“键”", None),
        # A field that is only a literal is a heading: its text and width may change.
        ("{'max weight':>10} {w:.3f}", "{'最大权重':>6} {w:.3f}", None),
        ("{'max weight':>10}", '{"最大权重":>6}', "fields"),
        ("{'max weight':>10}", "最大权重", "fields"),
    ],
)
def test_code_problems_names_lost_fields_changed_escapes_and_added_quotes(msgid, msgstr, problem):
    found = code_problems("string", msgid, msgstr)
    if problem is None:
        assert found == []
    else:
        assert any(problem in f for f in found), found


def test_a_comment_may_take_any_number_of_lines_and_quotes():
    assert code_problems("comment", "one line", '第一行\n第二行 "引号"') == []


def test_mask_magics_keeps_every_position():
    src = "%matplotlib inline\n!ls\nx = 1"
    masked = mask_magics(src)
    assert masked == " " * 18 + "\n" + " " * 3 + "\nx = 1"


# --- the language line ----------------------------------------------------------------------------


def test_the_language_line_follows_the_magics_and_is_never_the_last_line():
    assert i18n.with_language_line("%matplotlib inline\nimport torch").split("\n") == [
        "%matplotlib inline",
        i18n.LANGUAGE_LINE,
        "import torch",
    ]
    assert i18n.with_language_line("x = 1").split("\n") == [i18n.LANGUAGE_LINE, "x = 1"]
    assert i18n.with_language_line("%matplotlib inline").split("\n") == [
        i18n.LANGUAGE_LINE,
        "%matplotlib inline",
    ]
    src = "%matplotlib inline\nimport torch"
    assert i18n.without_language_line(i18n.with_language_line(src)) == src


# --- the real notebooks: the same code ---------------------------------------------------------


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def code_tokens(source: str, shown: bool = True) -> list[tuple[str, str]]:
    """The tokens of a code cell with its comments (not its directives: ``# NBVAL_IGNORE_OUTPUT``)
    and the line breaks inside a statement taken out,
    each shown string (a catalog message: tools/code_text.py) as its prefix, quotes and sorted
    ``{fields}`` (an f-string's fields are code), and the magic lines as they are."""
    shown_at = {m.start for m in code_messages(source) if m.kind == "string"} if shown else set()
    out = [("MAGIC", line.strip()) for line in source.split("\n") if line.lstrip()[:1] in "%!"]
    text = mask_magics(source)
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type == tokenize.COMMENT and DIRECTIVE.fullmatch(t.string):
            out.append(("DIRECTIVE", t.string))  # nbval's markers are code: kept as they are
            continue
        if t.type in (tokenize.COMMENT, tokenize.NL):
            continue
        if t.type == tokenize.STRING and t.start in shown_at:
            head = re.match(r"[rRbBuUfF]*('''|\"\"\"|'|\")", t.string).group(0)
            fields = _shown_fields(t.string, head)
            out.append(("SHOWN", head + " " + " ".join(fields)))
            continue
        # The last line's NEWLINE is '' without a final line break: the kind is what counts.
        out.append((tokenize.tok_name[t.type], "" if t.type == tokenize.NEWLINE else t.string))
    return out


def _shown_fields(token: str, head: str) -> list[str]:
    """An f-string's fields (code), each literal field as its quotes only and the quoted words
    inside any other field as their quotes (shown text: ``{'yes' if ok else 'no'}``)."""
    if "f" not in head.lower():
        return []
    return code_fields(token)


def _pairs(path):
    zh_path = i18n.output_path(path)
    en = i18n.read_notebook(path)
    zh = json.loads(zh_path.read_text(encoding="utf-8"))
    return en, zh


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_chinese_code_is_the_english_code_token_for_token(path):
    en, zh = _pairs(path)
    assert [c["cell_type"] for c in zh["cells"]] == [c["cell_type"] for c in en["cells"]]
    code = [i for i, c in enumerate(en["cells"]) if c["cell_type"] == "code"]
    first = _source(zh["cells"][code[0]]).split("\n")
    assert first.count(i18n.LANGUAGE_LINE) == 1, "the first code cell sets the language once"
    assert first[-1] != i18n.LANGUAGE_LINE, "the language line would print the language before"
    found = []
    for i in code:
        en_src, zh_src = _source(en["cells"][i]), _source(zh["cells"][i])
        if i != code[0]:
            assert i18n.LANGUAGE_LINE not in zh_src.split("\n"), f"cell {i}: a second language line"
        # The Chinese strings sit where the English's shown strings are: the English's messages
        # mark them (the Chinese text may have no English word left to find).
        en_tokens = code_tokens(en_src)
        zh_marked = _mark_like(code_tokens(i18n.without_language_line(zh_src), False), en_tokens)
        if zh_marked != en_tokens:
            found.append(f"cell {i}: {_first_difference(en_tokens, zh_marked)}")
    assert not found, f"{path.stem}: the Chinese code differs from the English:\n" + "\n".join(
        found
    )


def _mark_like(zh_tokens, en_tokens):
    """``zh_tokens`` with each STRING token at a place where the English has a shown string put in
    the same short form (prefix, quotes, fields), so only the text between the quotes may differ."""
    out = []
    for k, tok in enumerate(zh_tokens):
        if k < len(en_tokens) and en_tokens[k][0] == "SHOWN" and tok[0] == "STRING":
            head = re.match(r"[rRbBuUfF]*('''|\"\"\"|'|\")", tok[1]).group(0)
            fields = _shown_fields(tok[1], head)
            tok = ("SHOWN", head + " " + " ".join(fields))
        out.append(tok)
    return out


def _first_difference(want, got) -> str:
    for k, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return f"token {k}: English {a!r}, Chinese {b!r}"
    return f"{len(want)} tokens in the English, {len(got)} in the Chinese"


def test_the_token_comparison_sees_a_changed_name_and_a_changed_field():
    en = 'w = 1\nprint(f"weight {w}")  # the weight'
    same = 'w = 1\nprint(f"权重 {w}")  # 权重\n# 多一行注释'
    renamed = 'v = 1\nprint(f"权重 {w}")'
    refield = 'w = 1\nprint(f"权重 {w:.2f}")'
    unshown = 'w = 2\nprint(f"weight {w}")'
    heading = code_tokens("print(f\"{'max weight':>10}\")")
    assert _mark_like(code_tokens("print(f\"{'最大权重':>6}\")", shown=False), heading) == heading
    want = code_tokens(en)
    assert _mark_like(code_tokens(same, shown=False), want) == want
    for other in (renamed, refield, unshown):
        assert _mark_like(code_tokens(other, shown=False), want) != want


def test_the_glossary_reads_a_code_strings_text_not_its_fields():
    import polib

    glossary = i18n.read_glossary()

    def problems(msgid, msgstr):
        comment = "00_x.ipynb cell 3 (id c3), string 1"
        entry = polib.POEntry(msgid=msgid, msgstr=msgstr, comment=comment)
        return i18n.entry_problems(entry, glossary)

    assert (
        problems("{rank:4d}   {weights[0, i].item():.4f}", "{rank:4d}   {weights[0, i].item():.4f}")
        == []
    )
    assert problems("largest weight {w:.3f}", "最大的 weight {w:.3f}") == [
        "glossary: 'weight' is '权重'"
    ]
    assert problems("largest weight {w:.3f}", "最大权重 {w:.3f}") == []
    # kept as its English on purpose (a key, a model's input): the translator's call; printed
    # English is caught by test_i18n_outputs.py's nothing-English test
    assert problems("{'max weight':>10}", "{'max weight':>10}") == []
    assert problems("{'max weight':>10}", "{'max weight':>10} ") == ["glossary: 'weight' is '权重'"]
    assert problems("{'max weight':>10}", "{'最大权重':>6}") == []
