"""attnlib's own catalog: the words the package shows (explorers, figures, printed tables), one
gettext catalog shipped with it (``attnlib/locale/zh_CN/LC_MESSAGES/attnlib.po`` and its compiled
``.mo``), read at run time by :mod:`attnlib.util.i18n`.

    python -m tools.catalog extract   # pybabel-extract the _() / N_() markers, merge into the .po
    python -m tools.catalog compile   # write the .mo from the .po (polib: no dates, same bytes)
    python -m tools.catalog check     # what is untranslated, fuzzy, stale or unfaithful

``extract`` keeps what is translated: a new message gets an empty entry, a changed one its old
translation marked fuzzy (as msgmerge does), a removed one is kept as obsolete (``#~``); ``--force``
drops the obsolete ones. ``make translations`` runs extract, compile and the font update.
"""

from __future__ import annotations

import argparse
import io
import re
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attnlib"
LANG = "zh_CN"
PO = PACKAGE / "locale" / LANG / "LC_MESSAGES" / "attnlib.po"
MO = PO.with_suffix(".mo")
KEYWORDS = {"_": None, "N_": None}


def extracted() -> dict[str, list[tuple[str, int]]]:
    """Every marked message of the package -> where it is (file relative to the root, line)."""
    from babel.messages.extract import extract_from_dir

    found: dict[str, list[tuple[str, int]]] = {}
    for filename, lineno, message, _comments, _context in extract_from_dir(
        str(PACKAGE),
        method_map=[("**.py", "python")],
        keywords=KEYWORDS,
        comment_tags=(),
    ):
        if isinstance(message, tuple):  # ngettext-style: not used by attnlib
            message = message[0]
        if message:
            found.setdefault(message, []).append((f"attnlib/{filename}", lineno))
    return found


HEADER = (
    "# attnlib's own words in Chinese (zh_CN): explorers, figures, printed tables.\n"
    "# Written by `python -m tools.catalog extract` (make translations); translate msgstr only.\n"
    "# Terms: locale/zh_CN/glossary.tsv; style: locale/zh_CN/STYLE.md."
)


def _header(catalog) -> None:
    catalog.header_comment = HEADER
    catalog.last_translator = "attnlib contributors"
    catalog.project = "attnlib"
    catalog.version = "0.1.0"
    catalog.language_team = "attnlib"
    catalog.msgid_bugs_address = ""
    catalog.copyright_holder = "attnlib contributors"


def read(path: Path = PO):
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po

    if not path.exists():
        return Catalog(locale=LANG)
    with path.open("rb") as f:
        return read_po(f, locale=LANG)


def write(catalog, path: Path = PO) -> bytes:
    from babel.messages.pofile import write_po

    buf = io.BytesIO()
    write_po(
        buf,
        catalog,
        width=100,
        sort_output=True,
        include_previous=False,
        include_lineno=False,  # a file per message, not a line: an edit elsewhere changes no entry
    )
    data = _strip_dates(buf.getvalue())
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return data


_DATES = re.compile(rb'^"(POT-Creation-Date|PO-Revision-Date): [^"\\]*\\n"\n', re.M)


def _strip_dates(data: bytes) -> bytes:
    """No dates in the header: extracting twice gives the same bytes."""
    return _DATES.sub(b"", data)


def merge(force: bool = False):
    """The catalog with the package's current messages (see the module doc)."""
    from babel.messages.catalog import Catalog, Message

    old = read()
    found = extracted()
    new = Catalog(locale=LANG, fuzzy=False)
    _header(new)
    translated = {m.id: m for m in old if m.id and m.string}
    obsolete = {k: m for k, m in old.obsolete.items() if m.string}
    for msgid, where in found.items():
        before = translated.get(msgid) or obsolete.get(msgid)
        msg = Message(msgid, before.string if before else "", locations=where)
        if before is not None and before.fuzzy:
            msg.flags.add("fuzzy")
        if before is None:
            close = _closest(msgid, {**obsolete, **translated})
            if close is not None:
                msg.string = close.string
                msg.flags.add("fuzzy")
        if _fields(msgid):
            msg.flags.add("python-brace-format")
        new[msgid] = msg
    if not force:
        for msgid, m in {**obsolete, **translated}.items():
            if msgid not in found:
                new.obsolete[msgid] = Message(msgid, m.string)
    return new


