"""The Chinese edition: gettext catalogs of the notebooks' prose, and notebooks built from them.

    python tools/i18n.py extract [NB ...]    # write/merge locale/zh_CN/LC_MESSAGES/NN_x.po
    python tools/i18n.py generate [NB ...]   # write notebooks/zh/NN_x.ipynb from NB and its catalog
    python tools/i18n.py check [NB ...]      # exit 1 on a missing, fuzzy or unfaithful entry
    python tools/i18n.py stats               # translated / fuzzy / untranslated per catalog
    python tools/i18n.py unrun [NB ...]      # the Chinese notebooks with code cells not yet run

(NB: an English notebook such as ``notebooks/05_masking.ipynb``; none means all of them.)

Steps, each with one reader and one writer:

1. **split** (``blocks``): a Markdown cell is parsed with markdown-it (the site's parser) and cut
   into the leaf blocks Sphinx's gettext builder makes messages of: a heading, a paragraph (a list
   item's or a quotation's paragraphs each on their own), a table, a displayed ``$$`` formula and an
   HTML block with visible text. Each block keeps its line range and the container prefix of its
   lines (``- ``, ``> ``, ``## ``), so the cell can be put back together around a translation.
   A code cell's ``alt`` metadata (str or list of str) gives one message per text.
2. **extract** (``merge``): the messages become a catalog (polib). An entry already there keeps its
   translation; a new message takes, marked ``fuzzy``, the translation of the closest message that
   left (difflib ratio >= 0.6, as msgmerge does; an obsolete entry counts), or none. A translated
   entry whose English left, and that no new message took, is kept as an obsolete entry (``#~``,
   as msgmerge does), so the work comes back if the English does; ``--force`` drops them.
3. **generate** (``translated_notebook``): the English notebook with each block, alt text, code
   comment and shown string replaced by its translation (the English where it has none yet), and
   the language line (``LANGUAGE_LINE``) in its first code cell. Cells keep the English indices
   (the site pairs explorers by cell and output index) and code metadata but ``alt``. Outputs are
   the Chinese notebook's own: a code cell whose source is what it was in the Chinese notebook
   already there keeps that notebook's outputs (from its last run, ``make notebooks-run``); any
   other has none until the next run. No English output is copied.
4. **check** (``problems``): every entry translated and not fuzzy; every number, inline code span,
   ``$...$`` formula, link target and ``attnlib`` name of the English kept in the Chinese; as many
   bold, italic, link, code and formula spans as Markdown finds in the English; the block's shape
   (no blank line, a heading on one line, a table's rows and columns); every glossary term of the
   English given as the glossary's Chinese (locale/zh_CN/glossary.tsv).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python tools/i18n.py): the root holds tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.code_text import (  # noqa: E402
    DIRECTIVE,
    LITERAL_FIELD,
    code_messages,
    code_problems,
    notebook_reserved,
    translate_code,
)
from tools.nbtext import cell_alts, course_notebooks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LANG = "zh_CN"
LOCALE = ROOT / "locale" / LANG
CATALOGS = LOCALE / "LC_MESSAGES"
GLOSSARY = LOCALE / "glossary.tsv"
OUT = NOTEBOOKS / "zh"
FUZZY_RATIO = 0.6


def all_notebooks() -> list[Path]:
    return course_notebooks(NOTEBOOKS)


class I18nError(ValueError):
    """A command given an input it must refuse (a non-English notebook, a merge losing work)."""


def english_notebook(nb_path: Path, notebooks: Path = NOTEBOOKS) -> Path:
    """``nb_path`` resolved, when it is an English notebook ``notebooks/NN_name.ipynb``.

    A Chinese notebook (notebooks/zh/, or any with ``metadata.attnlib.language``) or a copy kept
    elsewhere would make a catalog of the wrong prose under the same stem: refused."""
    path = Path(nb_path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no notebook {nb_path}")
    if path.parent != Path(notebooks).resolve() or not re.fullmatch(r"\d\d_.+\.ipynb", path.name):
        raise I18nError(
            f"{nb_path}: not an English notebook {Path(notebooks).name}/NN_name.ipynb "
            "(the catalogs are made from the English notebooks only)"
        )
    if "language" in read_notebook(path).get("metadata", {}).get("attnlib", {}):
        raise I18nError(
            f"{nb_path}: a translated notebook (metadata.attnlib.language), not English"
        )
    return path


def catalog_path(nb_path: Path, catalogs: Path = CATALOGS) -> Path:
    return catalogs / f"{Path(nb_path).stem}.po"


def output_path(nb_path: Path, out: Path = OUT) -> Path:
    return out / Path(nb_path).name


# --- 1. split ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One translatable block of a Markdown cell: lines ``start:end`` of the cell's source."""

    kind: str  # heading, paragraph, table, math, html
    start: int
    end: int
    first_prefix: str  # container markers before the text on the first line ("- ", "> ", "## ")
    rest_prefix: str  # the prefix a continuation line takes (markers turned into spaces)
    text: str  # the msgid: the block's lines without their prefixes
    line_prefixes: tuple[str, ...] = ()  # the English continuation lines' own prefixes

    def prefix(self, k: int) -> str:
        """The prefix of line ``k`` of a translation (the English's own where it has a line k)."""
        if k == 0:
            return self.first_prefix
        if k - 1 < len(self.line_prefixes):
            return self.line_prefixes[k - 1]
        return self.rest_prefix


