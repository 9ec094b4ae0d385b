"""attnlib speaks the reader's language (attnlib.util.i18n): the package catalog complete and
compiled, the bundled CJK font covering it, and the language chosen in one place."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import attnlib
from attnlib.util import i18n
from tools import catalog, fonts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _english_after():
    yield
    attnlib.set_language("en")


def test_package_catalog_is_complete_faithful_and_compiled():
    assert catalog.problems() == []


def test_compiled_catalog_is_what_babel_writes_from_the_po():
    # independent of tools.catalog.compiled: polib's own .mo writer, read back by gettext
    import gettext
    import io

    import polib

    po = polib.pofile(str(catalog.PO))
    with catalog.MO.open("rb") as f:
        mo = gettext.GNUTranslations(f)
    for entry in po.translated_entries():
        assert mo.gettext(entry.msgid) == entry.msgstr
    assert len(po.untranslated_entries()) == 0 and len(po.fuzzy_entries()) == 0
    assert io.BytesIO(catalog.MO.read_bytes()).read(4) in (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde")


def test_every_catalog_character_is_in_the_bundled_font_or_dejavu():
    from fontTools.ttLib import TTFont
    from matplotlib import font_manager

    have = {chr(c) for c in TTFont(str(fonts.FONT_PATH)).getBestCmap()}
    have |= {chr(c) for c in TTFont(font_manager.findfont("DejaVu Sans")).getBestCmap()}
    assert sorted(fonts.needed_characters() - have) == []


def test_font_ships_with_its_licence():
    text = (fonts.FONT_PATH.parent / "OFL.txt").read_text()
    assert "SIL OPEN FONT LICENSE" in text and "Version 1.1" in text


def test_english_by_default_and_every_marked_message_is_its_own_english():
    assert attnlib.get_language() == "en"
    for msgid in catalog.extracted():
        assert i18n.gettext(msgid) == msgid


def test_set_language_changes_the_next_explorer_and_back():
    from attnlib.widgets.explorers.query import query_explorer

    en = query_explorer().scene.to_json()["panels"][1]["title"]
    assert attnlib.set_language("zh_CN") == "en"
    zh = query_explorer().scene.to_json()["panels"][1]["title"]
    assert zh == i18n.gettext_in("zh_CN", "softmax weights") != en == "softmax weights"
    attnlib.set_language("en")
    assert query_explorer().scene.to_json()["panels"][1]["title"] == en


def test_language_context_restores_the_language_before():
    with attnlib.language("zh"):
        assert attnlib.get_language() == "zh_CN"
    assert attnlib.get_language() == "en"


def test_readout_keys_stay_but_their_names_are_translated():
    from attnlib.widgets.explorers.query import query_explorer

    with attnlib.language("zh_CN"):
        ex = query_explorer()
        html = ex.readout_html()
    assert "weights" in ex.frame().readout  # the key code reads
    assert i18n.gettext_in("zh_CN", "weights") in html and ">weights<" not in html


def test_chinese_turns_on_the_bundled_font_as_fallback_and_english_restores():
    import matplotlib as mpl

    before = list(mpl.rcParams["font.family"])
    with attnlib.language("zh_CN"):
        assert mpl.rcParams["font.family"][-1] == fonts.FONT_FAMILY
        assert mpl.rcParams["font.family"][:-1] == before  # Latin text keeps its font
    assert list(mpl.rcParams["font.family"]) == before


def test_recording_says_a_formatted_message_in_another_language():
    with i18n.recording() as rec:
        text = i18n._("length of {key} (×)", key="k1")
    assert text == "length of k1 (×)"
    assert rec.translate(text, "zh_CN") == i18n.gettext_in("zh_CN", "length of {key} (×)").format(
        key="k1"
    )
    assert rec.translate("k1", "zh_CN") == "k1"  # not a message: unchanged


@pytest.mark.parametrize(
    ("arg", "error", "words"),
    [
        ("fr", ValueError, "lang='fr' is not a language attnlib speaks"),
        (3, TypeError, "lang must be a language code"),
        (None, TypeError, "lang must be a language code"),
    ],
)
def test_bad_language(arg, error, words):
    with pytest.raises(error, match=words):
        attnlib.set_language(arg)
    assert attnlib.get_language() == "en"


def test_environment_variable_picks_the_language_for_a_script():
    code = "import attnlib; print(attnlib.get_language())"
    env = {**os.environ, i18n.ENV: "zh_CN"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "zh_CN"
    env[i18n.ENV] = "xx"
    bad = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "ATTNLIB_LANG='xx'" in bad.stderr
