"""What a student reads in a code cell: its comments and the strings it prints or draws. Each is
a message of the notebook's catalog (tools/i18n.py); the Chinese notebook is the English code with
those replaced, nothing else (tests/test_i18n_code.py checks the tokens).

- A comment: a run of whole-line comments at one indentation is one message (its lines joined by
  "\\n", each without ``# ``); a comment after code on its line is one message. A directive
  (``# NBVAL_IGNORE_OUTPUT``, ``# noqa``, ``# type: ignore``: ``DIRECTIVE``) is code, no message.
- A shown string: a string literal (an f-string too) passed to ``print``, to matplotlib's
  ``title``/``set_title``/``suptitle``/``xlabel``/``ylabel``/``set_xlabel``/``set_ylabel``/
  ``text``/``annotate``/``legend``, or as a ``title=``/``label=``/``labels=``/``..._title=``/
  ``..._label=`` keyword of any call; also each piece of such an argument: the literals of a
  list or tuple, of ``a + b`` and ``"%d" % n``, of ``a if c else b`` and ``a or b``, a
  ``.format`` or ``.join`` receiver and what it joins; and any other literal phrase (a word and
  a space) that code does not read as a key (subscripts, comparisons, dict keys the notebook
  reads, the arguments of ``CODE_READS`` calls). Only literals that hold an English word (two
  letters or more) or a Chinese character (a translated cell gives back its messages). The msgid
  is the literal's text between its quotes, as written (``{w:.3f}`` fields and ``\\n`` escapes
  included), so a translation keeps every field and escape.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

__all__ = [
    "DIRECTIVE",
    "LITERAL_FIELD",
    "field_shape",
    "CodeMessage",
    "code_messages",
    "translate_code",
    "code_problems",
    "mask_magics",
    "fields",
    "without_fields",
    "read_literals",
    "notebook_reserved",
]

SHOWN_CALLS = {
    "print",
    "title",
    "set_title",
    "suptitle",
    "xlabel",
    "ylabel",
    "set_xlabel",
    "set_ylabel",
    "text",
    "annotate",
    "legend",
}
#: A keyword argument whose value is shown: ``title=``, ``xlabel=``, ``label=``, ``labels=``, and
#: any ``..._title`` / ``..._label(s)`` (``weights_title=``, ``colorbar_label=``).
SHOWN_KEYWORD = re.compile(r"(?:^|_)(?:title|xlabel|ylabel|label|labels)$")
# A phrase: an English word and a space, or (a translated cell) a Chinese character.
_WORDS = re.compile(r"(?=.*[A-Za-z]{3,})(?=.*\s)|[\u3400-\u9fff]", re.S)
#: Calls whose string arguments are read by code, not shown (names, keys, modes, patterns).
CODE_READS = {
    "set",
    "get",
    "state",
    "compute",
    "frame",
    "getattr",
    "setattr",
    "hasattr",
    "startswith",
    "endswith",
    "index",
    "split",
    "replace",
    "compile",
    "match",
    "search",
    "einsum",
    "import_module",
    "open",
    "Path",
    "dtype",
    "register_buffer",
}
# A word to translate: two Latin letters or more, or a Chinese character (a translated cell
# has the same messages, so translate_code takes it back to the English).
_WORD = re.compile(r"[A-Za-z]{2,}|[\u3400-\u9fff]")
# A comment that a tool reads, not a student: nbval's markers, linters' and formatters' pragmas.
# It is code: never a message, and it ends a comment block (the lines after it are the next one).
DIRECTIVE = re.compile(
    r"#\s*(?:NBVAL_[A-Z_]+|noqa\b.*|type:\s*ignore\b.*|fmt:\s*(?:on|off|skip)|pragma\b.*)\s*"
)
_PREFIX = re.compile(r"^([rRbBuUfF]*)('''|\"\"\"|'|\")")


@dataclass(frozen=True)
class CodeMessage:
    kind: str  # "comment" or "string"
    text: str  # the msgid
    start: tuple[int, int]  # (row from 1, column) of the comment's '#' / the literal's first char
    end: tuple[int, int]
    indent: str = ""  # a comment block's indentation (its lines' text before '#')
    lines: int = 1  # how many source lines a comment block spans


def mask_magics(source: str) -> str:
    """``source`` with IPython's line magics and shell lines (``%matplotlib``, ``!pip``) blanked,
    every position kept, so ``ast`` and ``tokenize`` read it."""
    return "\n".join(
        " " * len(line) if line.lstrip().startswith(("%", "!")) else line
        for line in source.split("\n")
    )


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(mask_magics(source)).readline))


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def read_literals(source: str) -> set[str]:
    """The string literals ``source`` reads as keys: subscripts, comparisons and the arguments of
    :data:`CODE_READS` calls (a dict key made elsewhere from one of these stays English)."""
    try:
        tree = ast.parse(mask_magics(source))
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Subscript):
            parts = [node.slice]
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and _reads(node):
            parts = [*node.args, *(kw.value for kw in node.keywords)]
        for part in parts:
            for n in ast.walk(part):
                if isinstance(n, ast.Constant) and isinstance(n.value, str):
                    found.add(n.value)
    return found


def _reads(node: ast.Call) -> bool:
    return (
        getattr(node.func, "attr", None) in CODE_READS
        or getattr(node.func, "id", None) in CODE_READS
    )


def _shown_nodes(tree: ast.AST, reserved: frozenset[str] = frozenset()) -> list[ast.expr]:
    """The string expressions a cell prints or draws (see the module doc)."""
    out: list[ast.expr] = []

    def add(node: ast.expr | None) -> None:
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            out.append(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
        ):
            add(node.func.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                add(e)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            add(node.left)  # "text " + more, "text %d" % n
            if isinstance(node.op, ast.Add):
                add(node.right)
        elif isinstance(node, ast.IfExp):  # "yes" if ok else "no"
            add(node.body)
            add(node.orelse)
        elif isinstance(node, ast.BoolOp):  # name or "none"
            for e in node.values:
                add(e)
        elif isinstance(node, (ast.GeneratorExp, ast.ListComp)):  # ", ".join(f"..." for ...)
            add(node.elt)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join"
        ):
            for a in node.args:
                add(a)

    keys: set[int] = set()  # literals code reads: subscripts, dict keys, comparisons, docstrings
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            keys |= {id(n) for n in ast.walk(node.slice)}
        elif isinstance(node, ast.Dict):
            # a key the notebook reads somewhere (``runs["no mask"]``) stays; one it only shows
            # (``for name, r in runs.items(): print(name)``) is a shown word
            keys |= {
                id(k)
                for k in node.keys
                if k is not None and not (isinstance(k, ast.Constant) and k.value not in reserved)
            }
        elif isinstance(node, ast.Compare):
            keys |= {id(n) for n in [node.left, *node.comparators]}
        elif isinstance(node, ast.Call) and _reads(node):
            keys |= {id(n) for a in node.args for n in ast.walk(a)}
            keys |= {id(n) for kw in node.keywords for n in ast.walk(kw.value)}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr):
                keys.add(id(first.value))
    for node in ast.walk(tree):
        # any other literal with English words in it (a label kept in a list, a run's name): the
        # translator leaves it as it is when code reads it later (msgstr = msgid)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in keys
            and _WORDS.search(node.value)
        ):
            out.append(node)
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        if name in SHOWN_CALLS:
            for a in node.args:
                add(a)
        for kw in node.keywords:
            if kw.arg and SHOWN_KEYWORD.search(kw.arg):
                add(kw.value)
    return out


def _string_spans(
    source: str, reserved: frozenset[str] = frozenset()
) -> set[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) in characters of every shown string expression of ``source``."""
    masked = mask_magics(source)
    try:
        tree = ast.parse(masked)
    except SyntaxError:
        return set()
    lines = masked.split("\n")
    spans = set()
    for node in _shown_nodes(tree, reserved):
        if isinstance(node, ast.Constant) and not isinstance(node.value, str):
            continue
        assert node.end_lineno is not None and node.end_col_offset is not None
        start = (node.lineno, _char_col(lines[node.lineno - 1], node.col_offset))
        end = (node.end_lineno, _char_col(lines[node.end_lineno - 1], node.end_col_offset))
        spans.add((start, end))
    return spans


