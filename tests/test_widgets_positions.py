"""The positions explorer: its matrix, pairs, angles and dot products against the closed form of
sin/cos.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlib.widgets.explorers.positions import BASES, positions_explorer


@pytest.fixture(scope="module")
def explorer():
    return positions_explorer()


def omega(i, base=10000.0, d=16):
    return 1.0 / base ** (2 * i / d)


def test_defaults(explorer):
    assert explorer.values() == {"pos": 3, "k": 5, "i": 1, "base": 10000}


@pytest.mark.parametrize(
    "pos,k,i,base",
    [(3, 5, 1, 10000), (0, 0, 0, 10000), (31, 32, 7, 10000), (10, 17, 4, 100), (7, 3, 7, 100000)],
)
def test_c31_c32_readout_matches_closed_form(explorer, pos, k, i, base):
    state = explorer.state(pos=pos, k=k, i=i, base=base)
    w = omega(i, base)
    a = w * k
    # float64 throughout; sin/cos of angles below ~70 rad agree to ~1e-14
    assert state["w_i"] == pytest.approx(w, rel=1e-12)
    assert state["wavelength 2π / w_i"] == pytest.approx(
        2 * math.pi * base ** (2 * i / 16), rel=1e-12
    )
    assert state["angle w_i k (rad, not reduced mod 2π)"] == pytest.approx(a, rel=1e-12, abs=1e-15)
    # the plotted angle: the same direction as a, reduced to [0, 2π) (atan2 as the reference)
    assert state["angle w_i k mod 2π (as plotted)"] == pytest.approx(
        math.atan2(math.sin(a), math.cos(a)) % (2 * math.pi), abs=1e-12
    )
    assert np.allclose(
        state["R(k), clockwise by w_i k"],
        [[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]],
        atol=1e-12,
    )
    assert np.allclose(state["pair at pos"], [math.sin(w * pos), math.cos(w * pos)], atol=1e-12)
    target = [math.sin(w * (pos + k)), math.cos(w * (pos + k))]
    assert np.allclose(state["pair at pos + k"], target, atol=1e-12)
    assert np.allclose(state["R(k) @ pair at pos"], target, atol=1e-12)
    closed = sum(math.cos(omega(j, base) * k) for j in range(8))
    assert state["Σ_i cos(w_i k)"] == pytest.approx(closed, abs=1e-12)
    assert state["PE(pos)·PE(pos + k)"] == pytest.approx(closed, abs=1e-12)


def test_fingerprint_and_similarity_arrays(explorer):
    fr = explorer.compute(pos=20, k=9, i=2, base=1000)
    angles = np.asarray(fr.arrays["angles"])
    want = [math.fmod(omega(j, 1000) * 9, 2 * math.pi) for j in range(8)]
    assert np.allclose(angles, want, atol=1e-12)
    dots = np.asarray(fr.arrays["dots"])  # (K, 2): k', PE(20)·PE(20 + k')
    for kk in (0, 1, 13, 32):
        pe = lambda p: [f(omega(j, 1000) * p) for j in range(8) for f in (math.sin, math.cos)]  # noqa: E731
        assert dots[kk, 0] == kk and dots[kk, 1] == pytest.approx(
            float(np.dot(pe(20), pe(20 + kk))), abs=1e-12
        )
    # 平移不变: the curve of dot products is the same whatever pos is
    other = np.asarray(explorer.compute(pos=0, k=9, i=2, base=1000).arrays["dots"])
    assert np.allclose(other, dots, atol=1e-12)


def test_table_is_the_closed_form(explorer):
    pe = explorer.data["pe"]
    assert pe.shape == (64, 16)
    for pos in (0, 5, 63):
        for c in range(16):
            w = 1.0 / 10000 ** ((c - c % 2) / 16)
            want = math.sin(pos * w) if c % 2 == 0 else math.cos(pos * w)
            assert float(pe[pos, c]) == pytest.approx(want, abs=1e-12)


def test_picture_changes():
    ex = positions_explorer()
    a = ex.png()
    ex.set(i=5, k=20, base=100)
    assert ex.png() != a


def test_bad_input():
    with pytest.raises(ValueError, match="d_model"):
        positions_explorer(d_model=5)
    with pytest.raises(ValueError, match="freq"):
        positions_explorer(freq=8)
    with pytest.raises(ValueError, match="pos"):
        positions_explorer(pos=40)
    with pytest.raises(ValueError, match="base"):
        positions_explorer(base=5)
    assert BASES == (100, 1000, 10000, 100000)


@pytest.mark.parametrize("k,i", [(0, 0), (0, 5), (5, 1), (32, 7)])
def test_the_drawn_matrix_text_is_the_rotation_rounded_with_no_negative_zero(explorer, k, i):
    # at k = 0 the rotation is the identity: sin = 0 must print "+0.00" in both places
    a = omega(i) * k
    c, s = math.cos(a), math.sin(a)
    text = explorer.compute(pos=3, k=k, i=i, base=10000).texts["matrix"]
    cells = [float(x) for x in text.replace("R(k) = ", "").strip("[]").replace("], [", " ").split()]
    assert cells == pytest.approx([c, s, -s, c], abs=0.005 + 1e-12)
    assert "-0.00" not in text
