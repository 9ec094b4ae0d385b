"""Everything a Chinese student sees on the static site is Chinese (issue 32), explorers included.

On the built site (the session's ``site`` fixture, ``tools/site.py``): for every explorer of every
``site/zh/`` page, every string its spec shows (control labels and menu options, the scene's
titles, axis and tick labels, legends and texts, the readout's names and column heads, the
frame-time texts and string readouts, the screen-reader sentences) and the words the page gives
``site.js`` hold no English word: a word of two or more Latin letters that is not a symbol
(``q``, ``k1``, ``d_k``, ``a_j``) or one of :data:`ALLOWED` (code names, and the terms the
glossary keeps in English). The test is strict and lists every English string of a page; each
explorer's strings are marked in ``attnlib/widgets/`` (the explorers and the framework's words).

In Chromium, a Chinese page draws its canvas text in the CJK font stack
(``attnlib.util.fonts.CANVAS_FONTS``) and shows Chinese control labels.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from harness import PAGES, chromium, missing_browser, offline_context  # noqa: E402

from tools.site_words import FIXED  # noqa: E402

#: Latin words a Chinese page may show, each kept as the code or the math writes it: code names,
#: the math's names (functions, variables, units), names of people, and the terms
#: locale/zh_CN/glossary.tsv keeps in English.
ALLOWED = frozenset(
    {
        # code names
        *("attnlib", "PyTorch", "MiniLM", "JupyterLab", "d2l", "masked_softmax", "finfo"),
        *("dtype", "float16", "bfloat16", "float32", "float64", "valid_len", "valid_lens"),
        *("NaN", "nan", "inf", "CLS", "SEP"),  # [CLS], [SEP]: MiniLM's special tokens
        # the math: functions, variables and units as the formulas write them
        *("softmax", "Softmax", "logit", "log", "exp", "sin", "cos", "mod", "diag", "max", "min"),
        *("argmax", "Var", "MSE", "QK", "qW_Q", "kW_K", "PE", "pos", "Dh", "nats"),
        *("Nadaraya", "Watson"),  # the Nadaraya–Watson estimator
        # the glossary's English terms
        *("token", "Transformer"),
    }
)
#: Phrases the glossary or the page keeps as they are (a command, English-kept terms).
ALLOWED_PHRASES = ("make lab", "padding mask", "one-hot")
#: A symbol: one letter, digits, a subscript (q, k1, v12, d_k, a_j, J_jr, W_Q).
SYMBOL = re.compile(r"[A-Za-z]\d*(?:_[A-Za-z0-9]+)?")
FIELD = re.compile(r"\{[a-z_]+\}")
LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
SPEC = re.compile(r'<script type="application/json" class="attnlib-spec">(.*?)</script>', re.S)
WORDS = re.compile(r'<script type="application/json" id="site-words">(.*?)</script>', re.S)


def english_words(text: str) -> list[str]:
    """The English words of ``text`` (module doc)."""
    for phrase in ALLOWED_PHRASES:
        text = text.replace(phrase, " ")
    text = FIELD.sub(" ", text)  # a sentence's fields ({name}) are filled in by the page
    return [
        w
        for w in LATIN.findall(text)
        if not SYMBOL.fullmatch(w) and w not in ALLOWED and w.split("_")[0] not in ALLOWED
    ]


def data_words(spec: dict) -> set[str]:
    """The words of the explorer's input text: a string argument of three words or more (the head
    view's English sentences, for an English model) or a list of three strings or more (the
    heads explorer's tokens): data, shown as they are, with the model's tokens of them (word
    pieces included)."""
    texts: list[str] = []

    def walk(x) -> None:
        if isinstance(x, str) and len(x.split()) >= 3:
            texts.append(x)
        elif isinstance(x, list) and len(x) >= 3 and all(isinstance(v, str) for v in x):
            texts.extend(x)
        elif isinstance(x, (list, dict)):
            for v in x.values() if isinstance(x, dict) else x:
                walk(v)

    walk(spec["args"])
    return {w.lower() for s in texts for w in LATIN.findall(s)}


def _english(text: str, data: set[str]) -> list[str]:
    return [w for w in english_words(text) if not any(w.lower() in d for d in data)]


def _strings(x, parent: str = ""):
    """Every string of a JSON value but those under the keys of :data:`FIXED` (structure)."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _strings(v, k)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v, parent)
    elif isinstance(x, str) and parent not in FIXED:
        yield x


def shown_strings(spec: dict) -> list[tuple[str, str]]:
    """``(where, text)`` of every string an explorer's spec shows on its page."""
    out = []
    for c in spec["controls"]:
        out.append((f"control {c['name']}", c["label"]))
        out += [(f"control {c['name']} option", s) for s in c["labels"]]
    scene = {k: v for k, v in spec["traits"]["scene"].items() if k not in ("luts", "bad", "font")}
    out += [("scene", s) for s in _strings(scene)]
    out += [("readout name", s["name"]) for s in spec["template"]["readout"]]
    out += [("readout column", s) for s in spec["traits"]["meta"].get("columns") or []]
    for table in ("texts_table", "strings_table"):
        out += [(table, s) for row in spec[table] for s in row]
    out += [("words", s) for s in _strings(spec["traits"].get("words", {}))]
    return out