def _body(token: str) -> tuple[str, str, str]:
    """A string token as (prefix and opening quote, text between the quotes, closing quote)."""
    m = _PREFIX.match(token)
    assert m, token
    quote = m.group(2)
    return m.group(0), token[m.end() : len(token) - len(quote)], quote


def code_messages(source: str, reserved: frozenset[str] = frozenset()) -> list[CodeMessage]:
    """The comments and shown strings of a code cell's ``source``, in reading order."""
    toks = _tokens(source)
    spans = _string_spans(source, reserved)
    out: list[CodeMessage] = []
    block: list[tokenize.TokenInfo] = []
    lines = source.split("\n")

    def flush() -> None:
        if block:
            first, last = block[0], block[-1]
            text = "\n".join(_comment_text(t.string) for t in block)
            if _WORD.search(text):
                indent = lines[first.start[0] - 1][: first.start[1]]
                out.append(CodeMessage("comment", text, first.start, last.end, indent, len(block)))
            block.clear()

    for t in toks:
        if t.type == tokenize.COMMENT and DIRECTIVE.fullmatch(t.string):
            flush()
            continue
        if t.type == tokenize.COMMENT:
            whole_line = lines[t.start[0] - 1][: t.start[1]].strip() == ""
            if whole_line:
                if block and (
                    t.start[0] != block[-1].start[0] + 1 or t.start[1] != block[0].start[1]
                ):
                    flush()
                block.append(t)
                continue
            flush()
            text = _comment_text(t.string)
            if _WORD.search(text):
                out.append(CodeMessage("comment", text, t.start, t.end))
            continue
        if t.type not in (tokenize.NL, tokenize.NEWLINE) or not block:
            flush()
        if t.type == tokenize.STRING and any(s <= t.start and t.end <= e for s, e in spans):
            _, text, _ = _body(t.string)
            if _WORD.search(text) and not t.string.lstrip("rRuUfF").startswith(("b", "B")):
                out.append(CodeMessage("string", text, t.start, t.end))
    flush()
    return out