_MD = None
# Container markers at a line's start: blockquote '>' and list markers, nested any depth.
_CONTAINERS = re.compile(r"(?:[ ]{0,3}(?:>[ ]?|(?:[-*+]|\d{1,9}[.)])(?:[ ]+|$)))*[ ]*")
_HEADING = re.compile(r"#{1,6}[ \t]+")
_TAG = re.compile(r"<[^>]*>")


def _markdown():
    global _MD
    if _MD is None:
        from tools.mdparse import parser

        _MD = parser()  # the parser tools/site.py renders with
    return _MD


def _rest_prefix(first_prefix: str) -> str:
    # A continuation line keeps the quotation marks and indents under the list markers.
    out = re.sub(r"(?:[-*+]|\d{1,9}[.)])", lambda m: " " * len(m.group()), first_prefix)
    return re.sub(r"#{1,6}[ \t]+$", "", out)


def _strip_prefix(line: str, prefix: str) -> str:
    """The longest start of ``line`` that matches ``prefix`` (spaces may be missing: lazy lines)."""
    i = 0
    for ch in prefix:
        if i < len(line) and line[i] == ch:
            i += 1
        elif ch == " ":
            continue
        else:
            break
    return line[:i]


def blocks(source: str) -> list[Block]:
    """The translatable blocks of one Markdown cell, in order."""
    lines = source.split("\n")
    out = []
    tokens = _markdown().parse(source)
    for tok in tokens:
        kind = {
            "heading_open": "heading",
            "paragraph_open": "paragraph",
            "table_open": "table",
            "math_block": "math",
            "html_block": "html",
        }.get(tok.type)
        if kind is None or tok.map is None:
            continue
        start, end = tok.map
        while end > start and not lines[end - 1].strip():
            end -= 1  # a block's map may take in the blank line after it
        if kind == "html" and not _TAG.sub("", "\n".join(lines[start:end])).strip():
            continue  # markup only (</details>): nothing to translate
        first = lines[start]
        prefix = _CONTAINERS.match(first).group()
        if kind == "paragraph" and re.search(r"(?:[-*+]|\d[.)])[ ]*$", prefix):
            kind = "list item"
        if kind == "heading":
            if end - start != 1:
                raise ValueError(f"only one-line (#) headings are supported: {first!r}")
            prefix += _HEADING.match(first[len(prefix) :]).group()
        rest = _rest_prefix(prefix)
        text, own = [first[len(prefix) :]], []
        for line in lines[start + 1 : end]:
            own.append(_strip_prefix(line, rest))
            text.append(line[len(own[-1]) :])
        out.append(Block(kind, start, end, prefix, rest, "\n".join(text), tuple(own)))
    # Nested paragraphs are inside their list item's lines, never overlapping another leaf.
    return out


@dataclass(frozen=True)
class Message:
    msgid: str
    cell: int  # index of the cell in the notebook
    cell_id: str
    what: str  # "paragraph 3", "alt 1"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _reserved(nb: dict) -> frozenset[str]:
    return notebook_reserved([_source(c) for c in nb["cells"] if c["cell_type"] == "code"])


