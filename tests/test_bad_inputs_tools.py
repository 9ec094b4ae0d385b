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


def _explorer(layer_error: bool | None):
    """A one-slider explorer: no layer (None), a layer, or a layer whose builder raises."""
    import numpy as np
    import torch

    from attnlib.widgets.framework.artists import Bars, Heatmap
    from attnlib.widgets.framework.controls import dropdown, float_slider
    from attnlib.widgets.framework.explorer import Explorer
    from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells

    def layer(which):
        if layer_error and which == "b":
            raise ValueError("surface must be square (the builder's own check)")
        return {"surface": np.eye(3)}

    def compute(x, which):
        w = torch.softmax(torch.tensor([x, 0.0, -x], dtype=torch.float64), 0)
        return Frame(arrays={"w": w}, readout={"w": w})

    controls = {
        "x": float_slider("x", -1.0, 1.0, 0.0, step=0.5),
        "which": dropdown("m", ["a", "b"]),
    }
    panels = [Panel([Bars("w")], xlim=(-0.6, 2.6), ylim=(0, 1))]
    if layer_error is not None:
        panels.insert(0, Panel([Heatmap("surface")], **cells(3, 3)))
    scene = Scene(panels, cols=len(panels))
    return Explorer(controls, compute, scene, layer=None if layer_error is None else layer)


def test_has_layer_and_the_site_lets_a_layers_error_through():
    from tools import site_state

    assert _explorer(None).has_layer is False
    with pytest.raises(ValueError, match="has no layer"):
        _explorer(None).layer()
    assert site_state._layer_arrays(_explorer(None)) == ({}, {})
    good = _explorer(False)
    assert good.has_layer is True
    arrays, shapes = site_state._layer_arrays(good)
    assert shapes == {"surface": [3, 3]}
    bad = _explorer(True)
    assert bad.has_layer is True
    bad.controls["which"].value = "b"  # the layer's builder raises for "b" only
    with pytest.raises(ValueError, match="surface must be square"):
        site_state._layer_arrays(bad)


def test_site_build_refuses_an_out_that_is_a_file_before_computing_frames(tmp_path):
    out = tmp_path / "site.txt"
    out.write_text("keep me")
    r = _run("-m", "tools.site", "build", "--out", str(out), "05_masking")
    assert r.returncode == 2
    assert f"--out {out}" in r.stderr and "is a file" in r.stderr
    assert "Traceback" not in r.stderr
    assert out.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.txt"]


def test_site_build_refuses_a_notebook_outside_notebooks(tmp_path):
    copy = tmp_path / "66_copy.ipynb"
    copy.write_bytes((ROOT / "notebooks" / "05_masking.ipynb").read_bytes())
    r = _run("-m", "tools.site", "build", "--out", str(tmp_path / "site"), str(copy))
    assert r.returncode == 2
    assert "not a notebook of notebooks/" in r.stderr and "66_copy.ipynb" in r.stderr
    assert "make translations" not in r.stderr
    assert not (tmp_path / "site").exists()
