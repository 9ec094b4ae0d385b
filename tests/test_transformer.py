"""Encoder and decoder blocks against torch's Transformer layers; causal, padding, LayerNorm
(C18, C34-C39).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.testing import assert_close

from attnlib import (
    DecoderBlock,
    EncoderBlock,
    FeedForward,
    MultiHeadAttention,
    batch_norm_tokens,
    causal_mask,
    layer_norm,
    norm_context_dependence,
    padding_mask,
    permute_tokens,
)
from attnlib.core.normalization import block_gradient_norms


def _encoder_pair(device, norm_first, dtype=torch.float32):
    ref = (
        nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
        .to(device=device, dtype=dtype)
        .eval()
    )
    return ref, EncoderBlock.from_torch(ref)


def _decoder_pair(device, norm_first, dtype=torch.float32):
    ref = (
        nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
        .to(device=device, dtype=dtype)
        .eval()
    )
    return ref, DecoderBlock.from_torch(ref)


def _vs_torch(device):
    """dtype and tolerance of "the same as torch's layer": torch and we do the same arithmetic
    in another order (torch fuses the projections), so we differ by rounding alone. In float64:
    unit roundoff 1.1e-16 x inner sizes <= 32 x magnitudes <= ~10 through a block: < 1e-12. MPS
    has no float64: float32's 6e-8 x the same factors: < 1e-5 (relative, with magnitudes)."""
    if device.type == "mps":
        return torch.float32, dict(atol=1e-5, rtol=1e-5)
    return torch.float64, dict(atol=1e-12, rtol=0)


def test_c18_attention_alone_has_no_notion_of_order(device):
    # Without positions, attention (and a whole block) only sees a set: reordering the
    # tokens reorders the outputs and changes nothing else.
    x = torch.randn(2, 6, 16, device=device)
    perm = torch.tensor([5, 3, 1, 0, 2, 4], device=device)
    mha = MultiHeadAttention(16, 4).to(device)
    assert_close(mha(*(permute_tokens(x, perm),) * 3)[0], permute_tokens(mha(x, x, x)[0], perm))
    block = EncoderBlock(16, 4, 32).to(device)
    assert_close(block(permute_tokens(x, perm))[0], permute_tokens(block(x)[0], perm))


def test_c18_attention_alone_only_averages_values(device):
    # With no FFN, residual or norm, each output row is a convex mix of the value rows:
    # it stays inside their range per feature (no new "depth" of features is created).
    mha = MultiHeadAttention(8, 1).to(device)
    x = torch.randn(1, 5, 8, device=device)
    q, k, v = mha.w_q(x), mha.w_k(x), mha.w_v(x)
    from attnlib import dot_product_attention

    heads, _ = dot_product_attention(q, k, v)
    assert torch.all(heads <= v.amax(dim=1, keepdim=True) + 1e-6)
    assert torch.all(heads >= v.amin(dim=1, keepdim=True) - 1e-6)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_c34_encoder_block_matches_torch(device, norm_first):
    dtype, tol = _vs_torch(device)
    ref, ours = _encoder_pair(device, norm_first, dtype)
    x = torch.randn(3, 6, 16, device=device, dtype=dtype)
    lens = torch.tensor([6, 2, 4], device=device)
    with torch.no_grad():
        expected = ref(x, src_key_padding_mask=~padding_mask(lens, 6))  # torch: True = ignore
        expected_full = ref(x)
    out, weights = ours(x, valid_lens=lens)
    assert out.dtype == dtype
    assert_close(out, expected, **tol)
    assert_close(ours(x)[0], expected_full, **tol)
    assert weights.shape == (3, 4, 6, 6)
    assert torch.all(weights[1, :, :, 2:] == 0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_c34_encoder_block_matches_torch_in_training_mode_float64(norm_first):
    ref = nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=torch.float64
    )
    ours = EncoderBlock.from_torch(ref)
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    assert_close(ours(x)[0], ref(x))
    g = torch.randn(2, 5, 8, dtype=torch.float64)
    assert_close(
        torch.autograd.grad((ours(x)[0] * g).sum(), x)[0],
        torch.autograd.grad((ref(x) * g).sum(), x)[0],
    )


