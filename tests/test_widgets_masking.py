"""The masking explorer: its numbers against a softmax over the visible keys written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlib.core.masks import causal_mask, padding_mask
from attnlib.course.examples import DEFAULT_VALID_LENS, demo_batch
from attnlib.plotting import hatch_overlay
from attnlib.widgets.explorers.masking import masking_explorer


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


def reference_scores(ex):
    """Scores q kᵀ / sqrt(d) of the explorer's inputs, by plain torch: (B, L, S) float64."""
    q, k = ex.data["q"], ex.data["k"]
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def drawn_weights(frame, b):
    """The weights the explorer draws for batch row b (NaN cells: hatched, drawn as 0)."""
    return torch.as_tensor(np.asarray(frame.arrays[f"w{b}"]))


@pytest.mark.parametrize(
    "lens,causal", [((6, 4, 2), False), ((6, 4, 2), True), ((0, 3, 6), True), ((1, 0, 5), False)]
)
def test_c11_c25_c37_weights_match_hand_softmax(lens, causal):
    ex = masking_explorer()
    setting = dict(len0=lens[0], len1=lens[1], len2=lens[2], causal=causal)
    frame = ex.compute(**setting)
    state = ex.state(**setting)
    q, k = ex.data["q"], ex.data["k"]
    want = expected_weights(q, k, lens, causal)
    # float32 softmax of float64 scores: each weight within a few float32 ulps of the float64 one
    # (|w| <= 1, eps32 = 1.2e-7; the cast of the scores and the softmax add < 10 eps32)
    for b in range(3):
        np.testing.assert_allclose(
            drawn_weights(frame, b).numpy(), want[b].numpy(), rtol=0, atol=1.2e-6
        )
    assert state["largest weight on a hidden key"] == 0.0
    assert state["NaN weights"] == 0
    assert state["largest |w - exact| (non-NaN)"] < 1.2e-6
    empty = sum(
        1
        for b in range(3)
        for i in range(6)
        if not any(j < lens[b] and (not causal or j <= i) for j in range(6))
    )
    assert state["fully hidden query rows"] == empty
    assert state["valid_lens"] == list(lens)


def test_c25_valid_len_zero_gives_zero_rows_not_uniform():
    ex = masking_explorer()
    state = ex.state(len0=0, len1=6, len2=6, causal=False)
    assert state["row 0: a fully hidden query gets"] == "zeros"
    assert state["row 1: a fully hidden query gets"] == "(none)"
    assert state["fully hidden query rows"] == 6
    assert (drawn_weights(ex.compute(len0=0), 0) == 0).all()
    assert ex.state(len0=0, len1=0, len2=0)["fully hidden query rows"] == 18


@pytest.mark.parametrize(
    "recipe,dtype,verdict",
    [
        ("add M = -inf (plain softmax)", "float32", "NaN"),
        ("add M = -1e9", "float16", "NaN"),  # -1e9 is -inf in float16
        ("add M = -1e9", "float32", "uniform"),  # steps of 64 at 1e9 round the scores away
        ("add M = -1e6", "float32", "≈ as if unmasked"),  # steps of 1/16 at 1e6 keep them, rounded
        ("add M = -1e6", "bfloat16", "uniform"),
        ("replace by -1e6 (d2l)", "float32", "uniform"),
        ("add M = finfo(dtype).min", "float16", "uniform"),
        ("attnlib masked_softmax", "bfloat16", "zeros"),
    ],
)
def test_c12_recipe_and_dtype_show_the_failure_modes(recipe, dtype, verdict):
    ex = masking_explorer()
    setting = dict(len0=0, len1=6, len2=6, causal=False, recipe=recipe, dtype=dtype)
    state = ex.state(**setting)
    assert state["row 0: a fully hidden query gets"] == verdict
    scores = reference_scores(ex)  # (B, L, S) float64
    s = scores[0]  # (L, S): the reference for row 0
    w = drawn_weights(ex.compute(**setting), 0)
    nan_marks = np.asarray(ex.compute(**setting).arrays["nan0"])
    if verdict == "NaN":
        assert state["NaN weights"] == 36 and (nan_marks >= 0).all()  # every cell marked
    else:
        assert state["NaN weights"] == 0 and (nan_marks < 0).all()  # no cell marked
    if (
        verdict == "uniform"
    ):  # 1/6 on every (hidden) key; bfloat16/float16 round 1/6 to 8 or 11 bits
        np.testing.assert_allclose(w.numpy(), 1 / 6, atol=2e-3)
        assert state["largest weight on a hidden key"] == pytest.approx(1 / 6, abs=2e-3)
    if verdict == "≈ as if unmasked":  # s - 1e6 rounded to 1/16: each log-weight off by <= 1/16
        np.testing.assert_allclose(
            w.numpy(), torch.softmax(s, -1).numpy(), rtol=math.expm1(1 / 16) * 1.01
        )
        assert state["largest weight on a hidden key"] > 0.1
    if verdict == "zeros":
        assert (w == 0).all()
    # rows 1 and 2 see every key: every recipe agrees there with the float64 softmax
    # (dtype's rounding)
    # the dtype's rounding of weights <= 1 (u = 6e-8, 4.9e-4, 3.9e-3), a few times (the scores'
    # cast, the exp, the sum of 6): ~10 u for float32, ~4 u for the 16-bit types
    atol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    for b in (1, 2):
        np.testing.assert_allclose(
            drawn_weights(ex.compute(**setting), b).numpy(),
            torch.softmax(scores[b], -1).numpy(),
            atol=atol,
        )


