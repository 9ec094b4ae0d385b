"""Every explorer speaks the reader's language (issue 32): built in Chinese, no English word is left
in what it shows (controls, menus, titles, axes, legends, texts, readout names, the screen
reader's words, the strings of its frames); the numbers of its frames are the English ones; a
static page can re-say each frame string from a recording made in English; and the English
explorers say what they said before (the English is the msgids: nothing is looked up)."""

from __future__ import annotations

import html
import json
import logging
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import attnlib
from attnlib.util import i18n
from attnlib.util.fonts import CANVAS_FONTS
from attnlib.widgets import BUILDERS
from attnlib.widgets.framework.frames import is_slider, readout_spec, slider_axis
from attnlib.widgets.framework.readout import to_py

JS = Path(attnlib.__file__).parent / "widgets" / "framework" / "explorer.js"

#: Names written as they are in every language (stripped before the words are read).
NAMES = ("all-MiniLM-L6-v2", "Nadaraya–Watson", "attnlib masked_softmax")
#: Words that are symbols, functions, units or code names, not English (STYLE.md keeps them).
ALLOWED = {
    "softmax", "Softmax", "token", "NaN", "inf", "dtype", "finfo", "min", "max", "sin", "cos",
    "exp", "log", "mod", "diag", "Var", "MSE", "PE", "pos", "Dh", "CLS", "SEP", "nats", "logit",
}  # fmt: skip
#: Extra control settings per builder where the frame strings differ (e.g. a fully hidden row).
EXTRA = {
    "masking": [
        {"len0": 0, "recipe": r, "dtype": d}
        for r in ("add M = -inf (plain softmax)", "add M = -1e9", "replace by -1e6 (d2l)")
        for d in ("float32", "float16")
    ]
    + [{"len0": 0, "len1": 0, "causal": True}],
    "decoding": [{"step": 5}, {"step": 6}],
    "online_softmax": [{"block_size": 1}],
}


def _english_words(text: str, data: set[str]) -> list[str]:
    """The English words of ``text``: runs of letters, apart from names, fields ``{name}``, code
    (a token with ``_`` or a digit: ``d_k``, ``k1``, ``float32``), single letters (symbols), the
    allowed words and the words of the explorer's own input data (sentences, tokens)."""
    text = re.sub(r"\{[^{}]*\}|<[^<>]*>", " ", text)
    for name in NAMES:
        text = text.replace(name, " ")
    words = re.findall(r"[A-Za-z][A-Za-z0-9_]*", text)
    return [
        w
        for w in words
        if w.isalpha() and len(w) > 1 and w not in ALLOWED and w.lower() not in data
    ]


def _data_words(ex) -> set[str]:
    """The words of the builder's string arguments (head view's sentences, the heads' tokens):
    input the model reads, not text the explorer writes."""
    out: set[str] = set()

    def walk(x):
        if isinstance(x, str):
            out.update(w.lower() for w in re.findall(r"[A-Za-z]+", x))
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)

    walk(ex.args)
    return out


def _settings(name: str, ex) -> list[dict]:
    """The default values, each slider at both ends, each menu entry, each toggle flipped."""
    out: list[dict] = [{}]
    for n, c in ex.controls.items():
        if is_slider(c):
            values = slider_axis(c).values
            out += [{n: values[0]}, {n: values[-1]}]
        elif hasattr(c, "_options_values"):
            out += [{n: v} for v in c._options_values]
        elif isinstance(c.value, bool):
            out.append({n: not c.value})
    return out + EXTRA.get(name, [])


def _shown(ex) -> list[str]:
    """Every string the built explorer shows, frames aside."""
    out = []
    for c in ex.controls.values():
        out.append(c.description)
        out += list(getattr(c, "_options_labels", ()) or ())
    scene = ex.scene.to_json()
    for p in scene["panels"]:
        out += [p["title"], p["xlabel"], p["ylabel"], *p["xticklabels"], *p["yticklabels"]]
        for a in p["artists"]:
            out += [a[k] for k in ("label", "text") if isinstance(a.get(k), str)]
            out += [s for s in a.get("labels") or () if isinstance(s, str)]
    out += [  # the heading above the controls, as its text
        html.unescape(re.sub(r"<[^<>]*>", "", w.value))
        for w in ex.widget.children
        if isinstance(getattr(w, "value", None), str)
    ]
    out += [s["name"] for s in readout_spec(ex.frame())]
    out += list(ex.words.values())
    return out