def test_c34_post_ln_and_pre_ln_differ():
    x = torch.randn(2, 5, 16)
    post = EncoderBlock(16, 4, 32)
    pre = EncoderBlock(16, 4, 32, norm_first=True)
    pre.load_state_dict(post.state_dict())
    assert (post(x)[0] - pre(x)[0]).abs().max() > 1e-2
    # Post-LN ends with a LayerNorm: every token has mean 0 and variance 1 (before gain/bias).
    # An exact identity, so in float64: the centred entries' mean is off by at most
    # (D + 1) u max|x| (the rounded mean, then each subtraction), divided by the std s; with
    # D = 16, u = 1.1e-16, max|x| < 10, s > 0.1: < 2e-13 (float32 would allow ~1e-4).
    post64 = post.double()
    x64 = x.double()
    out = post64(x64)[0]
    assert_close(out.mean(-1), torch.zeros(2, 5, dtype=torch.float64), atol=1e-12, rtol=0)
    assert_close(
        out.var(-1, unbiased=False), torch.ones(2, 5, dtype=torch.float64), atol=1e-4, rtol=0
    )
    # (the variance is 1 - eps / (var + eps), eps = 1e-5: within 1e-4 of 1 for var > 0.1)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_c35_decoder_block_matches_torch(device, norm_first):
    dtype, tol = _vs_torch(device)
    ref, ours = _decoder_pair(device, norm_first, dtype)
    x = torch.randn(3, 5, 16, device=device, dtype=dtype)
    memory = torch.randn(3, 7, 16, device=device, dtype=dtype)
    mem_lens = torch.tensor([7, 1, 4], device=device)
    with torch.no_grad():
        expected = ref(
            x,
            memory,
            tgt_mask=~causal_mask(5, device=device),
            tgt_is_causal=True,
            memory_key_padding_mask=~padding_mask(mem_lens, 7),
        )
    res = ours(x, memory, memory_valid_lens=mem_lens)
    out, self_w, cross_w = res.out, res.self_weights, res.cross_weights
    assert out.dtype == dtype
    assert_close(out, expected, **tol)
    assert self_w.shape == (3, 4, 5, 5) and cross_w.shape == (3, 4, 5, 7)
    assert torch.all(cross_w[1, :, :, 1:] == 0)


def test_c35_decoder_output_layer_and_softmax_give_distributions():
    block = DecoderBlock(16, 4, 32)
    to_vocab = nn.Linear(16, 11)
    out = block(torch.randn(2, 4, 16), torch.randn(2, 3, 16)).out
    probs = torch.softmax(to_vocab(out), dim=-1)  # (B, T, V)
    assert probs.shape == (2, 4, 11)
    assert_close(probs.sum(-1), torch.ones(2, 4))


@given(
    seed=st.integers(0, 2**31 - 1),
    length=st.integers(2, 8),
    cut=st.integers(0, 6),
    norm_first=st.booleans(),
)
def test_c36_future_tokens_do_not_change_earlier_outputs(seed, length, cut, norm_first):
    cut = cut % (length - 1)  # positions 0..cut keep their inputs; later ones change
    gen = torch.Generator().manual_seed(seed)
    block = DecoderBlock(8, 2, 16, norm_first=norm_first).double()
    x = torch.randn(2, length, 8, generator=gen, dtype=torch.float64)
    memory = torch.randn(2, 3, 8, generator=gen, dtype=torch.float64)
    changed = x.clone()
    changed[:, cut + 1 :] = torch.randn(2, length - cut - 1, 8, generator=gen, dtype=torch.float64)
    res = block(x, memory)
    out, self_w = res.out, res.self_weights
    out2 = block(changed, memory).out
    assert_close(out2[:, : cut + 1], out[:, : cut + 1])  # the past is untouched
    assert (out2[:, cut + 1 :] - out[:, cut + 1 :]).abs().max() > 1e-6  # the future did change
    assert torch.all(self_w[..., ~causal_mask(length)] == 0)


def test_c37_padding_and_causal_masks_combine(device):
    mha = MultiHeadAttention(8, 2).to(device)
    x = torch.randn(2, 5, 8, device=device)
    lens = torch.tensor([5, 3], device=device)
    _, w = mha(x, x, x, valid_lens=lens, is_causal=True)
    visible = causal_mask(5, device=device) & padding_mask(lens, 5)[:, None, None, :]  # (B,1,L,S)
    assert torch.all(w[~visible.expand_as(w)] == 0)  # hidden by either mask: weight 0
    assert_close(w.sum(-1), torch.ones(2, 2, 5, device=device))  # every row still sums to 1
    # Equal to the same call with the two masks combined by hand into one boolean mask.
    _, w_manual = mha(x, x, x, visible)
    assert_close(w, w_manual)
    # Each alone does a different job: causal hides the future, padding hides pad columns.
    _, w_causal = mha(x, x, x, is_causal=True)
    _, w_pad = mha(x, x, x, valid_lens=lens)
    assert w_causal[1, :, 4, 4].min() > 0 and torch.all(w_pad[1, :, :, 3:] == 0)
    assert w_pad[0, :, 0, 4].min() > 0 and torch.all(w_causal[0, :, 0, 1:] == 0)


