"""Imports point one way, and the folders show the layers (issues 10 and 17).

    util  <  core  <  models  <  course  <  figures, widgets     (plotting: drawing, no math)

``util`` holds the private checks and the extras guard; ``core`` the concepts; ``models`` the two
whole models (``seq2seq``, ``minilm``, each with its config, never importing each other);
``course`` the experiments and demo inputs. ``plotting`` draws from data and imports no math;
``figures`` and ``widgets`` sit on top and never import each other, and inside ``widgets`` the
framework never imports an explorer. Checked by parsing every module's imports with ``ast``
(lazy ones included), and in fresh interpreters for what an import really loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import attnlib

PACKAGE = Path(attnlib.__file__).parent
#: The math and data layers, lowest first: a module may import its own layer and those below.
MATH = ("util", "core", "models", "course")
#: Drawing and the two upper layers.
UPPER = ("plotting", "figures", "widgets")
LAYERS = MATH + UPPER


def _attnlib_imports(path: Path, package: str | None = None) -> set[str]:
    """The attnlib modules a file imports, as dotted names (``from attnlib import plotting``
    counts as ``attnlib.plotting``; relative imports are resolved against the file's package)."""
    if package is None:
        package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "attnlib"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            if base.split(".")[0] != "attnlib":
                continue
            if base == "attnlib":  # from attnlib import plotting, dot_score
                for a in node.names:
                    sub = PACKAGE / a.name
                    is_module = sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()
                    found.add(f"attnlib.{a.name}" if is_module else "attnlib")
            else:
                found.add(base)
    return found


def _top(name: str) -> str:
    return name.split(".")[1] if "." in name else ""


def _allowed(layer: str, name: str) -> bool:
    """May a module of ``layer`` import ``name``? (``from attnlib import X`` counts as
    ``attnlib``, the package face, which only the upper layers may use.)"""
    top = _top(name)
    if name == "attnlib.util._extras":
        return True  # the optional-extras guard, used by every layer that needs an extra
    if name in ("attnlib.util.i18n", "attnlib.util.fonts"):
        return True  # the language of every word shown (loaded by `import attnlib` already)
    if layer == "plotting":
        return top == "plotting"
    if layer in MATH:
        return top in MATH[: MATH.index(layer) + 1]
    if name == "attnlib":
        return False
    return top in MATH or top in ("plotting", layer)


def _modules(layer: str):
    return sorted((PACKAGE / layer).rglob("*.py"))


def test_every_module_lives_in_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside the layer folders: {loose}"
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(LAYERS), folders


def _cases():
    for layer in LAYERS:
        for path in _modules(layer):
            yield pytest.param(layer, path, id=str(path.relative_to(PACKAGE)))


@pytest.mark.parametrize("layer, path", list(_cases()))
def test_module_imports_only_its_layer_and_below(layer, path):
    bad = sorted(n for n in _attnlib_imports(path) if not _allowed(layer, n))
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_the_models_do_not_import_each_other():
    for model, other in (("seq2seq", "minilm"), ("minilm", "seq2seq")):
        for path in sorted((PACKAGE / "models" / model).glob("*.py")):
            bad = sorted(
                n for n in _attnlib_imports(path) if n.startswith(f"attnlib.models.{other}")
            )
            assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_the_explorer_framework_imports_no_explorer():
    for path in sorted((PACKAGE / "widgets" / "framework").glob("*.py")):
        bad = sorted(n for n in _attnlib_imports(path) if n.startswith("attnlib.widgets.explorers"))
        bad += sorted(n for n in _attnlib_imports(path) if n == "attnlib.widgets")
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_the_parser_sees_every_kind_of_import(tmp_path):
    # The guard itself: absolute, from-package, relative and lazy (inside a function) imports.
    src = tmp_path / "probe.py"
    src.write_text(
        "import attnlib.widgets.base\nfrom attnlib import plotting, dot_score\n"
        "from ..course.scaling import entropy\n"
        "def f():\n    from attnlib.widgets.explorers.heads import heads_explorer\n"
    )
    got = _attnlib_imports(src, package="attnlib.figures")
    assert got == {
        "attnlib.widgets.base",
        "attnlib.plotting",
        "attnlib",
        "attnlib.course.scaling",
        "attnlib.widgets.explorers.heads",
    }
    assert not _allowed("figures", "attnlib.widgets.explorers.heads")
    assert not _allowed("widgets", "attnlib.figures")
    assert not _allowed("plotting", "attnlib.core.softmax")
    assert not _allowed("core", "attnlib.course.examples")
    assert not _allowed("models", "attnlib.course.examples")
    assert _allowed("course", "attnlib.models.seq2seq.model")
    assert _allowed("widgets", "attnlib.widgets.base") and _allowed(
        "figures", "attnlib.course.examples"
    )


def test_importing_the_figures_does_not_import_the_explorers():
    code = "import sys, attnlib.figures; print('attnlib.widgets' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


def test_importing_plotting_loads_no_math_beyond_what_attnlib_init_loads():
    # In a fresh interpreter: the modules `import attnlib` loads, then those attnlib.plotting adds.
    code = (
        "import sys\n"
        "def ours(): return {m for m in sys.modules if m.split('.')[0] == 'attnlib'}\n"
        "import attnlib\n"
        "before = ours()\n"
        "import attnlib.plotting\n"
        "print((sorted(before), sorted(ours() - before)))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, added = (set(x) for x in ast.literal_eval(run.stdout.strip()))
    assert "attnlib.core.softmax" in before  # the probe sees what attnlib/__init__ loads
    # plotting adds only itself and the optional-dependency helper: no math module, no layer above
    assert {m for m in added if _top(m) != "plotting"} <= {"attnlib.util._extras"}
    assert "attnlib.plotting.matrices" in added
