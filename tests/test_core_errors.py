"""Bad input gets a clear error naming the argument and the shapes or values."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlib import (
    causal_mask,
    default_device,
    dot_product_attention,
    masked_softmax,
    padding_mask,
    set_seed,
    softmax_jacobian,
)


def _qkv(L=4, S=5, dk=8, dv=6, dtype=torch.float32):
    return (
        torch.randn(L, dk, dtype=dtype),
        torch.randn(S, dk, dtype=dtype),
        torch.randn(S, dv, dtype=dtype),
    )


def test_dk_mismatch():
    with pytest.raises(ValueError, match="q has d_k=8 but k has d_k=6"):
        dot_product_attention(torch.randn(4, 8), torch.randn(5, 6), torch.randn(5, 6))


def test_kv_length_mismatch():
    with pytest.raises(
        ValueError, match=r"k has S \(number of keys\)=5 but v has S \(number of keys\)=7"
    ):
        dot_product_attention(torch.randn(4, 8), torch.randn(5, 8), torch.randn(7, 6))


def test_empty_key_set_is_a_clear_value_error():
    # S = 0: a softmax over no keys has no value (today's torch raises an IndexError inside amax).
    with pytest.raises(
        ValueError,
        match=r"at least one key, but k has S = 0 .*k \(2, 0, 8\), q \(2, 4, 8\), v \(2, 0, 6\)",
    ):
        dot_product_attention(torch.randn(2, 4, 8), torch.randn(2, 0, 8), torch.randn(2, 0, 6))
    with pytest.raises(ValueError, match=r"scores has S = 0 .*\(3, 0\)"):
        masked_softmax(torch.randn(3, 0))
    with pytest.raises(ValueError, match=r"scores has S = 0"):
        masked_softmax(torch.randn(2, 3, 0), valid_lens=torch.tensor([0, 0]))
    from attnlib import AdditiveAttention

    with pytest.raises(ValueError, match=r"key has S = 0 .*key \(2, 0, 4\), query \(2, 3, 4\)"):
        AdditiveAttention(4, 4, 8)(torch.randn(2, 3, 4), torch.randn(2, 0, 4), torch.randn(2, 0, 5))


def test_no_queries_is_fine_and_gives_an_empty_output():
    out, weights = dot_product_attention(
        torch.randn(2, 0, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 6)
    )
    assert out.shape == (2, 0, 6) and weights.shape == (2, 0, 5)


def test_batch_dims_do_not_broadcast():
    with pytest.raises(ValueError, match=r"leading \(batch\) dimensions .* \(2,\).* \(3,\)"):
        dot_product_attention(torch.randn(2, 4, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 6))


def test_mask_shape_does_not_broadcast():
    q, k, v = _qkv()
    with pytest.raises(
        ValueError,
        match=r"attn_mask has shape \(5, 4\), which does not broadcast"
        r" to the scores' shape \(4, 5\)",
    ):
        dot_product_attention(q, k, v, torch.ones(5, 4, dtype=torch.bool))


def test_mask_that_would_grow_the_output_is_rejected():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="does not broadcast"):
        dot_product_attention(q, k, v, torch.ones(3, 4, 5, dtype=torch.bool))


def test_mask_wrong_dtype():
    q, k, v = _qkv()
    with pytest.raises(
        TypeError, match="attn_mask must be a boolean mask .* got dtype torch.int64"
    ):
        dot_product_attention(q, k, v, torch.ones(4, 5, dtype=torch.long))


@pytest.mark.parametrize(
    "lens, message",
    [
        (torch.tensor([-1, 2]), "valid_lens must be >= 0, got -1"),
        (torch.tensor([2, 6]), r"valid_lens must be <= .*5.*got 6"),
        (torch.tensor([1.0, 2.0]), "valid_lens must hold integers, got dtype torch.float32"),
        (torch.tensor([1, 2, 3]), "valid_lens has 3 rows but the batch size is 2"),
        (
            torch.tensor([[1, 2], [3, 4]]),
            r"valid_lens of shape \(2, 2\) gives one length per query, but there are L=4",
        ),
        (torch.ones(2, 4, 1, dtype=torch.long), r"valid_lens must be 1-D \(B,\) or 2-D \(B, L\)"),
    ],
)
def test_valid_lens_errors(lens, message):
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 6)
    with pytest.raises((ValueError, TypeError), match=message):
        dot_product_attention(q, k, v, valid_lens=lens)


def test_valid_lens_without_batch_axis():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="valid_lens needs a batch axis"):
        dot_product_attention(q, k, v, valid_lens=torch.tensor([3]))


def test_integer_inputs_rejected():
    with pytest.raises(
        TypeError, match="q must be a floating-point tensor .* got dtype torch.int64"
    ):
        dot_product_attention(
            torch.ones(4, 8, dtype=torch.long), torch.randn(5, 8), torch.randn(5, 6)
        )
    with pytest.raises(TypeError, match="scores must be a floating-point tensor"):
        masked_softmax(torch.ones(3, 3, dtype=torch.int32))


def test_not_a_tensor():
    with pytest.raises(TypeError, match="k must be a torch.Tensor, got list"):
        dot_product_attention(torch.randn(4, 8), [[1.0] * 8], torch.randn(5, 6))


def test_mixed_dtypes():
    with pytest.raises(TypeError, match="q has dtype torch.float32 but v has dtype torch.float64"):
        dot_product_attention(torch.randn(4, 8), torch.randn(5, 8), torch.randn(5, 6).double())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device (CUDA)")
def test_different_devices_cuda():
    with pytest.raises(ValueError, match="q is on cpu but k is on cuda"):
        dot_product_attention(
            torch.randn(4, 8), torch.randn(5, 8, device="cuda"), torch.randn(5, 6)
        )


def test_different_devices_meta():
    # The meta device exists everywhere, so the device check is tested without a GPU.
    with pytest.raises(ValueError, match="q is on cpu but k is on meta"):
        dot_product_attention(
            torch.randn(4, 8), torch.randn(5, 8, device="meta"), torch.randn(5, 6)
        )


def test_bad_scale_and_dropout():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="scale must be a number or None, got str"):
        dot_product_attention(q, k, v, scale="0.5")
    with pytest.raises(ValueError, match="scale must be finite"):
        dot_product_attention(q, k, v, scale=float("nan"))
    with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\), got 1.5"):
        dot_product_attention(q, k, v, dropout_p=1.5)
    # A wrong type is a TypeError that names the argument (not torch's raw '<=' comparison).
    with pytest.raises(TypeError, match=r"dropout_p must be a number, got str \('0.1'\)"):
        dot_product_attention(q, k, v, dropout_p="0.1")


def test_is_causal_must_be_a_bool_not_truthy():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match=r"is_causal must be True or False, got str \('yes'\)"):
        dot_product_attention(q, k, v, is_causal="yes")
    with pytest.raises(TypeError, match="is_causal must be True or False, got int"):
        dot_product_attention(q, k, v, is_causal=1)
    # The blockwise functions share dot_product_attention's checks (one prologue).
    from attnlib.core.blockwise import blockwise_attention, blockwise_attention_steps

    with pytest.raises(TypeError, match=r"is_causal must be True or False, got str \('yes'\)"):
        blockwise_attention(q, k, v, is_causal="yes", block_size=2)
    with pytest.raises(TypeError, match="is_causal must be True or False, got int"):
        next(blockwise_attention_steps(q, k, v, is_causal=1, block_size=2))


def test_wrong_type_is_typeerror_and_wrong_value_valueerror_in_the_helpers():
    from attnlib.course.costs import median_time
    from attnlib.course.head_stats import real_token_mask

    with pytest.raises(TypeError, match="warmup must be an int, got str"):
        median_time(lambda: None, warmup="x")
    with pytest.raises(ValueError, match="warmup must be >= 0, got -1"):
        median_time(lambda: None, warmup=-1)
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(B,\), got \(2, 2\)"):
        real_token_mask(torch.tensor([[1, 2], [2, 1]]), 3)
    with pytest.raises(TypeError, match="valid_lens must be an integer tensor"):
        real_token_mask(torch.tensor([1.0, 2.0]), 3)


def test_mask_builders_errors():
    with pytest.raises(ValueError, match="num_queries must be >= 1, got 0"):
        causal_mask(0)
    with pytest.raises(TypeError, match="num_keys must be an int"):
        causal_mask(3, 2.5)
    with pytest.raises(ValueError, match="valid_lens must be <= num_keys=3, got 4"):
        padding_mask(torch.tensor([4]), 3)
    with pytest.raises(TypeError, match="valid_lens must hold integers"):
        padding_mask(torch.tensor([True]), 3)
    with pytest.raises(TypeError, match="weights must be a floating-point tensor"):
        softmax_jacobian(torch.tensor([1, 0]))


def test_default_device_override(monkeypatch):
    monkeypatch.setenv("ATTNLIB_DEVICE", "cpu")
    assert default_device() == torch.device("cpu")
    monkeypatch.setenv("ATTNLIB_DEVICE", "not-a-device")
    with pytest.raises(ValueError, match="ATTNLIB_DEVICE='not-a-device' is not a torch device"):
        default_device()
    if not torch.cuda.is_available():
        monkeypatch.setenv("ATTNLIB_DEVICE", "cuda")
        with pytest.raises(ValueError, match="CUDA is not available"):
            default_device()
    monkeypatch.delenv("ATTNLIB_DEVICE")
    expected = (
        "cuda"
        if torch.cuda.is_available()
        else ("mps" if torch.backends.mps.is_available() else "cpu")
    )
    assert default_device().type == expected


def test_set_seed_repeats_and_validates():
    set_seed(3)
    a = torch.randn(4)
    set_seed(3)
    assert torch.equal(a, torch.randn(4))
    with pytest.raises(TypeError, match="seed must be an int"):
        set_seed(1.5)


def test_set_seed_seeds_numpy_too():
    import numpy as np

    set_seed(2**32 + 5)  # numpy takes the seed modulo 2**32
    a = np.random.rand(3)
    np.random.seed(5)
    assert (a == np.random.rand(3)).all()


def test_check_device_is_the_one_device_check():
    from attnlib.util.device import check_device

    assert check_device("device", "cpu") == torch.device("cpu")
    assert check_device("device", torch.device("meta")) == torch.device("meta")
    with pytest.raises(ValueError, match="device='nonsense' is not a torch device name"):
        check_device("device", "nonsense")
    with pytest.raises(TypeError, match="device must be a device name, an index or a torch.device"):
        check_device("device", 1.5)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda:1' but CUDA is not available here"):
            check_device("device", "cuda:1")
    assert causal_mask(2, device="cpu").tolist() == [[True, False], [True, True]]


def test_checks_all_lists_every_public_check():
    import inspect

    from attnlib.util import _checks

    public = {
        name
        for name, f in vars(_checks).items()
        if inspect.isfunction(f) and f.__module__ == _checks.__name__ and not name.startswith("_")
    }
    assert public == set(_checks.__all__)


@given(
    L=st.integers(1, 5),
    S=st.integers(1, 5),
    dk=st.integers(1, 6),
    dk2=st.integers(1, 6),
    S2=st.integers(1, 5),
)
def test_property_shape_errors_or_correct_shapes(L, S, dk, dk2, S2):
    q, k, v = torch.randn(L, dk), torch.randn(S, dk2), torch.randn(S2, 3)
    if dk != dk2:
        with pytest.raises(ValueError, match=f"q has d_k={dk} but k has d_k={dk2}"):
            dot_product_attention(q, k, v)
    elif S != S2:
        with pytest.raises(ValueError, match=f"k has S .*={S} but v has S .*={S2}"):
            dot_product_attention(q, k, v)
    else:
        out, weights = dot_product_attention(q, k, v)
        assert out.shape == (L, 3) and weights.shape == (L, S)
        assert torch.isfinite(out).all()


def test_positive_number_arguments_named():
    from attnlib import sinusoidal_encoding

    with pytest.raises(ValueError, match="base must be a finite number > 1, got 1.0"):
        sinusoidal_encoding(4, 8, base=1.0)
    with pytest.raises(TypeError, match="bandwidth must be a number, got str"):
        from attnlib import gaussian_score

        gaussian_score(torch.randn(2, 3), torch.randn(4, 3), bandwidth="wide")
