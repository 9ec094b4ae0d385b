"""The key pictures and the tables attnlib prints speak the reader's language (issue 32).

Every figure of ``python -m attnlib.figures`` drawn in Chinese: no glyph is missing (matplotlib's
warnings and log, captured), no text artist holds an English word (a small explicit allow-list of
symbols, code names and the demo's tokens), and the picture differs from the English one (its
texts and its pixels). The English pictures are the committed ones (tests/test_figures.py). The
printed tables: in Chinese their header and row names are Chinese, their numbers those of English.
"""

from __future__ import annotations

import logging
import re
import unicodedata
import warnings

import numpy as np
import pytest

import attnlib
from attnlib.util import i18n

matplotlib = pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attnlib.figures import FIGURES, RC, _rc, write_figures  # noqa: E402
from attnlib.figures.__main__ import main as figures_main  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
#: What matplotlib says when a glyph is missing (logging: mathtext/fonts; warnings: the Agg text).
MISSING = re.compile(r"does not have a glyph|Glyph .* missing", re.S)
#: Words allowed in a Chinese figure: symbols, code names, units, names, and the demo's tokens
#: (data, not words: notebook 06's sentence). Words of one or two letters (q, k, ms, SE, Dh) and
#: names with digits or underscores (W_Q, valid_len, float32, x_i) are code, never checked.
ALLOWED = {
    "token",  # the glossary keeps it English
    "softmax",
    "Softmax",
    "padding",  # the glossary's "padding mask" stays English
    "mask",
    "True",
    "RNN",
    "CNN",
    "Nadaraya",
    "Watson",
    "diag",
    "Var",
    "log",
    "sin",
    "cos",
    "pos",
    "MiB",
    "nats",  # the unit of entropy, as the notebooks write it
    "the",
    "cat",
    "sat",
    "mat",
}


def english_words(text: str) -> list[str]:
    """The English words of ``text``: runs of >= 3 ASCII letters that are not part of a code name
    (no digit, no underscore next to them), not a TeX command (``\\mathdefault`` of log-axis tick
    labels) and not allowed."""
    return [
        w
        for w in re.findall(r"[A-Za-z0-9_]+", re.sub(r"\\[A-Za-z]+", " ", text))
        if re.fullmatch(r"[A-Za-z]{3,}", w) and w not in ALLOWED
    ]


@pytest.fixture(autouse=True)
def _english_after():
    yield
    attnlib.set_language("en")


def _draw(name: str, lang: str):
    """Figure ``name`` drawn in ``lang`` as write_figures draws it; returns (texts, pixels, what
    matplotlib warned or logged about glyphs)."""
    heard: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record):
            heard.append(record.getMessage())

    handler = Catch(level=logging.DEBUG)
    log = logging.getLogger("matplotlib")
    old = log.level
    log.addHandler(handler)
    log.setLevel(logging.WARNING)
    try:
        with attnlib.language(lang), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with matplotlib.rc_context(_rc()):
                fig = FIGURES[name]()
                canvas = FigureCanvasAgg(fig)
                canvas.draw()
                pixels = np.asarray(canvas.buffer_rgba()).copy()
        heard += [str(w.message) for w in caught]
    finally:
        log.removeHandler(handler)
        log.setLevel(old)
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]
    return texts, pixels, [h for h in heard if MISSING.search(h)]


def test_the_glyph_check_hears_a_missing_glyph():
    # the guard itself: Chinese drawn with DejaVu Sans only must be reported
    fig = Figure()
    fig.text(0.5, 0.5, "注意力")
    heard = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
            FigureCanvasAgg(fig).draw()
        heard += [str(w.message) for w in caught]
    assert any(MISSING.search(h) for h in heard), heard


def test_english_words_finds_words_and_spares_code():
    assert english_words("weights (hidden: hatched)") == ["weights", "hidden", "hatched"]
    assert english_words("权重 α(x, x_i)，σ = 0.2; W_Q, float32, d_k, q·k, Dh") == []
    assert english_words("$\\mathdefault{2^{10}}$") == []


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_chinese_figure_has_every_glyph_no_english_word_and_differs_from_english(name):
    en_texts, en_pixels, en_missing = _draw(name, "en")
    zh_texts, zh_pixels, zh_missing = _draw(name, "zh_CN")
    assert en_missing == [] and zh_missing == []
    assert {t: english_words(t) for t in zh_texts if english_words(t)} == {}
    assert any(CJK.search(t) for t in zh_texts)
    assert any(english_words(t) for t in en_texts)  # it has words, so the two must differ:
    assert zh_texts != en_texts
    assert en_pixels.shape == zh_pixels.shape and (en_pixels != zh_pixels).any()
    # the same artists in both: only words changed, no number did
    assert len(zh_texts) == len(en_texts)
    assert _numbers(" ".join(zh_texts)) == _numbers(" ".join(en_texts))


