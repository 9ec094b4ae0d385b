"""What a Chinese notebook shows (notebooks/zh/, run by `make notebooks-run NB=notebooks/zh`): its
own outputs, with the English notebook's numbers, and no English comment or printed sentence."""

from __future__ import annotations

import ast
import configparser
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from tools import i18n
from tools.code_text import DIRECTIVE, code_messages, mask_magics

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = i18n.all_notebooks()
IDS = [p.stem for p in NOTEBOOKS]


def _sanitizers() -> list[tuple[re.Pattern, str]]:
    """nbval's replacements (tests/nbval_sanitize.cfg): what varies between two runs."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "tests" / "nbval_sanitize.cfg", encoding="utf-8")
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


SANITIZERS = _sanitizers()
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def output_text(cell: dict) -> str:
    """A code cell's text outputs (streams and text/plain), as nbval compares them."""
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(_text(out.get("text", "")))
        elif out["output_type"] in ("execute_result", "display_data"):
            parts.append(_text(out.get("data", {}).get("text/plain", "")))
        elif out["output_type"] == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    text = "\n".join(parts)
    for pattern, replace in SANITIZERS:
        text = pattern.sub(replace, text)
    return text


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text)


def line_numbers(text: str) -> list[list[str]]:
    """The numbers of each output line that has any, line by line in order. Within a line they
    are compared as a multiset: Chinese word order may move a number ("5 of 6" is 6 个中有 5 个),
    but no number may change, go or come, and no line may move."""
    return [sorted(n) for n in map(numbers, text.split("\n")) if n]


def _notebooks(path: Path) -> tuple[dict, dict]:
    zh = json.loads(i18n.output_path(path).read_text(encoding="utf-8"))
    return i18n.read_notebook(path), zh


