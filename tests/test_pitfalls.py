"""Tests for attnlib.course.pitfalls: the sentinel masking recipes against hand-built references."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib import masked_softmax
from attnlib.course.pitfalls import (
    DEFAULT_ROW_SCORES,
    ROW_RECIPES,
    MaskedRowCase,
    classify_row,
    fill_masked_softmax,
    fill_value_in,
    format_cases,
    fully_masked_row_cases,
)


def d2l_masked_softmax_reference(x, valid_lens):
    """d2l's original masked_softmax (fill -1e6, then softmax), written out independently."""
    shape = x.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    flat = x.reshape(-1, shape[-1]).clone()
    keep = torch.arange(shape[-1], device=x.device)[None, :] < valid_lens[:, None]
    flat[~keep] = -1e6
    return torch.softmax(flat.reshape(shape), dim=-1)


def test_fill_value_in_rounds_into_dtype():
    assert fill_value_in(-1e9, torch.float16) == -math.inf
    assert fill_value_in(-1e6, torch.float16) == -math.inf
    assert fill_value_in(-1e4, torch.float16) == -1e4
    assert fill_value_in(-1e9, torch.float32) == -1e9
    # bfloat16 keeps 8 significant bits: -1e9 is stored as -998244352.
    assert fill_value_in(-1e9, torch.bfloat16) == -998244352.0
    with pytest.raises(TypeError, match="dtype"):
        fill_value_in(-1e9, torch.int32)


def test_c25_fill_masked_softmax_equals_d2l_reference(device):
    scores = torch.randn(2, 3, 5, device=device)
    for lens in (
        torch.tensor([2, 0], device=device),
        torch.tensor([[1, 0, 5], [3, 4, 2]], device=device),
    ):
        expected = d2l_masked_softmax_reference(scores, lens)
        got = fill_masked_softmax(scores, valid_lens=lens, fill=-1e6, how="replace")
        torch.testing.assert_close(got, expected)


def test_c25_valid_len_zero_uniform_for_fill_but_zero_for_attnlib(device):
    scores = torch.randn(2, 3, 4, device=device)
    lens = torch.tensor([0, 2], device=device)
    fill = fill_masked_softmax(scores, valid_lens=lens)
    ours = masked_softmax(scores, valid_lens=lens)
    torch.testing.assert_close(fill[0], torch.full((3, 4), 0.25, device=device))
    assert (ours[0] == 0).all()
    # The rows with something visible agree between the two.
    torch.testing.assert_close(fill[1], ours[1])
    expected = torch.softmax(scores[1, :, :2], dim=-1)
    torch.testing.assert_close(ours[1, :, :2], expected)


def test_fill_masked_softmax_add_keeps_differences_in_float32():
    scores = torch.tensor([[2.0, 0.5, -1.0, 1.0]])
    hidden = torch.zeros(1, 4, dtype=torch.bool)
    got = fill_masked_softmax(scores, hidden, fill=-1e6, how="add")
    torch.testing.assert_close(got, torch.softmax(scores, dim=-1))
    got9 = fill_masked_softmax(scores, hidden, fill=-1e9, how="add")
    torch.testing.assert_close(got9, torch.full((1, 4), 0.25))


def test_fill_masked_softmax_float16_overflows_to_nan():
    scores = torch.tensor([[2.0, 0.5, -1.0, 1.0]], dtype=torch.float16)
    hidden = torch.zeros(1, 4, dtype=torch.bool)
    for how in ("add", "replace"):
        assert torch.isnan(fill_masked_softmax(scores, hidden, fill=-1e9, how=how)).all()


def test_fill_masked_softmax_partial_mask_and_no_write():
    scores = torch.randn(3, 5)
    before = scores.clone()
    mask = torch.tensor([True, True, False, True, False])
    got = fill_masked_softmax(scores, mask, fill=float("-inf"))
    expected = torch.zeros(3, 5)
    expected[:, mask] = torch.softmax(scores[:, mask], dim=-1)
    torch.testing.assert_close(got, expected)
    assert torch.equal(scores, before)


