"""What a notebook's prose names exists: every dotted ``attnlib.…`` name resolves, and every file
it mentions is in the repository (issue 18's guards, so a renamed module or a file outside the
repository cannot be cited again).

Checked text: markdown cells and the comments of code cells (code itself runs under nbval).
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

from tools.nbtext import cell_prose, cells

ROOT = Path(__file__).resolve().parents[1]


NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

DOTTED = re.compile(r"\battnlib(?:\.[A-Za-z_]\w*)+")
EXTENSIONS = "txt|md|py|ipynb|png|svg|json|pt|toml|cfg|yml|yaml|js|safetensors|csv|html|pdf"
FILE = re.compile(rf"(?<![\w/.:-])((?:\.{{1,2}}/)?[\w.-]+(?:/[\w.-]+)*\.(?:{EXTENSIONS}))\b")
#: Project documents that live outside the repository (the team's shared notes).
OUTSIDE = re.compile(r"\.\./shared|\b(?:STYLE|RECIPES|CURRICULUM)\b|\bseeds/|\breviews/")
#: Files a notebook may name that are not tracked in git: those of the pinned model package,
#: on the reader's disk after `make` (attnlib.models.minilm checks their sha256).
MODEL_FILES = {"config.json", "tokenizer.json", "model.safetensors"}


def _mentions(pattern: re.Pattern):
    for nb_path in NOTEBOOKS:
        for index, cell in enumerate(cells(nb_path)):
            for match in pattern.findall(cell_prose(cell)):
                yield nb_path.name, index, match


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _tracked() -> set[str]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if not out:  # not a git checkout (an sdist): every file on disk
        out = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    return set(out)


def test_the_checks_find_what_they_look_for():
    # The patterns themselves, on text written here (so an empty result below means something).
    assert DOTTED.findall("see `attnlib.core.softmax.masked_softmax`.") == [
        "attnlib.core.softmax.masked_softmax"
    ]
    assert FILE.findall("in `figures/a_b.png` and 05_masking.ipynb, not http://x.org/y.png") == [
        "figures/a_b.png",
        "05_masking.ipynb",
    ]
    assert _resolves("attnlib.core.softmax.masked_softmax") and _resolves("attnlib.masked_softmax")
    assert not _resolves("attnlib.statistics.dot_product_variance")
    assert not _resolves("attnlib.core.softmax.no_such_function")
    assert OUTSIDE.search("as our STYLE guide says") and OUTSIDE.search("../shared/seeds/x.txt")


def test_every_dotted_attnlib_name_in_the_prose_resolves():
    mentions = list(_mentions(DOTTED))
    assert mentions, "no attnlib.… names found: the scan is broken"
    bad = [m for m in mentions if not _resolves(m[2])]
    assert not bad, f"names that do not resolve (notebook, cell, name): {bad}"


def test_every_file_a_notebook_names_is_in_the_repository():
    tracked = _tracked()
    mentions = list(_mentions(FILE))
    assert mentions, "no file names found: the scan is broken"
    bad = []
    for nb, cell, name in mentions:
        # A name is read relative to the notebooks' folder, or to the repository's root.
        paths = [(ROOT / "notebooks" / name).resolve(), (ROOT / name).resolve()]
        rels = {str(p.relative_to(ROOT)) for p in paths if p.is_relative_to(ROOT)}
        if not rels & tracked and Path(name).name not in MODEL_FILES:
            bad.append((nb, cell, name))
    assert not bad, f"files that are not in the repository (notebook, cell, name): {bad}"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_cites_a_document_outside_the_repository(nb_path):
    bad = [
        (i, m.group(0))
        for i, c in enumerate(cells(nb_path))
        for m in OUTSIDE.finditer(cell_prose(c))
    ]
    assert not bad, f"{nb_path.name} cites documents outside the repository (cell, text): {bad}"