def test_c38_layer_norm_equals_torch(device):
    x = torch.randn(3, 4, 10, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.randn(10, device=device, dtype=torch.float64, requires_grad=True)
    b = torch.randn(10, device=device, dtype=torch.float64, requires_grad=True)
    ours, ref = layer_norm(x, w, b, 1e-5), F.layer_norm(x, (10,), w, b, 1e-5)
    assert_close(ours, ref)
    g = torch.randn_like(ref)
    for a, r in zip(
        torch.autograd.grad((ours * g).sum(), (x, w, b)),
        torch.autograd.grad((ref * g).sum(), (x, w, b)),
    ):
        assert_close(a, r)
    assert_close(layer_norm(x), F.layer_norm(x, (10,)))


def test_c38_batch_norm_tokens_equals_torch_batchnorm():
    x = torch.randn(4, 6, 5, dtype=torch.float64)
    bn = nn.BatchNorm1d(5, affine=False, dtype=torch.float64).train()
    assert_close(batch_norm_tokens(x), bn(x.reshape(-1, 5)).reshape(4, 6, 5))


def test_c38_layer_norm_ignores_batch_and_padding_batch_norm_does_not():
    token = torch.randn(8)
    x_a = torch.randn(3, 5, 8)
    x_a[0, 0] = token
    # Another batch, another length, and padding (zeros) appended: same token at [0, 0].
    x_b = torch.cat([torch.randn(6, 9, 8), torch.zeros(6, 4, 8)], dim=1)
    x_b[0, 0] = token
    change = norm_context_dependence(x_a, x_b)
    assert change.layer_norm == 0.0
    assert change.batch_norm > 0.05


def test_c38_encoder_output_ignores_padding_and_batch(device):
    block = EncoderBlock(16, 4, 32).to(device).eval()
    seq = torch.randn(1, 3, 16, device=device)
    alone, _ = block(seq)
    padded = torch.cat([seq, torch.randn(1, 4, 16, device=device)], dim=1)  # junk padding
    batch = torch.cat([padded, torch.randn(2, 7, 16, device=device)], dim=0)
    out, _ = block(batch, valid_lens=torch.tensor([3, 7, 5], device=device))
    assert_close(out[0, :3], alone[0])


def test_c39_cross_attention_takes_queries_from_decoder_keys_values_from_encoder(device):
    block = DecoderBlock(8, 2, 16).to(device)
    x, memory = torch.randn(2, 4, 8, device=device), torch.randn(2, 6, 8, device=device)
    cross_w = block(x, memory).cross_weights
    assert cross_w.shape == (2, 2, 4, 6)  # [target length, source length] per head
    # Reproduce it from its definition: Q from the decoder state after the first sub-layer,
    # K and V from the encoder output, each with the cross-attention's own projections.
    a, _ = block.self_attn(x, x, x, is_causal=True)
    h = layer_norm(x + a, block.norm1.weight, block.norm1.bias, block.norm1.eps)
    ca = block.cross_attn
    q = ca.w_q(h).reshape(2, 4, 2, 4).transpose(1, 2)
    k = ca.w_k(memory).reshape(2, 6, 2, 4).transpose(1, 2)
    expected = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)
    assert_close(cross_w, expected)
    # Changing the encoder output changes the cross weights; the self-attention is not affected.
    res2 = block(x, memory * 2)
    self_w2, cross_w2 = res2.self_weights, res2.cross_weights
    assert (cross_w2 - cross_w).abs().max() > 1e-3
    assert_close(self_w2, block(x, memory).self_weights)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        EncoderBlock(10, 3, 8)
    with pytest.raises(ValueError, match="d_ff must be >= 1"):
        DecoderBlock(8, 2, 0)
    with pytest.raises(ValueError, match="x has width 6"):
        EncoderBlock(8, 2, 16)(torch.randn(1, 3, 6))
    with pytest.raises(ValueError, match="memory has width 6"):
        DecoderBlock(8, 2, 16)(torch.randn(1, 3, 8), torch.randn(1, 3, 6))
    with pytest.raises(ValueError, match="valid_lens"):
        EncoderBlock(8, 2, 16)(torch.randn(2, 3, 8), valid_lens=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="relu or gelu"):  # tanh-approximate GELU is not ours
        EncoderBlock.from_torch(
            nn.TransformerEncoderLayer(
                8, 2, 16, batch_first=True, activation=nn.GELU(approximate="tanh")
            )
        )
    with pytest.raises(ValueError, match="d_model must be >= 1"):
        FeedForward(0, 4)
    with pytest.raises(TypeError, match=r"dropout must be a number, got str \('0.1'\)"):
        EncoderBlock(8, 2, 16, dropout="0.1")
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        FeedForward(8, 16, dropout=1.0)
    with pytest.raises(ValueError, match="batch_first"):
        DecoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2, 16))
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        EncoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True))
    with pytest.raises(ValueError, match="weight must have shape"):
        layer_norm(torch.randn(2, 4), torch.ones(3))
    with pytest.raises(ValueError, match="same token"):
        norm_context_dependence(torch.randn(1, 2, 3), torch.randn(1, 2, 3))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("count_norms", [False, True])
