"""Multi-head attention against torch.nn.MultiheadAttention, per-head projections and closed forms
(C16, C17, C28).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attnlib import (
    MultiHeadAttention,
    causal_mask,
    head_projection,
    merge_heads,
    multihead_by_separate_heads,
    one_wide_head,
    padding_mask,
    split_heads,
)
from attnlib.core.multihead import head_weight_maps


def _pair(device, d_model=16, num_heads=4, bias=True):
    ref = nn.MultiheadAttention(d_model, num_heads, batch_first=True, bias=bias).to(device).eval()
    return ref, MultiHeadAttention.from_torch(ref).eval()


def _torch_weights(ref, q, k, v, **kwargs):
    with torch.no_grad():
        return ref(q, k, v, need_weights=True, average_attn_weights=False, **kwargs)


def test_c16_split_merge_roundtrip_and_head_slices(device):
    x = torch.randn(2, 5, 12, device=device)
    heads = split_heads(x, 3)  # (B, H, L, Dh)
    assert heads.shape == (2, 3, 5, 4)
    assert torch.equal(merge_heads(heads), x)
    for r in range(3):  # head r holds features r*Dh:(r+1)*Dh, i.e. the concat order
        assert torch.equal(heads[:, r], x[..., 4 * r : 4 * (r + 1)])


def test_c16_one_big_projection_equals_h_separate_projections(device):
    mha = MultiHeadAttention(16, 4).to(device)
    x, y = torch.randn(2, 5, 16, device=device), torch.randn(2, 7, 16, device=device)
    out, weights = mha(x, y, y)
    out_sep, weights_sep = multihead_by_separate_heads(mha, x, y, y)
    assert_close(out, out_sep)
    assert_close(weights, weights_sep)
    # The per-head projection is a genuine (D, Dh) matrix: x W^(r) equals head r of the reshape.
    w, b = head_projection(mha.w_q, 2, 4)
    assert w.shape == (4, 16) and b.shape == (4,)
    assert_close(x @ w.T + b, split_heads(mha.w_q(x), 4)[:, 2])


def test_c16_head_width_is_d_over_h(device):
    mha = MultiHeadAttention(24, 6).to(device)
    assert mha.head_dim == 4
    x = torch.randn(1, 3, 24, device=device)
    _, weights = mha(x, x, x)
    assert weights.shape == (1, 6, 3, 3)


def test_c17_one_wide_head_is_not_h_heads(device):
    mha = MultiHeadAttention(16, 4).to(device)
    x = torch.randn(2, 6, 16, device=device)
    out_heads, w_heads = mha(x, x, x)
    out_wide, w_wide = one_wide_head(mha, x, x, x)
    # Same parameters, same shapes of output ...
    assert out_wide.shape == out_heads.shape
    # ... but one row of weights per query instead of four, and a different result.
    assert w_wide.shape == (2, 6, 6) and w_heads.shape == (2, 4, 6, 6)
    assert (out_wide - out_heads).abs().max() > 1e-2
    # Closed form of the wide head: softmax(Q Kᵀ/√D) V W_O with the full-width projections.
    q, k, v = mha.w_q(x), mha.w_k(x), mha.w_v(x)
    expected = mha.w_o(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(16), -1) @ v)
    assert_close(out_wide, expected)


def test_c17_with_one_head_both_agree(device):
    mha = MultiHeadAttention(8, 1).to(device)
    x = torch.randn(2, 4, 8, device=device)
    assert_close(one_wide_head(mha, x, x, x)[0], mha(x, x, x)[0])


def test_c28_heads_have_their_own_projections(device):
    mha = MultiHeadAttention(16, 4).to(device)
    x = torch.randn(1, 6, 16, device=device)
    _, weights = mha(x, x, x)  # (1, 4, 6, 6)
    for r in range(1, 4):
        assert (weights[0, r] - weights[0, 0]).abs().max() > 1e-3
    # Copying head 0's projections into every head makes all heads attend alike, and changes
    # the output: h heads are not one head repeated.
    copied = MultiHeadAttention(16, 4).to(device)
    copied.load_state_dict(mha.state_dict())
    with torch.no_grad():
        for lin in (copied.w_q, copied.w_k, copied.w_v):
            w0, b0 = head_projection(lin, 0, 4)
            lin.weight.copy_(w0.repeat(4, 1))
            lin.bias.copy_(b0.repeat(4))
    out_copied, w_copied = copied(x, x, x)
    for r in range(1, 4):
        assert_close(w_copied[0, r], w_copied[0, 0])
    assert (out_copied - mha(x, x, x)[0]).abs().max() > 1e-2


@pytest.mark.parametrize("bias", [True, False])
def test_c28_matches_torch_self_attention(device, bias):
    ref, ours = _pair(device, bias=bias)
    x = torch.randn(3, 5, 16, device=device)
    ref_out, ref_w = _torch_weights(ref, x, x, x)
    out, w = ours(x, x, x)
    assert_close(out, ref_out)
    assert_close(w, ref_w)


def test_c28_matches_torch_cross_attention_with_padding(device):
    ref, ours = _pair(device)
    x, mem = torch.randn(3, 4, 16, device=device), torch.randn(3, 7, 16, device=device)
    lens = torch.tensor([7, 2, 5], device=device)
    # torch's key_padding_mask: True = ignore. Ours: True = may attend. Invert once, here.
    ref_out, ref_w = _torch_weights(ref, x, mem, mem, key_padding_mask=~padding_mask(lens, 7))
    out, w = ours(x, mem, mem, valid_lens=lens)
    assert_close(out, ref_out)
    assert_close(w, ref_w)
    assert torch.all(w[1, :, :, 2:] == 0)


def test_c28_matches_torch_causal(device):
    ref, ours = _pair(device)
    x = torch.randn(2, 6, 16, device=device)
    ref_out, ref_w = _torch_weights(ref, x, x, x, attn_mask=~causal_mask(6, device=device))
    out, w = ours(x, x, x, is_causal=True)
    assert_close(out, ref_out)
    assert_close(w, ref_w)


def test_c28_matches_torch_with_per_batch_and_float_masks(device):
    ref, ours = _pair(device)
    x, mem = torch.randn(2, 4, 16, device=device), torch.randn(2, 5, 16, device=device)
    mask = torch.rand(2, 4, 5, device=device) > 0.4
    mask[..., 0] = True  # torch gives NaN for a fully hidden row
    torch_mask = (~mask).repeat_interleave(4, dim=0)  # torch wants (B*H, L, S), True = hidden
    ref_out, ref_w = _torch_weights(ref, x, mem, mem, attn_mask=torch_mask)
    out, w = ours(x, mem, mem, mask)
    assert_close(out, ref_out)
    assert_close(w, ref_w)
    additive = torch.randn(4, 5, device=device)
    ref_out, _ = _torch_weights(ref, x, mem, mem, attn_mask=additive)
    assert_close(ours(x, mem, mem, additive)[0], ref_out)


def test_c28_gradients_match_torch_float64():
    ref = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    ours = MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    g = torch.randn(2, 3, 8, dtype=torch.float64)
    (gx_ref,) = torch.autograd.grad((ref(x, x, x, need_weights=False)[0] * g).sum(), x)
    (gx,) = torch.autograd.grad((ours(x, x, x)[0] * g).sum(), x)
    assert_close(gx, gx_ref)
    assert torch.autograd.gradcheck(lambda t: ours(t, t, t)[0], (x,))


def test_dropout_only_in_training():
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 4, 8)
    mha.eval()
    assert torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.train()
    assert not torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])


def test_from_torch_keeps_dtype_and_mode():
    ref = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64, dropout=0.1)
    ours = MultiHeadAttention.from_torch(ref)
    assert ours.w_q.weight.dtype == torch.float64 and ours.training and ours.dropout == 0.1


def test_bad_input_errors():
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        MultiHeadAttention(16, 3)
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadAttention(16, 4, dropout=1.0)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match="key has width 12"):
        mha(x, torch.randn(2, 5, 12), x)
    with pytest.raises(ValueError, match="same \\(B, S\\)"):
        mha(x, x, torch.randn(2, 4, 16))
    with pytest.raises(ValueError, match="batch size"):
        mha(x, torch.randn(3, 5, 16), torch.randn(3, 5, 16))
    with pytest.raises(ValueError, match="attn_mask has shape"):
        mha(x, x, x, torch.ones(5, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="3 dimension"):
        mha(x[0], x[0], x[0])
    with pytest.raises(ValueError, match="not divisible"):
        split_heads(torch.randn(1, 2, 10), 4)
    with pytest.raises(ValueError, match="batch_first=True"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError, match="kdim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, batch_first=True, kdim=4))
    with pytest.raises(TypeError, match="nn.MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="head must be <= 3"):
        head_projection(mha.w_q, 4, 4)
    with pytest.raises(TypeError, match="head must be an int"):
        head_projection(mha.w_q, 1.0, 4)


def test_never_writes_into_inputs():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    mask = torch.ones(3, 3, dtype=torch.bool)
    x0, mask0 = x.clone(), mask.clone()
    mha(x, x, x, mask, is_causal=True)
    assert torch.equal(x, x0) and torch.equal(mask, mask0)


def test_follows_device_and_dtype(device):
    mha = MultiHeadAttention(8, 2).to(device=device, dtype=torch.float64)
    x = torch.randn(1, 3, 8, device=device, dtype=torch.float64)
    out, w = mha(x, x, x)
    assert out.device.type == device.type and out.dtype == torch.float64
    assert w.dtype == torch.float64
    assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))


def test_c16_head_weight_maps_equal_torch_multihead_weights():
    # Reference: torch's own nn.MultiheadAttention with the same W_Q, W_K (no biases), float64.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 6, 8, generator=g, dtype=torch.float64)  # (1, L, D)
    w_q, w_k = (torch.randn(8, 8, generator=g, dtype=torch.float64) for _ in range(2))
    ref = nn.MultiheadAttention(8, 4, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([w_q, w_k, torch.eye(8, dtype=torch.float64)]))
    _, want = ref(x, x, x, need_weights=True, average_attn_weights=False)  # (1, H, L, S)
    assert_close(head_weight_maps(x, w_q, w_k, 4), want[0])
    with pytest.raises(ValueError, match="x must have 3"):
        head_weight_maps(x[0], w_q, w_k, 4)


# ----- head_mask: removing a head's output before W_O -------------------------------------------


def test_head_mask_zero_equals_zeroing_that_heads_columns_of_w_o(device):
    # Independent reference: head r reaches the output only through columns r*Dh:(r+1)*Dh of
    # W_O, so zeroing those columns of the weight matrix removes exactly its output.
    mha = MultiHeadAttention(16, 4).to(device).eval()
    x = torch.randn(2, 5, 16, device=device)
    keep = torch.tensor([1.0, 0.0, 1.0, 0.0], device=device)
    with torch.no_grad():
        out, weights = mha(x, x, x, head_mask=keep)
        full, full_weights = mha(x, x, x)
        edited = MultiHeadAttention(16, 4).to(device).eval()
        edited.load_state_dict(mha.state_dict())
        edited.w_o.weight[:, 4:8] = 0.0  # head 1
        edited.w_o.weight[:, 12:16] = 0.0  # head 3
        expected, _ = edited(x, x, x)
    assert_close(out, expected)
    assert torch.equal(weights, full_weights)  # the removed heads still look where they looked
    ones, _ = mha(x, x, x, head_mask=torch.ones(4, dtype=torch.bool, device=device))
    assert_close(ones, full, atol=0, rtol=0)
    assert not torch.allclose(out, full)


def test_head_mask_per_sequence_equals_separate_runs():
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(3, 5, 16)
    keep = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    lens = torch.tensor([5, 3, 1])
    with torch.no_grad():
        out, _ = mha(x, x, x, head_mask=keep, valid_lens=lens)
        for b in range(3):
            one = x[b : b + 1]
            alone, _ = mha(one, one, one, head_mask=keep[b], valid_lens=lens[b : b + 1])
            assert_close(out[b], alone[0])


def test_head_mask_scales_a_head_linearly_float64():
    mha = MultiHeadAttention(8, 2).double().eval()
    x = torch.randn(1, 4, 8, dtype=torch.float64)
    with torch.no_grad():
        zero = mha(x, x, x, head_mask=torch.tensor([0.0, 1.0], dtype=torch.float64))[0]
        one = mha(x, x, x)[0]
        half = mha(x, x, x, head_mask=torch.tensor([0.5, 1.0], dtype=torch.float64))[0]
    assert_close(half, (zero + one) / 2)


def test_head_mask_bad_arguments():
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(TypeError, match="head_mask must be a torch.Tensor"):
        mha(x, x, x, head_mask=[1, 0, 1, 1])
    with pytest.raises(TypeError, match="floating .* or boolean"):
        mha(x, x, x, head_mask=torch.tensor([1, 0, 1, 1]))
    with pytest.raises(ValueError, match=r"shape \(H,\) = \(4,\) or \(B, H\) = \(2, 4\)"):
        mha(x, x, x, head_mask=torch.ones(3))
    with pytest.raises(ValueError, match="shape"):
        mha(x, x, x, head_mask=torch.ones(1, 1, 4))
    with pytest.raises(ValueError, match="head_mask is on meta"):
        mha(x, x, x, head_mask=torch.ones(4, device="meta"))
