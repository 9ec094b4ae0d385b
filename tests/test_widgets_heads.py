"""The heads explorer: each head's map against a per-head softmax written out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.core.multihead import head_weight_maps
from attnlib.course.examples import DEFAULT_TOKENS, demo_projections, sentence_embeddings
from attnlib.widgets.explorers.heads import HEAD_CHOICES, heads_explorer, repeated_token


def hand_head(x, data, h, r):
    """Head r (0-based) of h by hand: its own columns of x W_Qᵀ and x W_Kᵀ, scaled by 1/sqrt(Dh)."""
    d = x.shape[-1]
    dh = d // h
    q = (x @ data.w_q.T)[:, r * dh : (r + 1) * dh]
    k = (x @ data.w_k.T)[:, r * dh : (r + 1) * dh]
    return torch.softmax(q @ k.T / math.sqrt(dh), dim=-1)


def hand_positions(L, d):
    """The sinusoidal table from its closed form, with math.sin / math.cos."""
    return torch.tensor(
        [
            [
                math.sin(p / 10000 ** (c / d))
                if c % 2 == 0
                else math.cos(p / 10000 ** ((c - 1) / d))
                for c in range(d)
            ]
            for p in range(L)
        ],
        dtype=torch.float64,
    )


@pytest.fixture(scope="module")
def explorer():
    return heads_explorer()


def test_defaults_and_head_choices(explorer):
    assert explorer.values() == {"heads": 4, "positions": False}
    assert list(explorer.controls["heads"].options) == list(HEAD_CHOICES)


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_c16_head_maps_match_hand_computation(h):
    data = demo_projections()
    maps = head_weight_maps(data.x, data.w_q, data.w_k, h)
    assert maps.shape == (h, 6, 6)
    for r in range(h):
        torch.testing.assert_close(maps[r], hand_head(data.x[0], data, h, r))


@pytest.mark.parametrize("h", HEAD_CHOICES)
@pytest.mark.parametrize("positions", [False, True])
def test_every_panel_is_the_hand_computed_head(explorer, h, positions):
    fr = explorer.compute(heads=h, positions=positions)
    x = explorer.data.x[0] + (hand_positions(6, 16) if positions else 0.0)  # (L, D)
    wide = hand_head(x, explorer.data, 1, 0)
    # float64 softmax of O(1) scores: agreement to a few ulps of 1
    torch.testing.assert_close(torch.as_tensor(fr.arrays["wide"]), wide, rtol=0, atol=1e-12)
    heads = [hand_head(x, explorer.data, h, r) for r in range(h)]
    torch.testing.assert_close(
        torch.as_tensor(fr.arrays["mean"]), torch.stack(heads).mean(0), rtol=0, atol=1e-12
    )
    for r in range(8):
        w, hid = torch.as_tensor(fr.arrays[f"w{r + 1}"]), torch.as_tensor(fr.arrays[f"hid{r + 1}"])
        if r < h:
            torch.testing.assert_close(w, heads[r], rtol=0, atol=1e-12)
            assert not hid.any() and fr.texts[f"t{r + 1}"] == ""
        else:
            assert hid.all() and f"no head {r + 1}" in fr.texts[f"t{r + 1}"]
    assert fr.readout["heads h"] == h and fr.readout["head width Dh = D / h"] == 16 // h
    torch.testing.assert_close(
        torch.as_tensor(fr.readout["query 0's row, head 1"]), heads[0][0], rtol=0, atol=1e-12
    )


def test_c17_wide_head_is_the_scaled_sum_of_head_scores_not_the_mean_of_maps(explorer):
    # q·k/√D = (1/√h) Σ_r s^(r): the wide map is the same for every h; the mean of the heads' maps
    # is not it
    data = explorer.data
    x = data.x[0]
    for h in (2, 4, 8):
        dh = 16 // h
        q, k = x @ data.w_q.T, x @ data.w_k.T
        s = torch.stack(
            [
                q[:, r * dh : (r + 1) * dh] @ k[:, r * dh : (r + 1) * dh].T / math.sqrt(dh)
                for r in range(h)
            ]
        )
        fr = explorer.compute(heads=h, positions=False)
        torch.testing.assert_close(
            torch.as_tensor(fr.arrays["wide"]),
            torch.softmax(s.sum(0) / math.sqrt(h), -1),
            rtol=0,
            atol=1e-12,
        )
        assert fr.readout["max |mean of heads - wide head|"] > 0.05


def test_c28_heads_are_not_copies(explorer):
    assert explorer.state(heads=1)["mean |A_r - A_s| between heads"] == 0.0
    for h in (2, 4, 8):
        fr = explorer.compute(heads=h, positions=False)
        maps = torch.stack([torch.as_tensor(fr.arrays[f"w{r + 1}"]) for r in range(h)])
        pairs = [(maps[a] - maps[b]).abs().mean() for a in range(h) for b in range(h) if a != b]
        assert fr.readout["mean |A_r - A_s| between heads"] == pytest.approx(
            float(sum(pairs) / len(pairs)), rel=1e-12
        )
        assert fr.readout["mean |A_r - A_s| between heads"] > 0.01


def test_positions_split_the_rows_of_the_repeated_token(explorer):
    assert repeated_token(DEFAULT_TOKENS) == (0, 4) and repeated_token(["a", "b"]) is None
    label = "max |row 0 - row 4| ('the'), all heads"
    for h in HEAD_CHOICES:
        assert (
            explorer.state(heads=h, positions=False)[label] < 1e-12
        )  # identical embeddings, no positions
        assert explorer.state(heads=h, positions=True)[label] > 0.01


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
    a = ex.png()
    ex.set(heads=8, positions=True)
    assert ex.png() != a


def test_bad_input():
    with pytest.raises(ValueError, match="num_heads"):
        heads_explorer(num_heads=3)
    with pytest.raises(ValueError, match="d_model"):
        heads_explorer(d_model=12)
    with pytest.raises(ValueError, match="tokens"):
        heads_explorer(("a",))
    assert list(DEFAULT_TOKENS) == ["the", "cat", "sat", "on", "the", "mat"]