def test_english_settings_are_unchanged_and_chinese_adds_only_the_fallback():
    assert _rc() is RC
    with attnlib.language("zh_CN"):
        zh = _rc()
    assert zh["font.family"] == [*RC["font.family"], attnlib.util.fonts.FONT_FAMILY]
    assert {k: v for k, v in zh.items() if k != "font.family"} == {
        k: v for k, v in RC.items() if k != "font.family"
    }


def test_cli_writes_chinese_pictures_and_restores_the_language(tmp_path, capsys):
    assert figures_main(["--lang", "zh_CN", "--out", str(tmp_path / "zh"), "worked_example"]) == 0
    assert attnlib.get_language() == "en"
    written = sorted(p.name for p in (tmp_path / "zh").iterdir())
    assert written == ["worked_example.png", "worked_example.svg"]
    svg = (tmp_path / "zh" / "worked_example.svg").read_bytes()
    en = write_figures(str(tmp_path / "en"), ["worked_example"])
    assert (tmp_path / "en" / "worked_example.png").read_bytes() != (
        tmp_path / "zh" / "worked_example.png"
    ).read_bytes()
    assert len(en) == 2 and svg != (tmp_path / "en" / "worked_example.svg").read_bytes()


def test_cli_language_defaults_to_the_current_one(tmp_path):
    with attnlib.language("zh_CN"):
        figures_main(["--out", str(tmp_path / "a"), "worked_example"])
        assert attnlib.get_language() == "zh_CN"
    figures_main(["--lang", "zh_CN", "--out", str(tmp_path / "b"), "worked_example"])
    a, b = (tmp_path / d / "worked_example.png" for d in "ab")
    assert a.read_bytes() == b.read_bytes()


def test_cli_refuses_a_language_it_does_not_speak(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        figures_main(["--lang", "fr", "--out", str(tmp_path), "worked_example"])
    assert e.value.code == 2
    assert "--lang: lang='fr' is not a language attnlib speaks" in capsys.readouterr().err
    assert not any(tmp_path.iterdir()) and attnlib.get_language() == "en"


# ---------------------------------------------------------------------------------------------
# Drawing functions a notebook calls directly: their default words follow the language.


def test_plotting_defaults_are_said_in_the_current_language():
    from attnlib import plotting

    def drawn(lang):
        with attnlib.language(lang):
            fig = Figure()
            a, b, c = fig.subplots(1, 3)
            plotting.heatmap(np.eye(2), ax=a, colorbar=False)
            plotting.weight_bars([0.5, 0.5], ax=b)
            plotting.qkv_points([1.0, 0.0], [[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]], ax=c)
            return [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]

    en, zh = drawn("en"), drawn("zh_CN")
    assert "Attention weights" in en and "query position i" in en and "hull of values" in en
    assert i18n.gettext_in("zh_CN", "Attention weights") in zh
    assert {t: english_words(t) for t in zh if english_words(t)} == {}


def test_measured_cost_legends_are_translated_but_rows_keep_their_keys():
    from attnlib.course.measured_costs import CostRow
    from attnlib.figures.sequence_costs import measured_cost_panels

    rows = [
        CostRow(layer, n, 1e-3 * n, 4 * n * n, 4 * n * n, n)
        for n in (64, 128)
        for layer in ("self-attention", "RNN", "CNN")
    ]
    with attnlib.language("zh_CN"):
        fig = Figure()
        lines = measured_cost_panels(rows, fig.subplots(1, 2))
    labels = {k: line.get_label() for k, line in lines.items()}
    assert labels["self-attention", "time"] == "自注意力" and labels["RNN", "memory"] == "RNN"
    assert lines["self-attention", "time"].get_color() == "C3"  # the style found by its key


# ---------------------------------------------------------------------------------------------
# Printed tables: Chinese words, the same numbers, still aligned.

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)", re.I)


