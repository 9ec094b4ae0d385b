"""An explorer's words on the static site, its frames computed once (``tools/site_words.py``).

Without a browser and without the whole site: a small explorer made here (a control, a menu, a
Text artist whose frame text is a formatted catalog message, a readout key) is built for both
languages through :func:`tools.site.explorer_frames`, the path every page takes. The references:
the catalog (``gettext_in``: what the Chinese must say), the English spec computed with no
recording and no other language (what the English page said before), and ``decode_blob`` (the
frames are one blob for both). The words ``site.js`` says come from :data:`tools.site.LANGUAGES`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tools import site, site_state

ROOT = Path(__file__).resolve().parents[1]
ZH = "zh_CN"


def _tiny(keys=("k1", "k2"), *, zh_extra_control=False, zh_other_kind=False):
    """Bars of two weights moved by a slider; a Text artist saying ``length of k? (×)`` (a message
    with a field, formatted in every frame); a menu with a word option; a readout key."""
    from attnlib.util.i18n import N_, _, get_language
    from attnlib.widgets.framework.artists import Bars, Text
    from attnlib.widgets.framework.controls import dropdown, float_slider
    from attnlib.widgets.framework.explorer import Explorer
    from attnlib.widgets.framework.scene import Frame, Panel, Scene

    zh = get_language() == ZH
    controls = {
        "x": float_slider(_("query x"), 0.0, 1.0, 0.5, step=0.25, readout_format=".2f"),
        "which": dropdown(_("weights"), [(_("query"), 0), (_("output"), 1)], 0),
    }
    if zh and zh_extra_control:
        controls["y"] = float_slider(_("query y"), 0.0, 1.0, 0.5, step=0.25)

    def compute(x, which, y=0.5):
        w = np.array([x, 1.0 - x]) if which == 0 else np.array([1.0 - x, x])
        top = keys[int(np.argmax(w))]
        return Frame(
            arrays={"w": w},
            readout={N_("weights"): w},
            # an empty text when x is 0: not a message (gettext("") is the catalog's header)
            texts={"t": _("length of {key} (×)", key=top) if x else ""},
        )

    kind = Bars("w") if not (zh and zh_other_kind) else Text(0.5, 0.5, key="t")
    scene = Scene(
        [
            Panel(
                [kind, Text(0.2, 0.9, key="t")],
                xlim=(-0.6, 1.6),
                ylim=(0, 1),
                title=_("softmax weights"),
                xlabel=_("first component"),
            )
        ],
        width=300,
        height=200,
    )
    return Explorer(controls, compute, scene)


@pytest.fixture
def tiny(monkeypatch):
    from attnlib.widgets import BUILDERS
    from attnlib.widgets.framework.builder import builder

    def register(**kw):
        build = builder("tiny_words")(lambda: _tiny(**kw))

        def with_words():
            from attnlib.util.i18n import _

            ex = build()
            # the screen reader's sentences (traits["words"]), set over the builder's own
            ex.view.words = {"name": _("softmax weights")}
            return ex

        monkeypatch.setitem(BUILDERS, "tiny_words", with_words)

    register()
    return register


def _specs(name="tiny_words", args=None):
    (specs, packed), _ = site.explorer_frames(name, args or {}, ("en", "zh"))
    return {k: json.loads(v) for k, v in specs.items()}, packed


def _without_words(spec: dict) -> dict:
    """``spec`` with its words taken out (what must be the same in both languages)."""
    out = json.loads(json.dumps(spec))
    for c in out["controls"]:
        c["label"] = c["labels"] = None
    for s in out["template"]["readout"]:
        s["name"] = None
    out["traits"]["scene"].pop("font", None)
    out["traits"]["scene"]["panels"] = [
        {k: v for k, v in p.items() if k not in ("title", "xlabel")}
        for p in out["traits"]["scene"]["panels"]
    ]
    out["texts_table"] = out["strings_table"] = None
    out["traits"].pop("words", None)
    return out


def test_the_chinese_spec_says_the_catalogs_words_over_the_same_frames(tiny):
    from attnlib.util.fonts import CANVAS_FONTS
    from attnlib.util.i18n import gettext_in

    specs, packed = _specs()
    en, zh = specs["en"], specs["zh"]
    said = {
        m: gettext_in(ZH, m) for m in ("query x", "weights", "query", "output", "first component")
    }
    assert all(said[m] != m for m in said), said  # the catalog translates each (a real check)
    assert [c["label"] for c in zh["controls"]] == [said["query x"], said["weights"]]
    assert zh["controls"][1]["labels"] == [said["query"], said["output"]]
    assert [s["name"] for s in zh["template"]["readout"]] == [said["weights"]]
    [panel] = zh["traits"]["scene"]["panels"]
    assert (panel["title"], panel["xlabel"]) == (
        gettext_in(ZH, "softmax weights"),
        said["first component"],
    )
    assert zh["traits"]["scene"]["font"] == CANVAS_FONTS[ZH]
    assert en["traits"]["words"] == {"name": "softmax weights"}
    assert zh["traits"]["words"] == {"name": gettext_in(ZH, "softmax weights")}
    # the frame-time texts, re-said from the English recording: the catalog's message, its field
    # formatted in (the same key as the English frame's)
    form = gettext_in(ZH, "length of {key} (×)")
    assert form != "length of {key} (×)"
    want = [
        [form.format(key=re.search(r"of (k\d)", t).group(1)) if t else "" for t in row]
        for row in en["texts_table"]
    ]
    assert zh["texts_table"] == want and len(want) == 3  # k1 and k2 lead in some frames
    assert [""] in want
    assert en["texts_table"] != zh["texts_table"]
    # one computation: one blob, read the same through either spec; all else but words equal
    assert _without_words(en) == _without_words(zh)
    a, b = (
        site_state.decode_blob(en, _inflate(packed)),
        site_state.decode_blob(zh, _inflate(packed)),
    )
    for x in range(en["controls"][0]["values"].__len__()):
        fa, fb = a.frame({"x": x, "which": 1}), b.frame({"x": x, "which": 1})
        assert np.array_equal(fa["readout"], fb["readout"])
        assert np.array_equal(fa["arrays"]["w"], fb["arrays"]["w"])


def _inflate(packed: str) -> bytes:
    import base64
    import gzip

    return gzip.decompress(base64.b64decode(packed))


def test_the_english_spec_is_the_one_computed_without_other_languages():
    # what an English page says is the spec of explorer_state_space alone (as before issue 32)
    from attnlib.util.i18n import language

    with language("en"):
        alone, blob = site_state.explorer_state_space("jacobian", {})
    (specs, packed), _ = site.explorer_frames("jacobian", {}, ("en", "zh"))
    assert specs["en"] == site._spec_json(alone)
    assert _inflate(packed) == blob
    zh = json.loads(specs["zh"])
    assert _without_words(json.loads(specs["en"]))["layout"] == _without_words(zh)["layout"]


@pytest.mark.parametrize(
    ("kw", "where"),
    [
        ({"zh_extra_control": True}, "its controls are ['x', 'which'] in English"),
        ({"zh_other_kind": True}, "traits.scene.panels[0].artists[0]"),
    ],
)
def test_another_explorer_in_the_other_language_fails_the_build_naming_it(tiny, kw, where):
    tiny(**kw)
    with pytest.raises(site.SiteError, match=r"the tiny_words explorer") as e:
        _specs()
    assert where in str(e.value) and "zh_CN" in str(e.value)


def test_site_js_says_nothing_itself_the_page_gives_it_its_words():
    js = (ROOT / "tools" / "site_assets" / "site.js").read_text(encoding="utf-8")
    code = re.sub(r"^\s*//.*$", "", js, flags=re.M)  # its comments may name things
    assert not re.search(r"[\u3000-\u9fff\uff00-\uffef]", js), "Chinese in site.js"
    assert 'startsWith("zh")' not in code and "lang" not in code, "a language branch in site.js"
    for lang, table in site.LANGUAGES.items():
        words = table["site_words"]
        for text in [words["fixed"], words["greyed"], words["failed"], *words["sr"].values()]:
            assert text.strip() not in js, (lang, text)
        page = site._document("t", "", script=True, lang=lang)
        found = re.search(r'<script type="application/json" id="site-words">(.*?)</script>', page)
        assert found and json.loads(found.group(1)) == words
    assert set(site.LANGUAGES["en"]["site_words"]) == set(site.LANGUAGES["zh"]["site_words"])
