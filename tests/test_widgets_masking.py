"""The masking explorer: its numbers against a softmax over the visible keys written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.examples import DEFAULT_VALID_LENS, demo_batch
from attnlib.masks import causal_mask, padding_mask
from attnlib.plotting import hatch_overlay
from attnlib.widgets import BUILDERS
from attnlib.widgets.masking import masking_explorer


pytestmark = pytest.mark.usefixtures("agg_figures")


def expected_weights(q, k, lens, causal):
    """Weights of every query, by hand: softmax over keys j < len (and j <= i), zeros if none."""
    B, L, d = q.shape
    out = torch.zeros(B, L, L, dtype=q.dtype)
    for b in range(B):
        for i in range(L):
            keys = [j for j in range(L) if j < lens[b] and (not causal or j <= i)]
            if keys:
                s = torch.stack([q[b, i] @ k[b, j] for j in keys]) / math.sqrt(d)
                out[b, i, keys] = torch.softmax(s, 0)
    return out


def test_registered():
    assert BUILDERS["masking"] is masking_explorer


@pytest.mark.parametrize("lens,causal", [((6, 4, 2), False), ((6, 4, 2), True), ((0, 3, 6), True),
                                         ((1, 0, 5), False)])
def test_c11_c25_c37_weights_match_hand_softmax(lens, causal):
    ex = masking_explorer()
    state = ex.set(len0=lens[0], len1=lens[1], len2=lens[2], causal=causal)
    q, k = ex.data["q"], ex.data["k"]
    want = expected_weights(q, k, lens, causal)
    for b in range(3):
        assert state[f"row {b}: weights of query 2"] == pytest.approx(want[b, 2].tolist(), abs=1e-12)
        sums = [1.0 if any(j < lens[b] and (not causal or j <= i) for j in range(6)) else 0.0
                for i in range(6)]
        assert state[f"row {b}: row sums (per query)"] == pytest.approx(sums, abs=1e-12)
    assert state["max weight on a hidden key"] == 0.0
    assert state["valid_lens"] == list(lens)


def test_c25_valid_len_zero_gives_zero_rows_not_uniform():
    ex = masking_explorer()
    state = ex.set(len0=0, len1=6, len2=6, causal=False)
    assert state["row 0: weights of query 2"] == [0.0] * 6
    assert state["fully hidden query rows"] == 6
    state = ex.set(len0=0, len1=0, len2=0)
    assert state["fully hidden query rows"] == 18


def test_c37_padding_and_causal_combine_by_and():
    """The recipe the explorer uses: padding_mask(lens, S)[:, None] & causal_mask(L)."""
    lens = torch.tensor([2, 5, 0])
    got = padding_mask(lens, 5)[:, None] & causal_mask(5)  # (B, L, S)
    assert got.shape == (3, 5, 5)
    for b in range(3):
        for i in range(5):
            for j in range(5):  # by hand: a real key AND not in the future
                assert bool(got[b, i, j]) == (j < int(lens[b]) and j <= i)


def test_hatch_overlay_marks_only_hidden_cells():
    vis = torch.tensor([[True, False], [False, True]])
    rgba = hatch_overlay(vis, cell_px=4)
    assert rgba.shape == (8, 8, 4)
    alpha = rgba[..., 3]
    assert (alpha[:4, :4] == 0).all() and (alpha[4:, 4:] == 0).all()
    assert (alpha[:4, 4:] > 0).any() and (alpha[4:, :4] > 0).any()
    assert (alpha[:4, 4:] == 0).any()  # stripes, not a solid block
    with pytest.raises(ValueError, match="2-D"):
        hatch_overlay(torch.ones(3, dtype=torch.bool))


def test_demo_batch_leaves_global_generator_alone():
    before = torch.random.get_rng_state()
    q, k, v = demo_batch()
    assert torch.equal(torch.random.get_rng_state(), before)
    assert q.shape == (3, 6, 8) and k.shape == (3, 6, 8) and v.shape == (3, 6, 4)
    assert torch.equal(demo_batch()[0], q)


def test_updates_in_place_and_picture_changes():
    ex = masking_explorer()
    fig = ex.figure
    n_artists = len(fig.axes[0].get_children())
    before = ex.render()
    ex.set(len1=1, causal=True)
    after = ex.render()
    assert ex.figure is fig and len(fig.axes[0].get_children()) == n_artists
    assert not np.array_equal(before, after)


def test_bad_input():
    with pytest.raises(ValueError, match="3 lengths"):
        masking_explorer((1, 2))
    with pytest.raises(ValueError, match="valid_lens"):
        masking_explorer((7, 1, 1))
    with pytest.raises(ValueError, match="num_tokens"):
        masking_explorer(DEFAULT_VALID_LENS, num_tokens=1)