def _numbers(text: str) -> list[str]:
    return NUMBER.findall(text)


def _columns(line: str) -> list[int]:
    """Screen columns where each cell of a ``format_cases`` line starts (cells are apart by two
    or more spaces; a CJK character takes two columns)."""
    starts, col = [], 0
    for i, ch in enumerate(line):
        if ch != " " and (i == 0 or line[max(0, i - 2) : i] == "  "):
            starts.append(col)
        col += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return starts


@pytest.mark.parametrize("what", ["verdict", "weights", "fill"])
def test_pitfall_table_in_chinese_has_chinese_words_and_the_english_numbers(what):
    from attnlib.course.pitfalls import format_cases, fully_masked_row_cases

    cases = fully_masked_row_cases((2.0, 0.5, -1.0, 1.0))
    en = format_cases(cases, what=what)
    with attnlib.language("zh_CN"):
        zh = format_cases(cases, what=what)
    assert _numbers(zh) == _numbers(en)
    en_lines, zh_lines = en.splitlines(), zh.splitlines()
    assert len(zh_lines) == len(en_lines)
    assert zh_lines[0].startswith(i18n.gettext_in("zh_CN", "recipe"))
    allowed = {"attnlib", "NaN", "nan", "inf", "finfo", "dtype", "min"}
    for line in zh_lines:
        assert [w for w in english_words(line) if w not in allowed] == [], line
    # every row but attnlib's own (a code name) names its recipe in Chinese
    names = [re.split(r"  +", line)[0] for line in zh_lines[2:]]
    assert [bool(CJK.search(n)) for n in names] == [not n.startswith("attnlib") for n in names]
    # aligned on screen: each cell starts in the column of its dashes
    dashes = _columns(zh_lines[1])
    for line in [zh_lines[0], *zh_lines[2:]]:
        assert set(_columns(line)) <= set(dashes), line


def test_complexity_table_names_its_layers_in_chinese_and_keeps_its_keys():
    from attnlib.course.costs import complexity_table

    en = complexity_table()
    with attnlib.language("zh_CN"):
        zh = complexity_table()
        shown = [f"{r['layer']:15s} {r['compute']:11s} {r['longest_path']}" for r in zh]
        said = [str(r["layer"]) for r in zh]
    assert said == ["CNN", "RNN", "自注意力"]  # as the seed's table (004 §9.13) writes them
    assert [r["layer"] for r in zh] == [r["layer"] for r in en] == ["CNN", "RNN", "self-attention"]
    assert {r["layer"]: r for r in zh}["self-attention"]["longest_path"] == "O(1)"
    assert [{k: v for k, v in r.items() if k != "layer"} for r in zh] == [
        {k: v for k, v in r.items() if k != "layer"} for r in en
    ]
    assert shown[2].startswith("自注意力 ") and [_numbers(s) for s in shown] == [
        _numbers(f"{r['layer']:15s} {r['compute']:11s} {r['longest_path']}") for r in en
    ]
    assert repr(zh[2]["layer"]) == "'self-attention'"  # code sees the key


def test_cli_default_language_comes_from_the_environment(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, i18n.ENV: "zh_CN"}
    out = tmp_path / "env"
    subprocess.run(
        [sys.executable, "-m", "attnlib.figures", "--out", str(out), "worked_example"],
        env=env,
        cwd=root,
        check=True,
        capture_output=True,
    )
    figures_main(["--lang", "zh_CN", "--out", str(tmp_path / "flag"), "worked_example"])
    assert (out / "worked_example.png").read_bytes() == (
        tmp_path / "flag" / "worked_example.png"
    ).read_bytes()


def test_a_shown_key_is_its_key_for_code_and_its_name_for_the_reader():
    from attnlib.course._shown import ShownKey

    key = ShownKey("self-attention")
    with attnlib.language("zh_CN"):
        assert key == "self-attention" and {"self-attention": 1}[key] == 1
        assert str(key) == "自注意力" and repr(key) == "'self-attention'"
        # a width counts screen columns: 4 wide characters take 8 of the 15
        assert f"{key:15s}|" == "自注意力" + " " * 7 + "|"
        assert f"{key:>10}" == "  自注意力" and f"{key}" == "自注意力"
    assert f"{key:15s}|" == "self-attention |" and str(key) == "self-attention"
    assert f"{ShownKey('RNN'):5s}|" == "RNN  |"