def messages(nb: dict) -> list[Message]:
    """Every message of a notebook (JSON as read by ``json``), in reading order."""
    out = []
    reserved = _reserved(nb)
    for i, cell in enumerate(nb["cells"]):
        cid = cell.get("id", str(i))
        if cell["cell_type"] == "markdown":
            for k, b in enumerate(blocks(_source(cell))):
                out.append(Message(b.text, i, cid, f"{b.kind} {k + 1}"))
        elif cell["cell_type"] == "code":
            for k, alt in enumerate(cell_alts(cell)):
                out.append(Message(alt, i, cid, f"alt {k + 1}"))
            counts = {"comment": 0, "string": 0}
            for cm in code_messages(_source(cell), reserved):
                counts[cm.kind] += 1
                out.append(Message(cm.text, i, cid, f"{cm.kind} {counts[cm.kind]}"))
    return out


# --- 2. extract ---------------------------------------------------------------------------------


def read_notebook(nb_path: Path) -> dict:
    return json.loads(Path(nb_path).read_text(encoding="utf-8"))


def where(nb_name: str, m: Message) -> str:
    return f"{nb_name} cell {m.cell} (id {m.cell_id}), {m.what}"


def _new_catalog(nb_path: Path):
    import polib

    po = polib.POFile(wrapwidth=0)
    po.metadata = {
        "Project-Id-Version": f"attnlib {Path(nb_path).stem}",
        "Language": LANG,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }
    po.header = (
        f"Chinese (zh_CN) translation of notebooks/{Path(nb_path).name}.\n"
        "Written by `make translations` (tools/i18n.py); translate the msgstr, keep the rest.\n"
        "See locale/zh_CN/STYLE.md and locale/zh_CN/glossary.tsv."
    )
    return po


def read_catalog(path: Path):
    import polib

    if not Path(path).is_file():
        raise FileNotFoundError(
            f"no catalog {path} (make it with `python -m tools.i18n extract "
            f"notebooks/{Path(path).stem}.ipynb`, or `make translations`)"
        )
    return polib.pofile(str(path), wrapwidth=0)


def _closest(msgid: str, candidates: dict[str, object]):
    best, best_ratio = None, FUZZY_RATIO
    for old, entry in candidates.items():
        sm = difflib.SequenceMatcher(None, msgid, old, autojunk=False)
        if sm.real_quick_ratio() < best_ratio or sm.quick_ratio() < best_ratio:
            continue
        ratio = sm.ratio()
        if ratio >= best_ratio:
            best, best_ratio = entry, ratio
    return best


def merge(nb_path: Path, old=None):
    """The catalog of ``nb_path``'s messages, keeping what ``old`` (a polib POFile) translated."""
    import polib

    name = Path(nb_path).name
    po = _new_catalog(nb_path)
    if old is not None:
        po.metadata.update({k: v for k, v in old.metadata.items() if k not in po.metadata})
    previous = {e.msgid: e for e in old} if old is not None else {}  # obsolete entries too
    entries: dict[str, polib.POEntry] = {}
    for m in messages(read_notebook(nb_path)):
        if m.msgid in entries:  # the same English twice: one entry, two places (as Sphinx)
            entries[m.msgid].occurrences.append((name, str(m.cell)))
            entries[m.msgid].comment += f"\n{where(name, m)}"
            continue
        entry = polib.POEntry(
            msgid=m.msgid, msgstr="", occurrences=[(name, str(m.cell))], comment=where(name, m)
        )
        kept = previous.get(m.msgid)
        if kept is not None:
            entry.msgstr = kept.msgstr
            entry.flags = [f for f in kept.flags if f == "fuzzy"]
            entry.previous_msgid = kept.previous_msgid if "fuzzy" in kept.flags else None
            entry.tcomment = kept.tcomment
        entries[m.msgid] = entry
    # New English: the translation of the closest English that left, marked fuzzy.
    gone = {k: e for k, e in previous.items() if k not in entries and e.msgstr}
    taken: set[str] = set()  # the English whose translation a new message took (as msgmerge)
    undirected = {_without_directives(k): e for k, e in gone.items() if _has_directive(k)}
    for entry in entries.values():
        if entry.msgid in previous or not gone:
            continue
        same = undirected.get(entry.msgid)
        if same is not None and _has_directive(same.msgstr):
            # A comment block whose directive line (# NBVAL_IGNORE_OUTPUT) left it: the same
            # English, so the same translation, without the directive (it stays in the code).
            entry.msgstr = _without_directives(same.msgstr)
            entry.flags = [f for f in same.flags if f == "fuzzy"]
            entry.tcomment = same.tcomment
            continue  # the old entry stays, obsolete: nothing is lost if the directive returns
        near = _closest(entry.msgid, gone)
        if near is not None:
            entry.msgstr = near.msgstr
            entry.flags = ["fuzzy"]
            entry.previous_msgid = near.msgid
            entry.tcomment = near.tcomment
            taken.add(near.msgid)
    po.extend(entries.values())
    po.extend(_obsolete(e) for k, e in gone.items() if k not in taken)
    return po