def test_fill_masked_softmax_bad_input():
    with pytest.raises(ValueError, match="how"):
        fill_masked_softmax(torch.zeros(2, 2), how="mul")
    with pytest.raises(TypeError, match="fill"):
        fill_masked_softmax(torch.zeros(2, 2), fill="big")
    with pytest.raises(TypeError, match="boolean"):
        fill_masked_softmax(torch.zeros(2, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="attn_mask"):
        fill_masked_softmax(torch.zeros(2, 2), torch.ones(3, 3, dtype=torch.bool))


def test_classify_row():
    s = torch.tensor([2.0, 0.5, -1.0, 1.0])
    assert classify_row(torch.full((4,), float("nan")), s) == "NaN"
    assert classify_row(torch.zeros(4), s) == "zeros"
    assert classify_row(torch.full((4,), 0.25), s) == "uniform"
    assert classify_row(torch.softmax(s, -1), s) == "as if unmasked"
    assert classify_row(torch.tensor([1.0, 0.0, 0.0, 0.0]), s) == "other"
    with pytest.raises(ValueError, match="shape"):
        classify_row(torch.zeros(3), s)


def test_c12_fully_masked_row_table(device):
    cases = fully_masked_row_cases(device=device)
    assert len(cases) == len(ROW_RECIPES) * 3
    verdict = {(c.recipe, c.dtype): c.verdict for c in cases}
    for dtype in ("float32", "float16", "bfloat16"):
        assert verdict[("plain softmax, M = -inf", dtype)] == "NaN"
        assert verdict[("attnlib masked_softmax", dtype)] == "zeros"
        assert verdict[("add M = -1e9", dtype)] == ("NaN" if dtype == "float16" else "uniform")
        assert verdict[("replace by -1e6 (d2l)", dtype)] == (
            "NaN" if dtype == "float16" else "uniform"
        )
    assert verdict[("add M = -1e6", "float32")] == "as if unmasked"
    ours = [c for c in cases if c.recipe == "attnlib masked_softmax"]
    assert all(
        c.weights == (0.0,) * len(DEFAULT_ROW_SCORES) and c.fill_stored is None for c in ours
    )
    stored = {(c.recipe, c.dtype): c.fill_stored for c in cases}
    assert stored[("add M = -1e9", "float16")] == -math.inf


def test_fully_masked_row_cases_bad_names():
    with pytest.raises(ValueError, match="recipe"):
        fully_masked_row_cases(recipes=["nope"])
    with pytest.raises(ValueError, match="dtype"):
        fully_masked_row_cases(dtypes=["float8"])


def test_format_cases():
    cases = [
        MaskedRowCase("a", "float32", -1e9, (0.25, 0.75), "other"),
        MaskedRowCase("a", "float16", -math.inf, (math.nan, math.nan), "NaN"),
    ]
    text = format_cases(cases)
    lines = text.splitlines()
    assert lines[0].split() == ["recipe", "float32", "float16"]
    assert lines[2].split() == ["a", "other", "NaN"]
    assert "[0.250, 0.750]" in format_cases(cases, what="weights")
    assert "[nan, nan]" in format_cases(cases, what="weights")
    assert "-inf" in format_cases(cases, what="fill")
    with pytest.raises(ValueError, match="what"):
        format_cases(cases, what="colour")


def test_fill_masked_softmax_wrong_type_is_typeerror_wrong_value_is_valueerror():
    s = torch.zeros(1, 2, 3)
    with pytest.raises(TypeError, match="fill must be a real number"):
        fill_masked_softmax(s, fill="-1e9")
    with pytest.raises(ValueError, match="fill must be a real number or -inf, got nan"):
        fill_masked_softmax(s, fill=float("nan"))
    with pytest.raises(TypeError, match="how must be a str"):
        fill_masked_softmax(s, how=1)
    with pytest.raises(ValueError, match="how must be 'replace' or 'add'"):
        fill_masked_softmax(s, how="sub")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_lecture_masked_softmax_zero_rows_and_matches_attnlib(dtype):
    """The seed's function: zeros for valid_len 0, and on the other rows the weights of the
    -inf formula (attnlib.masked_softmax), to the dtype's rounding."""
    from attnlib.course.pitfalls import lecture_masked_softmax

    scores = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0)).to(dtype)
    lens = torch.tensor([0, 3])
    seed = lecture_masked_softmax(scores, lens)
    assert seed.dtype == dtype
    assert torch.all(seed[0] == 0)
    # float32: softmax then renormalise, ~4 roundings of 6e-8; bfloat16 keeps 8 bits (4e-3).
    tol = {torch.float32: 1e-6, torch.bfloat16: 2e-2, torch.float64: 1e-12}[dtype]
    torch.testing.assert_close(
        seed[1].double(), masked_softmax(scores, valid_lens=lens)[1].double(), atol=tol, rtol=0
    )
    assert torch.all(seed[1][..., 3:] == 0)


def test_lecture_masked_softmax_raises_in_float16_even_with_nothing_hidden():
    from attnlib.course.pitfalls import lecture_masked_softmax

    scores = torch.zeros(2, 3, 5, dtype=torch.float16)
    for lens in (torch.tensor([0, 3]), torch.tensor([5, 5])):
        with pytest.raises(RuntimeError, match="overflow"):
            lecture_masked_softmax(scores, lens)
    assert lecture_masked_softmax(scores, None).dtype == torch.float16  # no valid_lens: no fill