def _frame_strings(frame) -> list[str]:
    strings = [v for v in (to_py(x) for x in frame.readout.values()) if isinstance(v, str)]
    return strings + list(frame.texts.values())


def _numbers(frame) -> tuple:
    arrays = {k: np.asarray(to_py(v), dtype=np.float64) for k, v in frame.arrays.items()}
    readout = {
        str(k): np.asarray(v, dtype=np.float64)
        for k, v in ((k, to_py(x)) for k, x in frame.readout.items())
        if not isinstance(v, str)
    }
    return arrays, readout


@pytest.fixture(scope="module")
def built():
    """Each builder built in English (inside a recording, as the static site does) and in
    Chinese, with the frames of its settings: ``{name: (en, zh, recording)}``."""
    out = {}
    try:
        for name, build in BUILDERS.items():
            with attnlib.language("en"), i18n.recording() as rec:
                en = build()
                settings = _settings(name, en)
                en_frames = [en.compute(**s) for s in settings]
                en_shown = _shown(en)
            with attnlib.language("zh_CN"):
                zh = build()
                zh_frames = [zh.compute(**s) for s in settings]
                zh_shown = _shown(zh)
            out[name] = {
                "en": en,
                "zh": zh,
                "rec": rec,
                "settings": settings,
                "frames": list(zip(en_frames, zh_frames)),
                "en_shown": en_shown,
                "zh_shown": zh_shown,
            }
    finally:
        attnlib.set_language("en")
    return out


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_chinese_explorer_shows_no_english_word(built, name):
    b = built[name]
    data = _data_words(b["zh"])
    texts = b["zh_shown"] + [s for _en, zh in b["frames"] for s in _frame_strings(zh)]
    left = {s: _english_words(s, data) for s in texts}
    assert {s: w for s, w in left.items() if w} == {}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_frames_have_the_same_numbers_and_keys_in_both_languages(built, name):
    for en, zh in built[name]["frames"]:
        assert list(map(str, en.readout)) == list(map(str, zh.readout))  # keys code reads stay
        assert sorted(en.texts) == sorted(zh.texts)
        (ea, er), (za, zr) = _numbers(en), _numbers(zh)
        assert ea.keys() == za.keys() and er.keys() == zr.keys()
        for k in ea:
            np.testing.assert_array_equal(ea[k], za[k], err_msg=f"{name}: array {k}")
        for k in er:
            np.testing.assert_array_equal(er[k], zr[k], err_msg=f"{name}: readout {k}")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_static_page_can_say_every_frame_string_in_chinese(built, name):
    # the site computes the frames once, in English, and re-says their strings (tools/site.py)
    rec = built[name]["rec"]
    for en, zh in built[name]["frames"]:
        said = [rec.translate(s, "zh_CN") for s in _frame_strings(en)]
        assert said == _frame_strings(zh)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_english_is_the_msgids_and_the_canvas_font_is_as_before(built, name):
    en = built[name]["en"]
    scene = en.scene.to_json()
    assert scene["font"] == "sans-serif" == CANVAS_FONTS["en"]  # what explorer.js wrote before
    assert built[name]["zh"].scene.to_json()["font"] == CANVAS_FONTS["zh_CN"]
    assert CANVAS_FONTS["zh_CN"].startswith('"Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei"')
    # each English string is the msgid of the Chinese one at its place (or the same symbols)
    rec = built[name]["rec"]
    pairs = list(zip(built[name]["en_shown"], built[name]["zh_shown"], strict=True))

    # (a label padded with a space off the panel's edge is the message and its padding)
    def said(e, z):
        return rec.translate(e, "zh_CN") == z or rec.translate(e.strip(), "zh_CN") == z.strip()

    unsaid = [(e, z) for e, z in pairs if not said(e, z)]
    assert unsaid == []
    assert not any(re.search(r"[\u4e00-\u9fff]", e) for e, _z in pairs)
    # the readout names are the keys themselves
    assert [s["name"] for s in readout_spec(en.frame())] == list(map(str, en.frame().readout))
    # the English words are the front end's own fallback, and the shown name is the builder's
    words = en.words
    js = JS.read_text()
    table = re.search(r"const WORDS = \{(.*?)\};", js, re.S).group(1)
    fallback = dict(re.findall(r'(\w+): ("[^"]*")', table))
    assert {k: json.loads(v) for k, v in fallback.items()} == {
        k: words[k] for k in ("name", "described", "label", "list")
    }
    assert words["title"] == en.name == name