def _has_directive(text: str) -> bool:
    return any(DIRECTIVE.fullmatch("# " + line) for line in text.split("\n"))


def _without_directives(text: str) -> str:
    """A comment message without its directive lines (tools.code_text.DIRECTIVE)."""
    return "\n".join(line for line in text.split("\n") if not DIRECTIVE.fullmatch("# " + line))


def _obsolete(entry):
    """``entry`` as an obsolete (``#~``) entry: its English, translation, translator's comment
    and fuzzy flag. No place or previous English: polib reads neither back from a ``#~`` entry,
    and a second extract must write the same bytes."""
    import polib

    return polib.POEntry(
        msgid=entry.msgid,
        msgstr=entry.msgstr,
        tcomment=entry.tcomment,
        flags=[f for f in entry.flags if f == "fuzzy"],
        obsolete=True,
    )


def kept_translations(old, po) -> tuple[int, int]:
    """(N, M): of the M translated entries of ``old`` (obsolete ones too), the N whose translation
    ``po`` still holds (same English, obsolete or not, or taken as the fuzzy translation of a
    changed one)."""
    if old is None:
        return 0, 0
    held = {e.msgid for e in po if e.msgstr} | {e.previous_msgid for e in po if e.previous_msgid}
    done = [e for e in old if e.msgstr]
    return sum(1 for e in done if e.msgid in held), len(done)


