"""The positions explorer: its matrix and pairs against the closed form of sin/cos."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlib.widgets import BUILDERS
from attnlib.widgets.positions import positions_explorer


pytestmark = pytest.mark.usefixtures("agg_figures")


def test_registered():
    assert BUILDERS["positions"] is positions_explorer


@pytest.mark.parametrize("pos,k,i", [(3, 5, 1), (0, 0, 0), (31, 32, 7), (10, 17, 4)])
def test_c31_c32_readout_matches_closed_form(pos, k, i):
    ex = positions_explorer()
    state = ex.set(pos=pos, k=k, i=i)
    w = 1.0 / 10000 ** (2 * i / 16)
    a = w * k
    assert state["w_i"] == pytest.approx(w, rel=1e-12)
    assert state["angle w_i k (rad)"] == pytest.approx(a, rel=1e-12, abs=1e-15)
    assert np.allclose(state["R(k)"], [[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]], atol=1e-12)
    assert np.allclose(state["pair at pos"], [math.sin(w * pos), math.cos(w * pos)], atol=1e-12)
    target = [math.sin(w * (pos + k)), math.cos(w * (pos + k))]
    assert np.allclose(state["PE[pos + k, 2i:2i+2]"], target, atol=1e-12)
    assert np.allclose(state["R(k) @ pair at pos"], target, atol=1e-12)
    assert state["max |R(k) p(pos) - p(pos+k)|"] < 1e-12


def test_table_is_the_closed_form():
    ex = positions_explorer()
    pe = ex.data["pe"]
    assert pe.shape == (64, 16)
    for pos in (0, 5, 63):
        for c in range(16):
            w = 1.0 / 10000 ** ((c - c % 2) / 16)
            want = math.sin(pos * w) if c % 2 == 0 else math.cos(pos * w)
            assert float(pe[pos, c]) == pytest.approx(want, abs=1e-12)


def test_picture_updates_in_place():
    ex = positions_explorer()
    fig, n = ex.figure, len(ex.figure.axes[0].get_children())
    a = ex.render()
    ex.set(i=5, k=20)
    assert ex.figure is fig and len(fig.axes[0].get_children()) == n
    assert not np.array_equal(a, ex.render())


def test_bad_input():
    with pytest.raises(ValueError, match="d_model"):
        positions_explorer(d_model=5)
    with pytest.raises(ValueError, match="freq"):
        positions_explorer(freq=8)
    with pytest.raises(ValueError, match="pos"):
        positions_explorer(pos=40)