def _closest(msgid: str, candidates: dict):
    import difflib

    best = difflib.get_close_matches(msgid, list(candidates), n=1, cutoff=0.8)
    return candidates[best[0]] if best else None


def _fields(text: str) -> list[str]:
    """The named fields of a brace-format message, with their format specs (``{w:.3f}``)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return []
    return sorted(
        f"{{{name}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}"
        for _lit, name, spec, conv in parsed
        if name is not None
    )


def compiled(path: Path = PO) -> bytes:
    """The ``.mo`` bytes of the ``.po`` at ``path`` (polib: no date is added, so the same catalog
    gives the same bytes); fuzzy and untranslated entries are left out, as msgfmt does."""
    import polib

    return polib.pofile(str(path)).to_binary()


def compile_mo() -> Path:
    data = compiled()
    if not MO.exists() or MO.read_bytes() != data:
        MO.write_bytes(data)
    return MO


def problems() -> list[str]:
    """What keeps the package catalog from being complete and true: missing, fuzzy or unfaithful
    entries (fields moved or dropped, glossary terms), messages not yet extracted or no longer
    there, and a stale ``.mo``."""
    from tools import i18n

    out = []
    if not PO.exists():
        return [f"no {PO.relative_to(ROOT)}: run `make translations`"]
    catalog = read()
    found = extracted()
    have = {m.id for m in catalog if m.id}
    for msgid in sorted(set(found) - have):
        out.append(f"not in the catalog (run `make translations`): {msgid!r}")
    for msgid in sorted(have - set(found)):
        out.append(f"no longer in the code (run `make translations`): {msgid!r}")
    glossary = i18n.read_glossary()
    for m in catalog:
        if not m.id:
            continue
        where = f"{PO.relative_to(ROOT)}: {m.id!r}"
        if not m.string:
            out.append(f"{where}: untranslated")
            continue
        if m.fuzzy:
            out.append(f"{where}: fuzzy (check the translation, then drop the flag)")
        if _fields(m.id) != _fields(m.string):
            out.append(
                f"{where}: fields {_fields(m.id)} but the translation has {_fields(m.string)}"
            )
        if not re.search(r"[\u4e00-\u9fff]", m.string) and re.search(
            r"[A-Za-z]{3,} [A-Za-z]{3,}", m.id
        ):
            out.append(f"{where}: the translation has no Chinese")
        prose = re.sub(r"\{[^{}]*\}", " ", m.id)  # a field's name is code, not a term
        out += [f"{where}: {p}" for p in i18n.glossary_problems(prose, m.string, glossary)]
    if not MO.exists() or MO.read_bytes() != compiled():
        out.append(f"{MO.relative_to(ROOT)} is stale: run `make translations`")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.catalog", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=["extract", "compile", "check"])
    parser.add_argument("--force", action="store_true", help="extract: drop obsolete entries")
    args = parser.parse_args(argv)
    if args.command == "extract":
        catalog = merge(force=args.force)
        write(catalog)
        n = sum(1 for m in catalog if m.id)
        todo = sum(1 for m in catalog if m.id and (not m.string or m.fuzzy))
        print(f"{PO.relative_to(ROOT)}: {n} messages, {todo} to translate or check")
        return 0
    if args.command == "compile":
        print(f"wrote {compile_mo().relative_to(ROOT)}")
        return 0
    found = problems()
    for line in found:
        print(line)
    print(f"{len(found)} problem(s) in attnlib's catalog")
    return 1 if found else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
