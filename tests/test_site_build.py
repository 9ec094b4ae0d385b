"""tools/site.py without a browser: a translation cannot publish HTML the English lacks (I18N-3),
and a formula latex2mathml cannot convert is counted and fails the build (SITE-3). The site is
built from a one-notebook course in a temporary folder (no explorer: no frames, no torch)."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest

from tools import i18n, site

ATTACK = "<img src=x onerror=alert(1)><script>alert(2)</script>"
BAD_TEX = r"\frac{1}{"  # latex2mathml raises on it


class _Tags(HTMLParser):
    """The elements a browser would make of a page, by tag name."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


def tags(page: str) -> list[str]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


def _course(tmp_path: Path, prose: str, msgstrs: dict[str, str]) -> Path:
    """notebooks/01_x.ipynb (one markdown cell ``prose``), its catalog translated with
    ``msgstrs`` (msgid -> msgstr) and notebooks/zh/01_x.ipynb generated from it."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = folder / "01_x.ipynb"
    cell = {"cell_type": "markdown", "id": "a", "metadata": {}, "source": [prose]}
    raw = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    nb.write_text(json.dumps(raw), encoding="utf-8")
    catalogs = tmp_path / "LC_MESSAGES"
    path = i18n.extract(nb, catalogs, notebooks=folder)
    po = polib.pofile(str(path), wrapwidth=0)
    for msgid, msgstr in msgstrs.items():
        po.find(msgid).msgstr = msgstr
    path.write_text(str(po) + "\n", encoding="utf-8")
    i18n.generate(nb, catalogs, folder / "zh")
    return folder


def _cells(nb: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]]


PROSE = (
    "# 01 · Weights\n\nThe weights sum to 1.\n\n"
    "<details><summary>Answer</summary>\n\nYes.\n\n</details>\n"
)
CHINESE = {
    "01 · Weights": "01 · 权重" + ATTACK,
    "The weights sum to 1.": "权重之和为 1。" + ATTACK,
    "<details><summary>Answer</summary>": "<details><summary>答案</summary>",
    "Yes.": "是。",
}


def test_a_translation_carrying_html_renders_it_as_text(tmp_path):
    folder = _course(tmp_path, PROSE, CHINESE)
    allowed = site.english_html(folder)
    [zh] = _cells(folder / "zh" / "01_x.ipynb")
    assert ATTACK in zh  # the generated notebook holds it: the site is the gate
    out = site.markdown_html(zh, allowed)
    assert "script" not in tags(out) and "img" not in tags(out)
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in out  # shown, not dropped
    # The English's own HTML still passes, in both languages.
    assert tags(out).count("details") == tags(out).count("summary") == 1
    [en] = _cells(folder / "01_x.ipynb")
    assert site.markdown_html(en, allowed) == site._parser().render(en)
    title = site.inline_html(zh.splitlines()[0].lstrip("# "), allowed)
    assert "script" not in tags(title) and "img" not in tags(title)


@pytest.mark.parametrize(
    "block",
    [
        "<script>alert(1)</script>",
        '<details onclick="alert(1)"><summary>答案</summary>',
        "<details><summary>答案</summary><img src=x onerror=alert(1)>",
        "<details><summary>答案</summary>\n<img src=x\nonerror=alert(1) ",  # the page closes it
    ],
)
def test_an_html_block_the_english_lacks_is_shown_as_text(block):
    allowed = frozenset({"<details>", "<summary>", "</summary>", "</details>"})
    out = site.markdown_html(block + "\n\nNext.\n", allowed)
    assert out.startswith(html.escape(block))
    assert tags(out + "</section>") == ["p"]  # "Next." only: the block is text


def test_the_built_chinese_page_holds_no_html_the_english_lacks(tmp_path, monkeypatch):
    out = _build(tmp_path, monkeypatch, PROSE, CHINESE)
    for page in ("zh/01_x.html", "zh/index.html", "01_x.html", "index.html"):
        found = tags((out / page).read_text(encoding="utf-8"))
        assert "script" not in found and "img" not in found, page
    assert "details" in tags((out / "zh" / "01_x.html").read_text(encoding="utf-8"))


def _build(tmp_path, monkeypatch, prose, msgstrs) -> Path:
    folder = _course(tmp_path, prose, msgstrs)
    monkeypatch.setattr(site, "NOTEBOOKS", folder)
    monkeypatch.setitem(site.LANGUAGES["en"], "notebooks", folder)
    monkeypatch.setitem(site.LANGUAGES["zh"], "notebooks", folder / "zh")
    out = tmp_path / "site"
    assert site.main(["build", "--out", str(out)]) in (0, 1)
    return out


def test_a_formula_shown_as_tex_is_counted_and_fails_the_build(tmp_path, monkeypatch, capsys):
    prose = f"# 01 · Bad\n\nA formula ${BAD_TEX}$ and a good one $x^2$.\n"
    out = _build(tmp_path, monkeypatch, prose, {})
    report = json.loads((out / "report.json").read_text())
    assert report["tex_fallbacks"] == {BAD_TEX: ["01_x", "zh/01_x"]}
    captured = capsys.readouterr()
    assert "TeX shown as code: 1 formula(s), 1 not allowed" in captured.out
    assert f"cannot convert ${BAD_TEX}$" in captured.err
    assert site.main(["build", "--out", str(out)]) == 1

    monkeypatch.setattr(site, "TEX_FALLBACK_ALLOWED", frozenset({BAD_TEX}))
    assert site.main(["build", "--out", str(out)]) == 0
    assert "1 formula(s), 0 not allowed" in capsys.readouterr().out


def test_a_build_whose_formulas_all_convert_reports_none(tmp_path, monkeypatch, capsys):
    out = _build(tmp_path, monkeypatch, "# 01 · Good\n\nA formula $x^2$.\n", {})
    assert json.loads((out / "report.json").read_text())["tex_fallbacks"] == {}
    assert "0 formula(s), 0 not allowed" in capsys.readouterr().out
    assert site.main(["build", "--out", str(out)]) == 0