def test_english_words_finds_words_and_lets_symbols_and_allowed_names_pass():
    assert english_words("分数除以 √d_k，k1 与 q 的 softmax 权重（QKᵀ）") == []
    assert english_words("用 make lab 运行；padding mask") == []
    assert english_words("weight spread σ") == ["weight", "spread"]
    assert english_words("J (row j = a_j)") == ["row"]
    assert english_words("{name} 交互演示：{panels}") == []
    data = data_words({"args": {"sentences": ["The cat sat on the mat."], "head": "x"}})
    assert _english("The cat sat", data) == [] and _english("##at", data) == []
    assert _english("head 1", data) == ["head"]
    tokens = data_words({"args": {"tokens": ["the", "cat", "sat"], "mode": "causal"}})
    assert _english("the cat", tokens) == [] and _english("causal", tokens) == ["causal"]


@pytest.mark.parametrize("stem", PAGES)
def test_every_explorer_of_every_chinese_page_shows_no_english_word(site, stem):
    page = (site / "zh" / f"{stem}.html").read_text(encoding="utf-8")
    specs = [json.loads(s.replace("<\\/", "</")) for s in SPEC.findall(page)]
    assert specs, f"zh/{stem}: no explorer"
    found = []
    for spec in specs:
        data = data_words(spec)
        for where, text in shown_strings(spec):
            if _english(text, data):
                found.append(f"{spec['builder']}: {where}: {text!r}")
    [words] = WORDS.findall(page)
    for text in _strings(json.loads(words)):
        if english_words(text):
            found.append(f"site.js: {text!r}")
    found = list(dict.fromkeys(found))
    assert not found, f"zh/{stem}: {len(found)} English string(s):\n" + "\n".join(found)


def test_the_chinese_page_shows_the_english_pages_frames_and_words_from_its_tables(site):
    # the Chinese spec is the English one but for its words (tools/site_words.py checked it at
    # build time); its frames are the English page's bytes (one computation)
    from tools import site as site_tool

    for stem in PAGES:
        en = (site / f"{stem}.html").read_text(encoding="utf-8")
        zh = (site / "zh" / f"{stem}.html").read_text(encoding="utf-8")
        frames = r'<script type="application/octet-stream" class="attnlib-frames">([^<]*)</script>'
        assert re.findall(frames, zh) == re.findall(frames, en) != []
        for a, b in zip(SPEC.findall(en), SPEC.findall(zh)):
            a, b = json.loads(a), json.loads(b)
            for k in ("layout", "dims", "keys", "frames", "live", "not_live", "args"):
                assert a[k] == b[k], (stem, k)
        for lang, text in (("en", en), ("zh", zh)):
            [words] = WORDS.findall(text)
            assert json.loads(words) == site_tool.LANGUAGES[lang]["site_words"]


# Every font the page's canvases draw text in, recorded by wrapping fillText before the page runs.
FONTS = """(() => { const P = CanvasRenderingContext2D.prototype, fill = P.fillText;
  window.__fonts = [];
  P.fillText = function (...a) { window.__fonts.push(this.font); return fill.apply(this, a); };
})()"""


# An element's text nodes, one word apart (its textContent would glue a cell to the next).
TEXTS = """e => { const w = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), out = [];
  while (w.nextNode()) out.push(w.currentNode.textContent); return out.join(" "); }"""


@pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))
def test_a_chinese_page_draws_its_canvas_in_the_cjk_font_stack_and_labels_in_chinese(site):
    from attnlib.util.fonts import CANVAS_FONTS

    stem = "01_qkv_roles" if "01_qkv_roles" in PAGES else PAGES[0]
    with chromium() as browser:
        ctx, aborted = offline_context(browser)
        ctx.add_init_script(FONTS)
        page = ctx.new_page()
        page.goto((site / "zh" / f"{stem}.html").as_uri())
        host = page.locator(".site-explorer").first
        host.locator(".attnlib-canvas[data-frames]:not([data-frames='0'])").wait_for(timeout=20_000)
        spec = json.loads(host.locator("script.attnlib-spec").text_content())
        label = host.locator(".site-controls label").first.text_content()
        # what a screen reader and a reader see beside the picture: its name, its readout
        host.scroll_into_view_if_needed()
        page.wait_for_function(
            "() => document.querySelector('.site-explorer .attnlib-readout').textContent.trim()"
        )
        seen = [
            host.locator("canvas").first.get_attribute("aria-label") or "",
            host.locator(".attnlib-readout").evaluate(TEXTS),
            host.locator(".site-controls").evaluate(TEXTS),
        ]
        fonts = page.evaluate("window.__fonts")
        ctx.close()
    assert spec["traits"]["scene"]["font"] == CANVAS_FONTS["zh_CN"]
    assert re.search(r"[\u4e00-\u9fff]", label) and not english_words(label), label
    assert label == html.unescape(spec["controls"][0]["label"])
    assert fonts, f"zh/{stem}: the canvas drew no text"
    stack = CANVAS_FONTS["zh_CN"].split(",")[0].strip()  # "Noto Sans CJK SC", quoted or not
    other = sorted({f for f in fonts if stack.strip('"') not in f})
    assert not other, f"zh/{stem}: canvas text drawn without the CJK stack: {other}"
    assert aborted == []
    assert not [t for t in seen if english_words(t)], seen