def _code(nb: dict) -> dict[int, dict]:
    return {i: c for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"}


# --- the same numbers ---------------------------------------------------------------------------


def _not_compared(cell: dict) -> bool:
    """A cell nbval does not compare (``# NBVAL_IGNORE_OUTPUT``, ``# NBVAL_SKIP``): its numbers are
    the machine's (timings, a training run's steps), not the notebook's."""
    return any(
        DIRECTIVE.fullmatch(line.strip()) and "NBVAL_" in line and "CHECK_OUTPUT" not in line
        for line in _text(cell.get("source", "")).split("\n")
    )


def number_problems(en: dict, zh: dict) -> list[str]:
    """Each code cell whose Chinese outputs are missing or hold other numbers than the English."""
    found = []
    zh_code = _code(zh)
    for i, cell in _code(en).items():
        other = zh_code.get(i)
        if other is None:
            found.append(f"cell {i}: not a code cell in the Chinese notebook")
            continue
        if cell.get("outputs") and (
            not other.get("outputs") or other.get("execution_count") is None
        ):
            found.append(f"cell {i}: no outputs of its own (not run since its code changed)")
            continue
        if _not_compared(cell):
            continue
        want, got = line_numbers(output_text(cell)), line_numbers(output_text(other))
        if want != got:
            k = next((k for k, (a, b) in enumerate(zip(want, got)) if a != b), None)
            where_ = (
                f"numbered line {k}: {want[k]} in the English, {got[k]} in the Chinese"
                if k is not None
                else f"{len(want)} lines with numbers in the English, {len(got)} in the Chinese"
            )
            found.append(f"cell {i}: {where_}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_chinese_notebook_prints_the_english_numbers_from_its_own_run(path):
    en, zh = _notebooks(path)
    assert i18n.unrun_cells(zh) == [], (
        f"{path.stem}: code cells {i18n.unrun_cells(zh)} of the Chinese notebook were not run "
        f"since their code changed: make notebooks-run NB=notebooks/zh/{path.name}"
    )
    found = number_problems(en, zh)
    assert not found, f"{path.stem}: {len(found)} cells differ:\n" + "\n".join(found)


def test_the_number_check_sees_a_changed_number_and_a_cell_not_run():
    def nb(text, count=1):
        out = [{"output_type": "stream", "name": "stdout", "text": [text]}]
        return {"cells": [{"cell_type": "code", "outputs": out, "execution_count": count}]}

    en = nb("largest weight: 0.500 of 4 keys\nrows: 5 of 6\n")
    assert number_problems(en, nb("最大权重：0.500，共 4 个键\n行：6 个中有 5 个\n")) == []
    assert number_problems(en, nb("最大权重：0.500，共 4 个键\n行：5 个中有 5 个\n")) != []
    assert number_problems(en, nb("行：6 个中有 5 个\n最大权重：0.500，共 4 个键\n")) != []
    assert number_problems(en, nb("最大权重：0.500，共 4 个键\n")) != []
    assert number_problems(en, nb("最大权重：0.50，共 4 个键\n")) != []
    assert (
        "no outputs of its own" in number_problems(en, nb("最大权重：0.500，共 4 个键\n", None))[0]
    )
    timed = nb("3.9 s\n")
    timed["cells"][0]["source"] = "# NBVAL_IGNORE_OUTPUT\nprint(seconds)"
    assert number_problems(timed, nb("5.2 秒\n")) == []
    # What nbval sanitizes (an object's address) is no number of the output.
    assert numbers(output_text(nb("<Figure size 640x480 with 1 Axes> at 0x7f3a\n"))) == []


# --- nothing English ----------------------------------------------------------------------------

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
#: Names, not English: they stay as they are in the Chinese (STYLE.md, "Names stay as they are").
NAMES = frozenset(
    """PyTorch MiniLM BERT GPT JupyterLab FlashAttention Nadaraya Watson Softmax softmax CPU GPU
    CUDA RNN CNN FFN float32 float64 float16 bfloat16 NaN nan inf Pre-LN Post-LN LayerNorm ReLU
    GELU Adam SGD KV""".split()
)
#: The glossary's terms whose Chinese is the English (locale/zh_CN/glossary.tsv).
KEPT_TERMS = tuple(t.english for t in i18n.read_glossary() if t.english == t.chinese)
#: An exception's message, after its class name: attnlib's and torch's errors stay English.
EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b.*")
#: An object's repr, its text/plain (an explorer shown without a widget manager): code.
REPR = re.compile(r"<[A-Z]\w*(?:\.\w+)*(?: [^<>]*)?>")
#: The English term in brackets at its first use, after its Chinese: （attention weight）.
BRACKETED = re.compile(r"[（(][A-Za-z][A-Za-z \-']*[)）]")
#: A quotation in Chinese quotation marks: English words quoted as they are (a model card's line,
#: an English model's input sentence).
QUOTED = re.compile(r"“[^“”]*”")
# ASCII look-arounds: an English word may touch a Chinese character (\w would take it in).
WORDS = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z]{3,}(?:[ ]+[A-Za-z]{3,})+(?![A-Za-z0-9_(])")


def code_names(nb: dict) -> set[str]:
    """Every name of the notebook's code (variables, attributes, imports, keywords)."""
    names = set()
    for cell in _code(nb).values():
        src = mask_magics(_text(cell["source"]))
        try:
            for t in tokenize.generate_tokens(io.StringIO(src).readline):
                if t.type == tokenize.NAME:
                    names.add(t.string)
        except (tokenize.TokenError, IndentationError):
            continue
    return names


def english_sentence(line: str, names: set[str], data: frozenset[str] = frozenset()) -> str | None:
    """The first run of two or more English words (three letters or more) in ``line`` that is not
    code or a name: a word of NAMES or a code name with a capital (a class: PositionalEncoding) is
    no English word, and a run inside one of ``data`` (the text of a string literal the code reads
    and that is no catalog message: a model's input sentence, a dict key) is data. A bracketed
    English term, an exception's message and an object's repr (``<Explorer scaling ...>``) are
    left out. None when there is none.

    A lower-case code name (``weights``) still counts as English: a printed sentence made of
    words that are also variable names is a sentence."""
    text = REPR.sub(" ", EXCEPTION.sub(" ", line))
    if CJK.search(text):
        text = QUOTED.sub(" ", BRACKETED.sub(" ", text))
    for term in KEPT_TERMS:  # the glossary keeps a few terms English: padding mask, one-hot
        text = text.replace(term, " ")
    for d in sorted(data, key=len, reverse=True):  # a key or input printed as it is: data
        if len(d) >= 3:
            text = text.replace(d, " ")
    for m in WORDS.finditer(text):
        run, runs = [], []
        for w in m.group().split():
            code = w in NAMES or (w in names and not w.islower())
            run = [] if code else run + [w]
            runs.append(list(run))
        for r in sorted(runs, key=len, reverse=True):
            if len(r) >= 2 and not any(" ".join(r) in d for d in data):
                return " ".join(r)
    return None


def data_strings(nb: dict) -> frozenset[str]:
    """The text of every string literal of the (Chinese) notebook's code that is not a catalog
    message, or is one the translator kept as its English (no Chinese in it: a key code reads, an
    English model's input sentence)."""
    found = set()
    for cell in _code(nb).values():
        src = _text(cell["source"])
        shown = {m.start for m in code_messages(src) if m.kind == "string" and CJK.search(m.text)}
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(mask_magics(src)).readline))
        except (tokenize.TokenError, IndentationError):
            continue
        for t in tokens:
            if t.type == tokenize.STRING and t.start not in shown:
                try:
                    value = ast.literal_eval(t.string)
                except (ValueError, SyntaxError):
                    continue  # an f-string: its text is printed or drawn, or code
                if isinstance(value, str) and len(value) >= 3:
                    found.add(value)
    return frozenset(found)