def extract(
    nb_path: Path, catalogs: Path = CATALOGS, *, notebooks: Path = NOTEBOOKS, force: bool = False
) -> Path:
    """Merge the English notebook ``nb_path``'s messages into its catalog; translations whose
    English left are kept as obsolete entries, or dropped with ``force``. Refuses (I18nError,
    nothing written) a notebook that is not ``notebooks/NN_name.ipynb`` in English, and a merge
    that would lose a translation unless ``force``."""
    nb_path = english_notebook(nb_path, notebooks)
    path = catalog_path(nb_path, catalogs)
    old = read_catalog(path) if path.exists() else None
    po = merge(nb_path, old)
    if force:
        for entry in po.obsolete_entries():
            po.remove(entry)
    n, m = kept_translations(old, po)
    if n < m and not force:
        raise I18nError(
            f"{path.name}: kept {n} of {m} translations; the English of the others left "
            f"{nb_path.name} (check, then run again with --force to drop them)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(po) + "\n", encoding="utf-8")
    return path


# --- 3. generate --------------------------------------------------------------------------------


def translations(po) -> dict[str, str]:
    """msgid -> msgstr for the entries that are translated, not fuzzy and not obsolete."""
    return {e.msgid: e.msgstr for e in po if e.msgstr and "fuzzy" not in e.flags and not e.obsolete}


def translate_markdown(source: str, table: dict[str, str]) -> str:
    lines = source.split("\n")
    for b in reversed(blocks(source)):
        chinese = table.get(b.text)
        if chinese is None:
            continue
        new = chinese.split("\n")
        new_lines = [b.prefix(k) + s if s else b.prefix(k).rstrip() for k, s in enumerate(new)]
        lines[b.start : b.end] = new_lines
    return "\n".join(lines)


def _as_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


#: The line a Chinese notebook's first code cell gains: attnlib speaks Chinese from there on.
LANGUAGE_LINE = f'import attnlib; attnlib.set_language("{LANG}")'


def with_language_line(source: str) -> str:
    """``source`` (a first code cell) with ``LANGUAGE_LINE`` after its leading magic lines
    (``%matplotlib inline`` first: it sets up the backend the font settings go to). Never the last
    line: ``set_language`` returns the language before, which the cell would print."""
    lines = source.split("\n")
    at = 0
    while at < len(lines) and lines[at].lstrip().startswith(("%", "!")):
        at += 1
    if at == len(lines) or (at == len(lines) - 1 and not lines[-1].strip()):
        at = 0  # only magics: the line goes first
    return "\n".join([*lines[:at], LANGUAGE_LINE, *lines[at:]])


def without_language_line(source: str) -> str:
    """``source`` without the line ``with_language_line`` put in (the English cell's source)."""
    return "\n".join(line for line in source.split("\n") if line != LANGUAGE_LINE)


def translated_notebook(nb_path: Path, po, previous: dict | None = None) -> dict:
    """The Chinese notebook of ``nb_path``; its outputs those of ``previous`` (the Chinese notebook
    as it is now) for the code cells whose source did not change, none for the others. A previous
    notebook without the language line has English outputs: none are kept."""
    nb = read_notebook(nb_path)
    table = translations(po)
    reserved = _reserved(nb)
    first = True
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = _as_lines(translate_markdown(_source(cell), table))
        elif cell["cell_type"] == "code":
            source = translate_code(_source(cell), table, reserved)
            if first:
                source, first = with_language_line(source), False
            cell["source"] = _as_lines(source)
            cell["outputs"], cell["execution_count"] = [], None
        if cell["cell_type"] == "code" and "alt" in cell.get("metadata", {}):
            alt = cell["metadata"]["alt"]
            if isinstance(alt, str):
                cell["metadata"]["alt"] = table.get(alt, alt)
            else:
                cell["metadata"]["alt"] = [table.get(a, a) for a in alt]
    # No jupytext pairing (the .py pair is the English one's); say what this notebook is.
    nb["metadata"].pop("jupytext", None)
    nb["metadata"]["attnlib"] = {"language": "zh-CN", "translated_from": f"../{nb_path.name}"}
    if previous is not None:
        kept_outputs(nb, previous)
    return nb


def _code_cells(nb: dict) -> dict[int, dict]:
    return {i: c for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"}


def _ran_in_chinese(nb: dict) -> bool:
    """Whether ``nb``'s outputs can be a Chinese run's: its first code cell sets the language (a
    notebook generated before the language line carries the English outputs)."""
    code = list(_code_cells(nb).values())
    return bool(code) and LANGUAGE_LINE in _source(code[0]).split("\n")


def kept_outputs(nb: dict, previous: dict) -> tuple[list[int], list[int]]:
    """Give each code cell of ``nb`` (outputs empty) the outputs and execution count of the cell at
    its index in ``previous`` when both sources are the same; (kept, cleared) cell indices, where
    cleared are the code cells left without a run's outputs."""
    old = _code_cells(previous) if _ran_in_chinese(previous) else {}
    kept, cleared = [], []
    for i, cell in _code_cells(nb).items():
        before = old.get(i)
        if before is not None and _source(before) == _source(cell):
            cell["outputs"] = before.get("outputs", [])
            cell["execution_count"] = before.get("execution_count")
        if cell["execution_count"] is None and _source(cell).strip():
            cleared.append(i)
        else:
            kept.append(i)
    return kept, cleared


def unrun_cells(nb: dict) -> list[int]:
    """The code cells of a Chinese notebook that have not been run since their source changed."""
    if not _ran_in_chinese(nb):
        return sorted(_code_cells(nb))
    return [
        i
        for i, c in _code_cells(nb).items()
        if c.get("execution_count") is None and _source(c).strip()
    ]


def notebook_text(nb: dict) -> str:
    # nbformat's own layout (nbformat.writes), so the code cells are byte-identical.
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def generate(nb_path: Path, catalogs: Path = CATALOGS, out: Path = OUT) -> Path:
    """Write the Chinese notebook of ``nb_path`` (see ``translated_notebook``); the outputs of the
    Chinese notebook already at its path are kept for the code cells whose source is unchanged."""
    po = read_catalog(catalog_path(nb_path, catalogs))
    path = output_path(nb_path, out)
    previous = read_notebook(path) if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text(translated_notebook(nb_path, po, previous)), encoding="utf-8")
    return path


def generate_report(path: Path, previous: dict | None) -> str:
    """One line on what ``generate`` did to the outputs of the Chinese notebook at ``path``."""
    nb = read_notebook(path)
    code = _code_cells(nb)
    todo = unrun_cells(nb)
    where_ = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if not todo:
        return f"{where_}: outputs kept (no code cell changed since its last run)"
    changed = (
        "" if previous is not None and _ran_in_chinese(previous) else " (never run in Chinese)"
    )
    return (
        f"{where_}: outputs kept for {len(code) - len(todo)} code cells, none for {len(todo)}"
        f"{changed}: cells {', '.join(map(str, todo))}; run `make notebooks-run NB={where_}`"
    )


# --- 4. check -----------------------------------------------------------------------------------

_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$", re.S)
_LINK_TARGET = re.compile(r"\]\(([^)\s]+)")
_ATTNLIB = re.compile(r"\battnlib(?:\.\w+)*")
# ASCII look-arounds: a number may touch a Chinese character (笔记本03 is as good as 笔记本 03).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)*(?![A-Za-z0-9_])")


def _without(text: str, *patterns: re.Pattern) -> str:
    for p in patterns:
        text = p.sub(" ", text)
    return text


def placeholders(msgid: str) -> list[str]:
    """What a translation must keep unchanged: code spans, formulas, link targets, attnlib names
    and the numbers of the prose (those inside code or a formula are kept with it)."""
    return _spans(msgid) + [n for n in numbers(msgid) if n not in _spans(msgid)]


def numbers(text: str) -> list[str]:
    """The numbers of the prose of ``text`` (outside code, formulas, link targets and tags)."""
    rest = _without(text, _CODE, _DISPLAY_MATH, _INLINE_MATH)
    rest = _TAG.sub(" ", _without(_LINK_TARGET.sub("](", rest), _ATTNLIB))
    return list(dict.fromkeys(m.group().replace(",", "") for m in _NUMBER.finditer(rest)))


def _spans(msgid: str) -> list[str]:
    found = [m.group() for m in _CODE.finditer(msgid)]
    rest = _without(msgid, _CODE)
    found += [m.group() for m in _DISPLAY_MATH.finditer(rest)]
    rest = _without(rest, _DISPLAY_MATH)
    found += [m.group() for m in _INLINE_MATH.finditer(rest)]
    rest = _without(rest, _INLINE_MATH)
    found += [m.group(1) for m in _LINK_TARGET.finditer(rest)]
    rest = _LINK_TARGET.sub("](", rest)
    found += [m.group() for m in _ATTNLIB.finditer(rest)]
    return list(dict.fromkeys(found))


_NUMERALS = dict(zip("1 2 3 4 5 6 7 8 9 10".split(), "一二三四五六七八九十"))


_TEXT_IN_MATH = re.compile(r"\\text\{([^{}]*)\}")


def _formula_pattern(placeholder: str) -> re.Pattern:
    """A formula as a translation may write it: the words inside each ``\\text{...}`` translated,
    every other character of the formula as it is."""
    parts, at = [], 0
    for m in _TEXT_IN_MATH.finditer(placeholder):
        parts += [re.escape(placeholder[at : m.start(1)]), r"[^{}]*"]
        at = m.end(1)
    return re.compile("".join(parts) + re.escape(placeholder[at:]))


def _kept(placeholder: str, msgstr: str) -> bool:
    if placeholder.startswith("$") and _TEXT_IN_MATH.search(placeholder):
        return _formula_pattern(placeholder).search(msgstr) is not None
    if not _NUMBER.fullmatch(placeholder):
        return placeholder in msgstr
    if placeholder in numbers(msgstr):  # a number of the prose, not a digit of a link or code
        return True
    # An ordinal may be written the Chinese way: "Chapter 2" -> 第二章.
    return placeholder in _NUMERALS and f"第{_NUMERALS[placeholder]}" in msgstr


def _prose(text: str) -> str:
    """Text with code spans, formulas and link targets removed (where glossary terms are read)."""
    text = _without(text, _CODE, _DISPLAY_MATH, _INLINE_MATH)
    return _LINK_TARGET.sub("](", text)


_DASHES = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2011": "-"})


def _word(word: str) -> str:
    """One English word as a pattern: any ending for ``word*``, plurals (y -> ies), -ise/-ize."""
    if word.endswith("*"):
        return re.escape(word[:-1]).replace("iz", "i[sz]") + r"\w*"
    stem = re.escape(word).replace("iz", "i[sz]")
    if re.search(r"[^aeiou]y$", word):
        return stem[:-1] + "(?:y|ies)"
    return stem + "(?:s|es)?"


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    seed: str

    def pattern(self) -> re.Pattern:
        words = re.split(r"[\s-]+", self.english)
        joined = r"[\s-]*".join(_word(w) for w in words)
        return re.compile(rf"(?<![\w-]){joined}(?![\w-])", re.I)


def glossary_problems(msgid: str, msgstr: str, glossary: list[Term]) -> list[str]:
    """The glossary terms of ``msgid``'s prose whose Chinese ``msgstr`` does not use.

    Longer terms are matched first and their words taken out (``attention weight`` is checked as
    注意力权重, not again as ``weight``); dashes (- – —) count as one."""
    english = _prose(msgid).translate(_DASHES)
    chinese = msgstr.translate(_DASHES).lower()
    found = []
    for term in sorted(glossary, key=lambda t: -len(t.english)):
        pattern = term.pattern()
        if pattern.search(english):
            english = pattern.sub(" | ", english)
            if term.chinese.translate(_DASHES).lower() not in chinese:
                found.append(f"glossary: '{term.english}' is '{term.chinese}'")
    return found


def read_glossary(path: Path = GLOSSARY) -> list[Term]:
    """The glossary (TSV: english, chinese, seed section; a header row; # lines are comments)."""
    terms = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise ValueError(
                f"{path}:{n}: a glossary line is 3 tab-separated fields (english, chinese, seed), "
                f"got {len(fields)}: {line!r}"
            )
        english, chinese, seed = fields
        terms.append(Term(english.strip(), chinese.strip(), seed.strip()))
    return terms


_MARKUP = ("strong_open", "em_open", "link_open", "code_inline", "math_inline", "s_open")


def markup(text: str) -> dict[str, int]:
    """How many bold, italic, link, code and formula spans Markdown finds in ``text``."""
    counts = dict.fromkeys(_MARKUP, 0)
    for tok in _markdown().parse(text):
        for child in tok.children or []:
            if child.type in counts:
                counts[child.type] += 1
    return counts


_RAW_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")
_ATTR = re.compile(r"([^\s=/>\"']+)(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?")


def html_tags(text: str) -> list[str]:
    """The raw HTML tags Markdown passes through in ``text`` (as rendered, not escaped), each as
    its name and sorted attribute names (``img onerror src``), sorted."""
    raw = []
    for tok in _markdown().parse(text):
        if tok.type == "html_block":
            raw.append(tok.content)
        raw += [c.content for c in tok.children or [] if c.type == "html_inline"]
    tags = []
    for chunk in raw:
        for m in _RAW_TAG.finditer(chunk):
            attrs = sorted(a.group(1).lower() for a in _ATTR.finditer(m.group(3)))
            tags.append(" ".join([m.group(1) + m.group(2).lower(), *attrs]))
    return sorted(tags)


def markup_problems(msgid: str, msgstr: str) -> list[str]:
    """Spans of the English the Chinese lost. The usual cause: a bold span that starts or ends
    with full-width punctuation next to a Chinese character (**注意力分数（attention score）**如何),
    which CommonMark does not close; put the bracket outside: **注意力分数**（attention score）.
    Chinese sets no italics: an italic span of the English may become a bold one, or an italic
    title a 《title》 (so the Chinese may have fewer italic spans, made up by extra bold spans or
    《》, never more italics and never fewer bold spans than the English)."""
    names = {"strong_open": "bold", "em_open": "italic", "link_open": "link"}
    names |= {"code_inline": "code", "math_inline": "formula", "s_open": "strikethrough"}
    want, got = markup(msgid), markup(msgstr)
    short = want["em_open"] - got["em_open"]  # italics the Chinese set another way
    extra_bold = got["strong_open"] - want["strong_open"]
    if short > 0 and 0 <= extra_bold <= short <= extra_bold + msgstr.count("《"):
        got["em_open"] = want["em_open"]
        got["strong_open"] = want["strong_open"]
    found = [
        f"markup: {want[k]} {names[k]} span(s) in the English, {got[k]} in the Chinese"
        for k in _MARKUP
        if got[k] != want[k]
    ]
    # Raw HTML reaches the site as it is: a translation may not add a tag or an attribute.
    if html_tags(msgstr) != html_tags(msgid):
        found.append(
            f"markup: HTML tags {html_tags(msgid)} in the English, {html_tags(msgstr)} in the "
            "Chinese (a translation keeps the English's HTML, no more)"
        )
    return found


_KIND = re.compile(r"\), (heading|paragraph|list item|table|math|html|alt|comment|string) \d+$")


def structure_problems(kind: str, msgid: str, msgstr: str) -> list[str]:
    """A translation that would change the block's shape: a blank line (it would split the block),
    a heading on more than one line, a table with other rows or columns than the English."""
    found = []
    if any(not line.strip() for line in msgstr.split("\n")):
        found.append("structure: a blank line inside the block (it would split it in two)")
    if kind == "heading" and "\n" in msgstr:
        found.append("structure: a heading is one line")
    if kind == "table":
        want = [line.count("|") for line in msgid.split("\n")]
        got = [line.count("|") for line in msgstr.split("\n")]
        if want != got:
            found.append(
                f"structure: the table's rows have {want} pipes in the English, {got} here"
            )
    return found


_CODE_FIELD = re.compile(r"\{\{|\}\}|\{(?:[^{}]|\{[^{}]*\})*\}")


def _field_text(m: re.Match) -> str:
    """A code string's field for the glossary: a literal field's text (a shown heading), else
    nothing (code)."""
    return m.group()[2:].split(m.group()[1])[0] if LITERAL_FIELD.fullmatch(m.group()) else " "


def entry_problems(entry, glossary: list[Term]) -> list[str]:
    """What is wrong with one translated entry (empty when nothing is)."""
    found = []
    if not entry.msgstr:
        return ["not translated"]
    if "fuzzy" in entry.flags:
        found.append("fuzzy (the English changed: check the translation, then remove the flag)")
    kind = _KIND.search(entry.comment.splitlines()[0]) if entry.comment else None
    kind_name = kind.group(1) if kind else ""
    english, chinese = entry.msgid, entry.msgstr
    if kind_name == "string":
        # A {field} of a code string is code (code_problems keeps it), but a literal field's text
        # is a heading: its numbers and terms are the prose's.
        english = _CODE_FIELD.sub(_field_text, english)
        chinese = _CODE_FIELD.sub(_field_text, chinese)
    missing = [p for p in placeholders(english) if not _kept(p, chinese)]
    if missing:
        found.append("keep unchanged: " + ", ".join(missing))
    found += markup_problems(entry.msgid, entry.msgstr)
    if kind_name in ("comment", "string"):
        found += code_problems(kind_name, entry.msgid, entry.msgstr)
    else:
        found += structure_problems(kind_name, entry.msgid, entry.msgstr)
    if kind_name == "string" and entry.msgstr == entry.msgid:
        return found  # kept as it is: a key code reads, an English model's input
    return found + glossary_problems(english, chinese, glossary)


def problems(nb_path: Path, catalogs: Path = CATALOGS, glossary_path: Path = GLOSSARY) -> list[str]:
    """Every problem of one notebook's catalog, each naming the notebook, cell and English."""
    path = catalog_path(nb_path, catalogs)
    name = Path(nb_path).name
    if not path.exists():
        return [f"{name}: no catalog {path.name} (run `make translations`)"]
    po = read_catalog(path)
    glossary = read_glossary(glossary_path)
    out = []
    expected = {m.msgid for m in messages(read_notebook(nb_path))}
    have = {e.msgid for e in po if not e.obsolete}  # an obsolete entry waits, unchecked
    if expected != have:
        out.append(f"{name}: {path.name} is out of step with it (run `make translations`)")
    for entry in po:
        if entry.obsolete:
            continue
        for problem in entry_problems(entry, glossary):
            english = entry.msgid if len(entry.msgid) <= 120 else entry.msgid[:117] + "..."
            out.append(f"{entry.comment.splitlines()[0]}: {problem}\n    English: {english!r}")
    return out


def stats(po) -> tuple[int, int, int]:
    """(translated, fuzzy, untranslated) entries, obsolete ones left out."""
    live = [e for e in po if not e.obsolete]
    fuzzy = sum(1 for e in live if e.msgstr and "fuzzy" in e.flags)
    done = sum(1 for e in live if e.msgstr and "fuzzy" not in e.flags)
    return done, fuzzy, len(live) - done - fuzzy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["extract", "generate", "check", "stats", "unrun"])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--force",
        action="store_true",
        help="extract: drop the obsolete entries (translations whose English left)",
    )
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (I18nError, FileNotFoundError) as e:
        print(f"i18n {args.command}: {e}", file=sys.stderr)
        return 2


def _run(args) -> int:
    paths = [english_notebook(p) for p in args.notebooks] or all_notebooks()
    status = 0
    for p in paths:
        if args.command == "extract":
            print(extract(p, force=args.force).relative_to(ROOT))
        elif args.command == "generate":
            before = output_path(p)
            previous = read_notebook(before) if before.exists() else None
            print(generate_report(generate(p), previous))
        elif args.command == "unrun":
            zh = output_path(p)
            if not zh.exists() or unrun_cells(read_notebook(zh)):
                print(zh.relative_to(ROOT))
        elif args.command == "check":
            found = problems(p)
            print("\n".join(found) if found else f"{p.name}: ok")
            status |= bool(found)
        else:
            done, fuzzy, todo = stats(read_catalog(catalog_path(p)))
            print(f"{p.stem}: {done} translated, {fuzzy} fuzzy, {todo} untranslated")
    return status


if __name__ == "__main__":
    sys.exit(main())
