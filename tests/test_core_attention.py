"""Dot-product attention against torch's own SDPA, closed forms and float64
(C01-C03, C07, C09-C11, C19, C26, C27).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from attnlib import causal_mask, cosine_score, dot_product_attention, dot_score, padding_mask

DTYPES = [torch.float32, torch.float64]


def _qkv(device, dtype=torch.float32, shape=(2, 3), L=4, S=5, dk=8, dv=6):
    q = torch.randn(*shape, L, dk, device=device, dtype=dtype)
    k = torch.randn(*shape, S, dk, device=device, dtype=dtype)
    v = torch.randn(*shape, S, dv, device=device, dtype=dtype)
    return q, k, v


@pytest.mark.parametrize("dtype", DTYPES)
def test_c27_equals_sdpa_without_mask(device, dtype):
    q, k, v = _qkv(device, dtype)
    out, weights = dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 4, 6) and weights.shape == (2, 3, 4, 5)
    assert_close(out, F.scaled_dot_product_attention(q, k, v))


def test_c27_equals_sdpa_with_boolean_mask(device):
    q, k, v = _qkv(device)
    mask = torch.rand(2, 1, 4, 5, device=device) > 0.3
    mask[..., 0] = True  # SDPA gives NaN for fully hidden rows; keep one key visible
    out, _ = dot_product_attention(q, k, v, mask)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_c27_equals_sdpa_with_float_mask(device):
    q, k, v = _qkv(device)
    mask = torch.randn(4, 5, device=device)
    out, _ = dot_product_attention(q, k, v, mask)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_c27_equals_sdpa_causal_and_scale(device):
    q, k, v = _qkv(device, L=5, S=5)
    out, weights = dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3))
    assert torch.all(weights[..., ~causal_mask(5, device=device)] == 0)


def test_c27_unscaled_is_plain_dot_product(device):
    q, k, v = _qkv(device, dtype=torch.float64)
    _, weights = dot_product_attention(q, k, v, scale=1.0)
    assert_close(weights, torch.softmax(q @ k.transpose(-2, -1), dim=-1))


def test_c27_shapes_n_by_m(device):
    # Q [n, d_k], K [m, d_k], V [m, d_v] -> [n, d_v], no batch axis at all.
    q, k, v = (
        torch.randn(3, 4, device=device),
        torch.randn(7, 4, device=device),
        torch.randn(7, 2, device=device),
    )
    out, weights = dot_product_attention(q, k, v)
    assert out.shape == (3, 2) and weights.shape == (3, 7)
    assert_close(out, F.scaled_dot_product_attention(q[None], k[None], v[None])[0])


def test_c01_projections_and_dk_mismatch_message(device):
    d, d_k, d_v = 6, 4, 3
    x_q, x_s = torch.randn(5, d, device=device), torch.randn(7, d, device=device)
    w_q, w_k, w_v = (
        torch.randn(d, d_k, device=device),
        torch.randn(d, d_k, device=device),
        torch.randn(d, d_v, device=device),
    )
    out, _ = dot_product_attention(x_q @ w_q, x_s @ w_k, x_s @ w_v)
    assert out.shape == (5, d_v)  # d_v may differ from d_k
    with pytest.raises(ValueError, match=r"q has d_k=8 but k has d_k=6.*\(5, 8\).*\(7, 6\)"):
        dot_product_attention(
            torch.randn(5, 8, device=device),
            torch.randn(7, 6, device=device),
            torch.randn(7, 3, device=device),
        )


def test_c02_self_attention_three_projections_differ_and_cross_lengths(device):
    x = torch.randn(4, 6, device=device)
    w_q, w_k, w_v = (torch.randn(6, 6, device=device) for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # self-attention: one X, three matrices
    out_self, weights_self = dot_product_attention(q, k, v)
    # With Q, K, V all different, SDPA agrees only if each argument is used in its own role.
    assert_close(out_self, F.scaled_dot_product_attention(q[None], k[None], v[None])[0])
    assert_close(weights_self, torch.softmax(q @ k.T / math.sqrt(6), -1))
    y = torch.randn(9, 6, device=device)  # cross-attention: another sequence, S_q != S_k
    out, weights = dot_product_attention(x @ w_q, y @ w_k, y @ w_v)
    assert out.shape == (4, 6) and weights.shape == (4, 9)
    assert_close(
        out, F.scaled_dot_product_attention((x @ w_q)[None], (y @ w_k)[None], (y @ w_v)[None])[0]
    )


def test_c03_score_is_not_cosine_scaling_key_scales_score(device):
    q, k = torch.randn(1, 5, device=device), torch.randn(3, 5, device=device)
    k_scaled = k.clone()
    k_scaled[1] *= 4.0
    s, s2 = dot_score(q, k), dot_score(q, k_scaled)
    assert_close(s2[0, 1], 4.0 * s[0, 1])
    # attnlib's cosine score is blind to the key's norm (torch's cosine_similarity as reference)
    c, c2 = cosine_score(q, k), cosine_score(q, k_scaled)
    assert_close(c, F.cosine_similarity(q, k, dim=-1)[None])
    assert_close(c2, c)


def test_c07_convex_combination_float64(device):
    q, k, v = _qkv(device, torch.float64)
    out, weights = dot_product_attention(q, k, v)
    assert torch.all(weights >= 0)
    assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    # Each output lies in the values' axis-aligned bounding box (a necessary hull condition)
    # and equals the explicit convex combination sum_j a_ij v_j.
    explicit = torch.einsum("bhls,bhsd->bhld", weights, v)
    assert_close(out, explicit)
    lo, hi = v.min(dim=-2, keepdim=True).values, v.max(dim=-2, keepdim=True).values
    assert torch.all(out >= lo - 1e-12) and torch.all(out <= hi + 1e-12)


def test_c09_worked_example_closed_form(device):
    scores = torch.tensor([[math.log(3.0), 0.0]], device=device, dtype=torch.float64)
    # q . k with scale 1 reproduces the given scores: q = [log 3, 0], keys e1, e2.
    q = scores
    k = torch.eye(2, device=device, dtype=torch.float64)
    v = torch.tensor([[2.0, 0.0], [0.0, 4.0]], device=device, dtype=torch.float64)
    out, weights = dot_product_attention(q, k, v, scale=1.0)
    assert_close(weights, torch.tensor([[0.75, 0.25]], device=device, dtype=torch.float64))
    assert_close(out, torch.tensor([[1.5, 1.0]], device=device, dtype=torch.float64))


def test_c10_matching_path_and_content_path_are_separate(device):
    q, k, v = _qkv(device, torch.float64)
    out, weights = dot_product_attention(q, k, v)
    out_v, weights_v = dot_product_attention(q, k, 2 * v + 1)
    assert_close(weights_v, weights)  # changing V leaves the weights alone
    assert_close(out_v, 2 * out + 1)  # ... and changes only what is mixed (rows sum to 1)
    _, weights_q = dot_product_attention(q + torch.randn_like(q), k, v)
    assert not torch.allclose(weights_q, weights)  # changing Q changes the weights


def test_c11_matrix_form_with_additive_mask(device):
    q, k, v = _qkv(device, torch.float64, L=5, S=5)
    visible = causal_mask(5, device=device)
    m = torch.zeros(5, 5, device=device, dtype=torch.float64).masked_fill(~visible, -math.inf)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + m, dim=-1) @ v
    out_float, w_float = dot_product_attention(q, k, v, m)
    out_bool, w_bool = dot_product_attention(q, k, v, visible)
    assert_close(out_float, expected)
    assert_close(out_bool, expected)
    assert torch.all(w_bool[..., ~visible] == 0) and torch.all(w_float[..., ~visible] == 0)


def test_c19_scores_softmax_weights_times_values(device):
    q, k, v = _qkv(device, torch.float64)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    out, weights = dot_product_attention(q, k, v)
    assert_close(weights, torch.softmax(scores, -1))
    assert_close(out, torch.softmax(scores, -1) @ v)


def test_c26_two_dimensional_example(device):
    q = torch.tensor([[1.0, 2.0], [1.0, 1.0]], device=device, dtype=torch.float64)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]], device=device, dtype=torch.float64)
    v = torch.tensor([[10.0, 0.0], [0.0, 10.0]], device=device, dtype=torch.float64)
    out, weights = dot_product_attention(q, k, v)
    scores = (q @ k.T) / math.sqrt(2)
    assert_close(
        scores,
        torch.tensor(
            [[1 / math.sqrt(2), 2 / math.sqrt(2)], [1 / math.sqrt(2), 1 / math.sqrt(2)]],
            device=device,
            dtype=torch.float64,
        ),
    )
    e = math.exp(1 / math.sqrt(2))
    a1 = 1 / (1 + e)  # softmax([s, 2s]) = [1/(1+e^s), e^s/(1+e^s)] with s = 1/sqrt(2)
    assert_close(weights[0], torch.tensor([a1, 1 - a1], device=device, dtype=torch.float64))
    assert round(weights[0, 0].item(), 2) == 0.33 and round(weights[0, 1].item(), 2) == 0.67
    assert_close(weights[1], torch.tensor([0.5, 0.5], device=device, dtype=torch.float64))
    assert_close(out, weights @ v)


def test_padding_mask_truth_table():
    # Written out by hand: True = a real key (j < valid_len), for (B,) and (B, L) lengths.
    T, F_ = True, False
    assert padding_mask(torch.tensor([0, 2, 4]), 4).tolist() == [
        [F_, F_, F_, F_],
        [T, T, F_, F_],
        [T, T, T, T],
    ]
    assert padding_mask(torch.tensor([[1, 3], [0, 2]]), 3).tolist() == [
        [[T, F_, F_], [T, T, T]],
        [[F_, F_, F_], [T, T, F_]],
    ]


def test_valid_lens_equal_sdpa_with_a_mask_written_out(device):
    q, k, v = _qkv(device)
    lens = torch.tensor([2, 5], device=device)
    out, weights = dot_product_attention(q, k, v, valid_lens=lens)
    mask = (torch.arange(5, device=device) < lens[:, None])[:, None, None, :]  # (B, 1, 1, S)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert torch.all(weights[0, ..., 2:] == 0)


def test_fully_masked_query_gives_zero_output(device):
    q, k, v = _qkv(device)
    mask = torch.ones(4, 5, dtype=torch.bool, device=device)
    mask[1] = False
    out, weights = dot_product_attention(q, k, v, mask)
    assert torch.all(out[..., 1, :] == 0) and torch.all(weights[..., 1, :] == 0)
    assert torch.isfinite(out).all()
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # NaN-free rows must agree
    assert_close(out[..., [0, 2, 3], :], ref[..., [0, 2, 3], :])


def test_gradcheck_float64(device):
    q, k, v = (
        t.requires_grad_() for t in _qkv(device, torch.float64, shape=(2,), L=3, S=4, dk=3, dv=2)
    )
    mask = torch.tensor([[True, True, False, True]] * 3, device=device)
    assert torch.autograd.gradcheck(
        lambda a, b, c: dot_product_attention(a, b, c, mask)[0], (q, k, v)
    )


def test_does_not_write_into_inputs(device):
    q, k, v = _qkv(device)
    mask = torch.randn(4, 5, device=device)
    copies = [t.clone() for t in (q, k, v, mask)]
    dot_product_attention(q, k, v, mask, is_causal=True)
    for before, after in zip(copies, (q, k, v, mask)):
        assert torch.equal(before, after)


def test_dropout_zero_in_expectation_and_weights_before_dropout(device):
    p, draws = 0.5, 4000
    q, k, v = _qkv(device, dtype=torch.float64)
    reference, ref_weights = dot_product_attention(q, k, v)
    # `draws` independent dropout draws in one call: the same q, k, v repeated along a new axis.
    out, weights = dot_product_attention(
        *(t.expand(draws, *t.shape) for t in (q, k, v)), dropout_p=p
    )
    assert_close(weights, ref_weights.expand_as(weights))  # weights are returned before dropout
    # One draw: out = sum_j w_j (m_j / (1-p)) v_j with m_j ~ Bernoulli(1-p), so E[out] is the
    # no-dropout output and Var[out] = sum_j w_j^2 v_j^2 p / (1-p) per element. The mean of
    # `draws` draws lies within 6 standard errors of the reference (a 6-sigma bound, derived).
    var = (
        (ref_weights.unsqueeze(-1) ** 2 * v.unsqueeze(-3) ** 2).sum(-2) * p / (1 - p)
    )  # (2, 3, 4, 6)
    stderr = (var / draws).sqrt()
    assert torch.all((out.mean(0) - reference).abs() <= 6 * stderr + 1e-12)
    assert not torch.allclose(out[0], reference)  # a single draw really drops something
    assert torch.any(out == 0)  # ... whole value contributions vanish in some draws


def test_nan_inputs_propagate_as_documented(device):
    q, k, v = _qkv(device, shape=(), L=3, S=4)
    q_bad = q.clone()
    q_bad[1, 0] = float("nan")  # query 1's scores are all NaN
    out, weights = dot_product_attention(q_bad, k, v)
    assert torch.isnan(out[1]).all() and torch.isnan(weights[1]).all()
    assert_close(out[[0, 2]], dot_product_attention(q[[0, 2]], k, v)[0])  # other queries unharmed
    v_bad = v.clone()
    v_bad[3, 0] = float("nan")  # the last key's value, hidden from every query by the mask
    hide_last = torch.tensor([True, True, True, False], device=device)
    out, weights = dot_product_attention(q, k, v_bad, hide_last)
    assert torch.all(weights[:, 3] == 0)
    assert torch.isnan(out[:, 0]).all()  # 0 * NaN = NaN: a NaN value is never masked away
    assert torch.isfinite(out[:, 1:]).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_float_dtype_huge_logits_and_masked_rows(device, dtype):
    q = torch.tensor([[100.0, 0.0], [0.0, 0.0], [-100.0, 1.0]], device=device)
    k = torch.tensor([[100.0, 0.0], [-100.0, 0.0], [0.0, 1.0]], device=device)  # q.k up to ±1e4
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], device=device)
    mask = torch.tensor(
        [[True, True, True], [False, False, False], [True, False, True]], device=device
    )
    out, weights = dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), mask, scale=1.0)
    assert out.dtype == dtype and weights.dtype == dtype
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    ref_scores = (q.double() @ k.double().T).masked_fill(~mask, -math.inf)
    ref_w = torch.nan_to_num(torch.softmax(ref_scores, -1), nan=0.0)
    # float16/bfloat16: the weights (in [0, 1]) and outputs (|out| <= 1) are rounded to 11 or 8
    # bits (u <= 2**-8 = 3.9e-3), a few times: within 1e-2. float32/float64: the scores are exact
    # small integers here, so torch's default tolerances (float32: 1.3e-6 relative, 1e-5 absolute)
    # hold with room (one softmax's rounding ~1e-7).
    tol = dict(atol=1e-2, rtol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    assert_close(weights.double(), ref_w, **tol)
    assert_close(out.double(), ref_w @ v.double(), **tol)
    assert torch.all(out[1] == 0)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(
    B=st.integers(1, 3),
    H=st.integers(1, 3),
    L=st.integers(1, 6),
    S=st.integers(1, 6),
    dk=st.integers(1, 8),
    dv=st.integers(1, 5),
    mask_kind=st.sampled_from(["none", "bool", "float", "causal", "lens"]),
    seed=st.integers(0, 10_000),
)
def test_c27_property_equals_sdpa(B, H, L, S, dk, dv, mask_kind, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, L, dk, generator=g, dtype=torch.float64)
    k = torch.randn(B, H, S, dk, generator=g, dtype=torch.float64)
    v = torch.randn(B, H, S, dv, generator=g, dtype=torch.float64)
    kwargs, ref_mask, is_causal = {}, None, False
    if mask_kind == "bool":
        ref_mask = torch.rand(L, S, generator=g) > 0.5
        ref_mask[:, 0] = True
        kwargs["attn_mask"] = ref_mask
    elif mask_kind == "float":
        ref_mask = torch.randn(B, 1, L, S, generator=g, dtype=torch.float64)
        kwargs["attn_mask"] = ref_mask
    elif mask_kind == "causal":
        is_causal = True
        kwargs["is_causal"] = True
    elif mask_kind == "lens":
        lens = torch.randint(1, S + 1, (B,), generator=g)
        kwargs["valid_lens"] = lens
        ref_mask = (torch.arange(S) < lens[:, None])[:, None, None, :]  # (B, 1, 1, S)
    out, weights = dot_product_attention(q, k, v, **kwargs)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=ref_mask, is_causal=is_causal)
    assert_close(out, ref)
    assert_close(weights.sum(-1), torch.ones(B, H, L, dtype=torch.float64))