def _comment_text(comment: str) -> str:
    text = comment[1:]
    return text[1:] if text.startswith(" ") else text


def translate_code(
    source: str, table: dict[str, str], reserved: frozenset[str] = frozenset()
) -> str:
    """``source`` with each message that ``table`` translates replaced (comments re-written with
    the block's indentation, one ``# `` line per line of the translation; a string's text put
    between its own quotes)."""
    lines = source.split("\n")
    for m in reversed(code_messages(source, reserved)):
        new = table.get(m.text)
        if new is None:
            continue
        (r0, c0), (r1, c1) = m.start, m.end
        if m.kind == "comment" and lines[r0 - 1][:c0].strip() == "":
            indent = lines[r0 - 1][:c0]
            lines[r0 - 1 : r1] = [f"{indent}# {s}".rstrip() for s in new.split("\n")]
        elif m.kind == "comment":
            lines[r0 - 1] = lines[r0 - 1][:c0] + "# " + new.replace("\n", " ")
        else:
            token = _source_span(lines, m.start, m.end)
            head, _, quote = _body(token)
            replaced = head + new + quote
            before, after = lines[r0 - 1][:c0], lines[r1 - 1][c1:]
            lines[r0 - 1 : r1] = (before + replaced + after).split("\n")
    return "\n".join(lines)


def _source_span(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    (r0, c0), (r1, c1) = start, end
    if r0 == r1:
        return lines[r0 - 1][c0:c1]
    return "\n".join([lines[r0 - 1][c0:], *lines[r0 : r1 - 1], lines[r1 - 1][:c1]])


_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_ESCAPE = re.compile(r"\\.")
# A field that is only a string literal, perhaps padded (f"{'max weight':>10}": a printed table's
# heading). Its text is shown, not code: a translation may change the text and its width (a
# Chinese character is two columns wide, the padding counts characters), not its quote or kind.
LITERAL_FIELD = re.compile(r"""\{(['"])[^'"{}]*\1(?::[<>^]?\d*s?)?\}""")


def field_shape(field: str) -> str:
    """What a translation keeps of a ``{field}``: all of it, or of a LITERAL_FIELD its quotes."""
    m = LITERAL_FIELD.fullmatch(field)
    return "{" + m.group(1) + "…" + m.group(1) + "}" if m else field


def _fields(text: str) -> list[str]:
    return sorted(field_shape(f) for f in _FIELD.findall(text))


_LITERAL = re.compile(r"""(['"])[^'"]*\1""")


def fields(text: str) -> list[str]:
    """The ``{fields}`` of a code string, each with the text of its quoted literals set aside: a
    shown word inside a field (``{'yes' if ok else 'no'}``, a header ``{'max weight':>10}``) may be
    translated, the code around it may not. A dict key inside a field (``{st['scores']}``) must
    stay: the notebook's run fails with a KeyError otherwise."""
    return sorted(_LITERAL.sub(r"\1\1", field_shape(f)) for f in _FIELD.findall(text))


def without_fields(text: str) -> str:
    """``text`` with its ``{fields}`` blanked (what the glossary check reads of a code string)."""
    return _FIELD.sub(" ", text)


def code_problems(kind: str, msgid: str, msgstr: str) -> list[str]:
    """What a translation of a code message must keep: a string's ``{fields}`` (f-strings and
    ``.format``; of a field that is a string literal, ``{'max weight':>10}``, only its quotes) and
    escapes, each as often as the English has it, and no quote that would end the literal early
    (write “ ” or 「 」 in Chinese)."""
    found = []
    if kind == "string":
        if fields(msgid) != fields(msgstr):
            found.append(
                f"code string: fields {fields(msgid)} but the translation has {fields(msgstr)} "
                "(only the words in a field's quoted literals may change)"
            )
        if sorted(_ESCAPE.findall(msgid)) != sorted(_ESCAPE.findall(msgstr)):
            found.append("code string: the translation changes the escapes (\\n, \\t, ...)")
        for q in ("'", '"'):
            if _FIELD.sub("", msgstr).count(q) > _FIELD.sub("", msgid).count(q):
                found.append(f"code string: the translation adds the quote {q} (use “ ” or ‘ ’)")
    return found


def notebook_reserved(sources: list[str]) -> frozenset[str]:
    """Every literal a notebook's code cells read as a key (:func:`read_literals`, all cells)."""
    return frozenset(x for src in sources for x in read_literals(src))
