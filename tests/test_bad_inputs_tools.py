"""The tools' command lines given bad input (the review's section 2 rows for tools/ and
attnlib.figures): each exits non-zero with a clear error naming the argument, and writes nothing.
Every call runs in a subprocess against temporary folders; the real catalogs are compared before
and after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    # This checkout's attnlib and tools, whatever the working folder.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _snapshot() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(CATALOGS.glob("*.po"))}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["extract", "notebooks/zh/05_masking.ipynb"], "not an English notebook"),
        (["extract", "notebooks/99_nonexistent.ipynb"], "no notebook notebooks/99_nonexistent"),
        (["check", "notebooks/99_nonexistent.ipynb"], "no notebook notebooks/99_nonexistent"),
        (["generate", "notebooks/zh/05_masking.ipynb"], "not an English notebook"),
        (["stats", "notebooks/99_nonexistent.ipynb"], "no notebook notebooks/99_nonexistent"),
    ],
)
def test_i18n_refuses_and_writes_nothing(args, message):
    before = _snapshot()
    r = _run("-m", "tools.i18n", *args)
    assert r.returncode != 0
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert _snapshot() == before


def test_figures_cli_takes_names_and_refuses_an_unknown_one(tmp_path):
    r = _run("-m", "attnlib.figures", "--out", str(tmp_path / "out"), "not_a_figure", cwd=tmp_path)
    assert r.returncode != 0
    assert "unknown figure name(s) not_a_figure" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_figures_cli_writes_the_named_figure_into_out(tmp_path):
    from attnlib.figures import FIGURES, FORMATS

    name = sorted(FIGURES)[0]
    r = _run("-m", "attnlib.figures", "--out", str(tmp_path / "out"), name, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        f"{name}.{fmt}" for fmt in FORMATS[name]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