#: A word of a comment: three letters or more, lower case after the first (an all-capitals
#: symbol such as CLS or SA, a snake_case name, a LaTeX command or a name glued to digits is
#: code or mathematics, not English).
COMMENT_WORD = re.compile(r"(?<![A-Za-z0-9_\\])[A-Za-z][a-z]{2,}(?![A-Za-z0-9_(\[])")
#: The functions a formula in a comment names (``L = -log a_y``).
MATH = frozenset("log exp sin cos tan tanh max min sum mean std var det diag argmax argmin".split())


def english_comments(nb: dict, names: set[str]) -> list[str]:
    """Comment lines with no Chinese character and an English word (COMMENT_WORD) that is not a
    code name, a name of NAMES or a function of MATH; directives (``# NBVAL_IGNORE_OUTPUT``) and
    formulas or shapes (``# (B, H, L, Dh)``, ``# L = CE = -log a_y``) are code."""
    found = []
    for i, cell in _code(nb).items():
        src = mask_magics(_text(cell["source"]))
        for t in tokenize.generate_tokens(io.StringIO(src).readline):
            if t.type != tokenize.COMMENT or CJK.search(t.string) or DIRECTIVE.fullmatch(t.string):
                continue
            words = [w for w in COMMENT_WORD.findall(t.string) if w not in names | NAMES | MATH]
            if words:
                found.append(f"cell {i} line {t.start[0]}: comment {t.string!r}")
    return found


def english_output_lines(nb: dict, names: set[str]) -> list[str]:
    found = []
    data = data_strings(nb)
    for i, cell in _code(nb).items():
        if "getsource(" in _text(cell["source"]):
            continue  # it prints attnlib's source: code, English as all code is
        for line in output_text(cell).split("\n"):
            run = english_sentence(line, names, data)
            if run is not None:
                found.append(f"cell {i}: printed {line.strip()[:100]!r} (English: {run!r})")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_chinese_notebook_has_no_english_comment_or_printed_sentence(path):
    # Passes once every notebook catalog's code entries are translated and attnlib's printed
    # tables speak Chinese; until then it lists every line that is still English.
    _, zh = _notebooks(path)
    names = code_names(zh)
    found = english_comments(zh, names) + english_output_lines(zh, names)
    assert not found, f"{path.stem}: {len(found)} English lines:\n" + "\n".join(found)


def test_an_english_sentence_is_two_words_that_are_not_code_or_names():
    names = {"weights", "masked_softmax", "PositionalEncoding"}
    assert english_sentence("largest weight: 0.5", names) == "largest weight"
    assert english_sentence("PositionalEncoding(max_positions=512) 拒绝", names) is None
    assert english_sentence("'eating food' 与 'eating bread'：0.755", names) == "eating food"
    data = frozenset({"A man is eating food."})
    assert english_sentence("'eating food' 与 unrelated：0.755", names, data) is None
    assert english_sentence("最大权重（attention weight）：0.5", names) is None
    assert english_sentence("attention weight: 0.5", names) == "attention weight"
    assert english_sentence("weights sum 1.0", names) == "weights sum"  # a variable's name too
    assert english_sentence("tensor([0.25, 0.75]) dtype=torch.float32", names) is None
    assert english_sentence("PyTorch MiniLM 的权重", names) is None
    assert english_sentence("用 masked_softmax 计算 row max", names) == "row max"
    assert english_sentence("float16：RuntimeError - value cannot be converted", names) is None
    assert english_sentence("float16 fails here: RuntimeError", names) == "fails here"
    assert english_sentence("<Explorer scaling controls=['d_k', 'scale']>", names) is None


def test_an_english_comment_line_is_reported_and_a_chinese_or_code_one_is_not():
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": (
                    "x = 1  # the row\n# 每一行 row\n# (B, H, L, Dh)\n# NBVAL_SKIP\n"
                    "y = x  # x\n# L = CE = -log a_y, sum_i alpha_i\n# Mask\n"
                ),
                "outputs": [],
            }
        ]
    }
    assert english_comments(nb, code_names(nb)) == [
        "cell 0 line 1: comment '# the row'",
        "cell 0 line 7: comment '# Mask'",
    ]