def test_c34_block_gradient_norms_match_torch_layers(norm_first, count_norms):
    # Reference: a stack of torch's own nn.TransformerEncoderLayer (and nn.LayerNorm), its
    # gradients from autograd on torch's modules, grouped per layer by parameter name.
    torch_layers = [
        nn.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=torch.float64
        )
        for _ in range(3)
    ]
    torch_final = nn.LayerNorm(8, dtype=torch.float64) if norm_first else None
    if torch_final is not None:
        nn.init.normal_(torch_final.weight)  # not the default 1, so its gradient is not trivial
    ours = [EncoderBlock.from_torch(layer).double() for layer in torch_layers]
    final = None
    if torch_final is not None:
        final = nn.LayerNorm(8, dtype=torch.float64)
        final.load_state_dict(torch_final.state_dict())
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    target = torch.randn(2, 5, 8, dtype=torch.float64)
    got = block_gradient_norms(ours, x, target, final_norm=final, count_norms=count_norms)

    h = x
    for layer in torch_layers:
        h = layer(h)
    if torch_final is not None:
        h = torch_final(h)
    F.mse_loss(h, target).backward()
    expected = []
    for i, layer in enumerate(torch_layers):
        grads = [
            p.grad.reshape(-1)
            for name, p in layer.named_parameters()
            if count_norms or not name.startswith("norm")
        ]
        if torch_final is not None and count_norms and i == len(torch_layers) - 1:
            grads += [p.grad.reshape(-1) for p in torch_final.parameters()]
        expected.append(torch.cat(grads).norm().item())
    assert_close(torch.tensor(got), torch.tensor(expected), rtol=1e-10, atol=0.0)
    # Leaving the norms out changes the count (the norms do get gradient).
    other = block_gradient_norms(ours, x, target, final_norm=final, count_norms=not count_norms)
    assert all(a != b for a, b in zip(got, other))


def test_block_gradient_norms_bad_input():
    with pytest.raises(ValueError, match="target must have"):
        block_gradient_norms([EncoderBlock(8, 2, 16)], torch.randn(1, 3, 8), torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match="at least one block"):
        block_gradient_norms([], torch.randn(1, 3, 8), torch.randn(1, 3, 8))


def test_decoder_block_from_torch_with_gelu_matches_torch_float64():
    ref = nn.TransformerDecoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, activation="gelu", dtype=torch.float64
    ).eval()
    ours = DecoderBlock.from_torch(ref)
    x, memory = torch.randn(2, 4, 8, dtype=torch.float64), torch.randn(2, 5, 8, dtype=torch.float64)
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)  # torch: True = hidden
    assert ours.ffn.activation == "gelu"
    assert_close(ours(x, memory).out, ref(x, memory, tgt_mask=causal))


def test_decoder_block_returns_a_frozen_decoder_output_not_a_tuple():
    import dataclasses

    from attnlib.core.transformer import DecoderOutput

    block = DecoderBlock(8, 2, 16)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    res = block(x, memory)
    assert isinstance(res, DecoderOutput)
    assert [f.name for f in dataclasses.fields(res)] == ["out", "self_weights", "cross_weights"]
    assert res.out.shape == (2, 3, 8)
    assert res.self_weights.shape == (2, 2, 3, 3) and res.cross_weights.shape == (2, 2, 3, 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.out = x  # type: ignore[misc]
    with pytest.raises(TypeError):
        _, _, _ = res  # type: ignore[misc]  # no positional unpacking: read the fields by name


@pytest.mark.parametrize("norm_first", [False, True])
def test_blocks_with_a_zero_length_give_zero_weights_and_finite_outputs(norm_first):
    # A sequence of length 0 hides every key: its rows must be exactly 0 (not NaN, not uniform),
    # whether the block is called directly or the check ran once in a model above it.
    enc = EncoderBlock(8, 2, 16, norm_first=norm_first).double()
    dec = DecoderBlock(8, 2, 16, norm_first=norm_first).double()
    x = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    lens = torch.tensor([0, 3])
    out, w = enc(x, valid_lens=lens)
    assert torch.equal(w[0], torch.zeros_like(w[0]))  # every weight of the empty sequence
    assert torch.equal(w[1, ..., 3:], torch.zeros_like(w[1, ..., 3:]))  # its padding
    assert_close(w[1].sum(-1), torch.ones(2, 4, dtype=torch.float64))
    res = dec(x, x, memory_valid_lens=lens)
    assert torch.equal(res.cross_weights[0], torch.zeros_like(res.cross_weights[0]))
    (grad,) = torch.autograd.grad(out.sum() + res.out.sum(), x)
    assert torch.isfinite(out).all() and torch.isfinite(res.out).all()
    assert torch.isfinite(grad).all()
