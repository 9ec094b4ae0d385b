"""The heads explorer: each head's map against a per-head softmax written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.examples import DEFAULT_TOKENS, demo_projections, sentence_embeddings
from attnlib.multihead import head_weight_maps
from attnlib.widgets import BUILDERS
from attnlib.widgets.heads import heads_explorer


pytestmark = pytest.mark.usefixtures("agg_figures")


def hand_head(data, h, r):
    """Head r of h by hand: its own columns of x W_Qᵀ and x W_Kᵀ, scaled by 1/sqrt(Dh)."""
    x, wq, wk = data.x[0], data.w_q, data.w_k
    d = x.shape[-1]
    dh = d // h
    q = (x @ wq.T)[:, r * dh:(r + 1) * dh]
    k = (x @ wk.T)[:, r * dh:(r + 1) * dh]
    return torch.softmax(q @ k.T / math.sqrt(dh), dim=-1)


def test_registered():
    assert BUILDERS["heads"] is heads_explorer


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_c16_head_maps_match_hand_computation(h):
    data = demo_projections()
    maps = head_weight_maps(data.x, data.w_q, data.w_k, h)
    assert maps.shape == (h, 6, 6)
    for r in range(h):
        torch.testing.assert_close(maps[r], hand_head(data, h, r))


def test_readout_shows_selected_head():
    ex = heads_explorer()
    for log2h, head in [(0, 1), (1, 2), (2, 3), (3, 8), (1, 8)]:
        state = ex.set(log2_heads=log2h, head=head)
        h = 2 ** log2h
        r = min(head, h)
        assert state["heads h"] == h and state["head width Dh"] == 16 // h and state["shown head r"] == r
        want = hand_head(ex.data, h, r - 1)
        assert np.allclose(state[f"weights of head {r}"], want.numpy(), atol=1e-12)


def test_c28_heads_are_not_copies_and_c17_one_head_has_one_map():
    ex = heads_explorer()
    assert ex.set(log2_heads=0, head=1)["mean |A_r - A_s| between heads"] == 0.0
    for log2h in (1, 2, 3):
        assert ex.set(log2_heads=log2h)["mean |A_r - A_s| between heads"] > 0.01
    data = ex.data
    wide = head_weight_maps(data.x, data.w_q, data.w_k, 1)[0]
    four = head_weight_maps(data.x, data.w_q, data.w_k, 4)
    assert all((four[r] - wide).abs().max() > 0.05 for r in range(4))


def test_equal_tokens_get_equal_rows_without_positions():
    data = demo_projections()
    assert torch.equal(data.x[0, 0], data.x[0, 4])  # "the" twice
    maps = head_weight_maps(data.x, data.w_q, data.w_k, 4)
    torch.testing.assert_close(maps[:, 0], maps[:, 4])


def test_sentence_embeddings():
    gen = torch.Generator().manual_seed(3)
    x = sentence_embeddings(["a", "b", "a"], 5, generator=gen)
    assert x.shape == (1, 3, 5)
    assert torch.equal(x[0, 0], x[0, 2]) and not torch.equal(x[0, 0], x[0, 1])
    with pytest.raises(ValueError, match="tokens"):
        sentence_embeddings([], 4)
    with pytest.raises(TypeError, match="tokens"):
        sentence_embeddings(["a", 1], 4)


def test_global_generator_untouched_and_picture_changes():
    before = torch.random.get_rng_state()
    ex = heads_explorer()
    assert torch.equal(torch.random.get_rng_state(), before)
    a = ex.render()
    n_artists = len(ex.figure.axes[-1].get_children())
    ex.set(log2_heads=3, head=5)
    tiles = ex.figure.axes[-1].images[0]
    head8 = (slice(7, 13), slice(21, 27))  # row 2, column 4 of the mosaic (tiles of 6 plus a gap)
    assert np.ptp(np.asarray(tiles.get_array())[head8][..., :3]) > 0  # head 8 is drawn
    b = ex.render()
    ex.set(log2_heads=0)
    assert np.ptp(np.asarray(tiles.get_array())[head8][..., :3]) == 0  # head 8 does not exist: grey
    assert len(ex.figure.axes[-1].get_children()) == n_artists
    assert not np.array_equal(a, b)


def test_bad_input():
    with pytest.raises(ValueError, match="num_heads"):
        heads_explorer(num_heads=3)
    with pytest.raises(ValueError, match="d_model"):
        heads_explorer(d_model=12)
    with pytest.raises(ValueError, match="tokens"):
        heads_explorer(("a",))
    assert list(DEFAULT_TOKENS) == ["the", "cat", "sat", "on", "the", "mat"]