def test_chinese_words_name_the_explorer_in_chinese(built):
    for name, b in built.items():
        words = b["zh"].words
        assert set(words) == {"name", "described", "label", "list", "title"}
        assert "{name}" in words["name"] and "{panels}" in words["name"]
        assert re.search(r"[\u4e00-\u9fff]", words["title"]), (name, words["title"])
        assert words["title"] == i18n.gettext_in("zh_CN", name)


def test_no_english_left_in_the_canvas_font_calls():
    # every canvas text names the scene's font stack (the language's), not a fixed family
    js = JS.read_text()
    fonts = re.findall(r"ctx\.font = (.*);", js)
    assert fonts and all("m.font" in f for f in fonts), fonts
    assert 'font: scene.font || "sans-serif"' in js


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_chinese_picture_has_every_glyph(built, name, caplog):
    ex = built[name]["zh"]
    with attnlib.language("zh_CN"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with caplog.at_level(logging.WARNING):
            png = ex.png()
    assert png[:4] == b"\x89PNG"
    missing = [str(w.message) for w in caught if "glyph" in str(w.message).lower()]
    missing += [r.getMessage() for r in caplog.records if "glyph" in r.getMessage().lower()]
    assert missing == []


def test_masking_picture_caption_in_chinese():
    from attnlib.widgets.explorers.masking import LEGEND, masking_explorer, masking_picture

    with attnlib.language("zh_CN"):
        ex = masking_explorer()
        fig = masking_picture(ex, len0=0)
        texts = [t.get_text() for t in fig.texts] + [ax.get_title() for ax in fig.axes]
    assert i18n.gettext_in("zh_CN", LEGEND) in texts
    assert [w for t in texts for w in _english_words(t, set())] == []


def test_an_empty_text_stays_empty_in_every_language():
    # gettext("") is the catalog's header: an empty frame text (a head that exists) must not
    # become the header on a Chinese page
    with i18n.recording() as rec:
        pass
    assert rec.translate("", "zh_CN") == "" == i18n.gettext_in("zh_CN", "")
    with attnlib.language("zh_CN"):
        assert i18n.gettext("") == ""


def test_every_masking_verdict_a_static_page_may_show_is_said_in_chinese():
    # the verdicts of one batch row can come several together: each such string is one message
    from attnlib.widgets.explorers.masking import DTYPES, RECIPES, masking_explorer

    grid = [
        dict(len0=n, len1=n, len2=n, causal=c, recipe=r, dtype=d)
        for r in RECIPES
        for d in DTYPES
        for c in (False, True)
        for n in range(7)
    ]
    with attnlib.language("en"), i18n.recording() as rec:
        en = masking_explorer()
        said = [[v for v in en.state(**g).values() if isinstance(v, str)] for g in grid]
    with attnlib.language("zh_CN"):
        zh = masking_explorer()
        shown = [[v for v in zh.state(**g).values() if isinstance(v, str)] for g in grid]
    assert any(" / " in s for row in said for s in row)  # several verdicts together do occur
    resaid = [[rec.translate(s, "zh_CN") for s in row] for row in said]
    assert resaid == shown
    assert not [s for row in shown for s in row if _english_words(s, set())]
