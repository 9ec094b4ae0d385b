"""Modules a reader can hold: no Python module of attnlib is over 400 lines (house style 1)."""

from __future__ import annotations

from pathlib import Path

LIMIT = 400
PACKAGE = Path(__file__).resolve().parents[1] / "attnlib"


def test_no_attnlib_module_is_over_400_lines():
    sizes = {
        str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    assert len(sizes) > 50  # the whole package was read
    too_long = {name: n for name, n in sizes.items() if n > LIMIT}
    assert not too_long, f"split these along their ideas (over {LIMIT} lines): {too_long}"