def test_finfo_min_added_twice_overflows_and_leaks_onto_hidden_keys():
    """finfo.min + finfo.min = -inf; with the causal mask a valid_len-0 query 0 puts weight 1
    on key 0.
    """
    ex = masking_explorer()
    setting = dict(len0=0, causal=True, recipe="add M = finfo(dtype).min")
    state = ex.state(**setting)
    frame = ex.compute(**setting)
    w = drawn_weights(frame, 0)
    # query i: keys j <= i carry one finfo.min (uniform among them), keys j > i two (-inf, weight 0)
    for i in range(6):  # float32: a uniform row of <= 6 equal weights, ~6 u = 4e-7 from 1/(i+1)
        np.testing.assert_allclose(w[i, : i + 1].numpy(), 1 / (i + 1), atol=1e-6)
        assert (w[i, i + 1 :] == 0).all()
    assert state["largest weight on a hidden key"] == pytest.approx(1.0)
    assert state["row 0: a fully hidden query gets"] == "uniform"
    leak = np.asarray(frame.arrays["leak0"])  # open squares on the 21 hidden cells that got weight
    assert int((leak[:, 0] >= 0).sum()) == 21


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
    demo = demo_batch()
    assert torch.equal(torch.random.get_rng_state(), before)
    assert demo.q.shape == (3, 6, 8) and demo.k.shape == (3, 6, 8) and demo.v.shape == (3, 6, 4)
    assert torch.equal(demo_batch().q, demo.q)


def test_bad_input():
    with pytest.raises(ValueError, match="3 lengths"):
        masking_explorer((1, 2))
    with pytest.raises(ValueError, match="valid_lens"):
        masking_explorer((7, 1, 1))
    with pytest.raises(ValueError, match="num_tokens"):
        masking_explorer(DEFAULT_VALID_LENS, num_tokens=1)
    with pytest.raises(ValueError, match="recipe"):
        masking_explorer(recipe="-1e3")
    with pytest.raises(ValueError, match="dtype"):
        masking_explorer(dtype="float64")


def test_masking_picture_names_each_rows_length_and_the_settings():
    """The stored picture's titles and caption say what the controls are set to, and the panels'
    pixels stay where render() put them (the caption is added above)."""
    from attnlib.widgets.explorers.masking import LEGEND, masking_picture
    from attnlib.widgets.framework.render import render

    explorer = masking_explorer()
    plain = render(explorer.scene, explorer.compute(len0=0, causal=True))
    fig = masking_picture(explorer, len0=0, causal=True, recipe="add M = -1e9", dtype="float16")
    titles = [ax.get_title() for ax in fig.axes if ax.get_images() and ax.get_title()]
    assert titles == [f"batch row {b} (valid_len {n})" for b, n in enumerate([0, 6, 2])]
    texts = [t.get_text() for t in fig.texts]
    assert texts[0] == "recipe: add M = -1e9   ·   dtype: float16   ·   causal mask: on"
    assert texts[1] == LEGEND
    grown = fig.get_size_inches()[1] * fig.dpi - plain.get_size_inches()[1] * plain.dpi
    assert grown == pytest.approx(44)
    for a, b in zip(plain.axes, fig.axes, strict=True):  # same pixel boxes
        np.testing.assert_allclose(
            a.get_window_extent().bounds, b.get_window_extent().bounds, atol=0.01
        )
    assert explorer.values()["len0"] == list(DEFAULT_VALID_LENS)[0]  # nothing moved
