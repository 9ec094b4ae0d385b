"""tools/notebooks.py's command line (TOOL-1, TOOL-3): a folder with no notebook, or a missing
file, is an error naming it, never a fall back to every notebook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "tools/notebooks.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("command", ["check", "booleans", "run", "sync"])
def test_an_empty_folder_is_an_error_naming_it(tmp_path, command):
    r = _tool(command, str(tmp_path))
    assert r.returncode != 0
    assert f"no NN_*.ipynb notebook in the folder {tmp_path}" in r.stderr
    assert "notebooks clean" not in r.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["check", "run"])
def test_a_missing_notebook_is_an_error_naming_it(command):
    r = _tool(command, "notebooks/99_nope.ipynb")
    assert r.returncode != 0
    assert "no notebook notebooks/99_nope.ipynb" in r.stderr
    assert "Traceback" not in r.stderr
