"""The KV cache and grouped-query attention of the GPT model (issue 25, claim C50's library half).

The references: the whole prefix recomputed without a cache (decoding equality), a multi-head
model whose K/V heads are the GQA model's repeated per group (GQA equality), the closed form of
``attnlib.course.kv_cache.step_flops`` against ``FlopCounterMode`` (exact integers), and the
tensors' own ``numel`` against ``2 · layers · tokens · kv_heads · Dh``.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from attnlib.course.kv_cache import (
    cache_size_table,
    count_flops,
    decode_cost_table,
    measured_step_flops,
    step_flops,
)
from attnlib.models.gpt import GPT, LLAMA2_7B, LLAMA3_8B, CacheShape, GPTConfig, kv_cache_numbers

MHA = GPTConfig(vocab_size=13, max_len=24, d_model=16, num_heads=4, num_layers=2)
GQA = GPTConfig(vocab_size=13, max_len=24, d_model=16, num_heads=4, num_layers=2, num_kv_heads=2)
MQA = GPTConfig(vocab_size=13, max_len=24, d_model=16, num_heads=4, num_layers=2, num_kv_heads=1)
ATTN_ONLY = GPTConfig(
    vocab_size=13, max_len=24, d_model=16, num_heads=2, num_layers=2, attention_only=True
)
CONFIGS = [MHA, GQA, MQA, ATTN_ONLY]
IDS = ["mha", "gqa", "mqa", "attention_only"]

# Cached and recomputed logits are the same formula on differently shaped products (a (1, D)
# row against a (T, D) block), so BLAS may group the sums differently: each dot product of
# length n <= 64 (the FFN width) is off by at most n·u·Σ|a_i b_i|, u = 1.1e-16, with
# Σ|a_i b_i| <= ~50 for these O(1) activations and weights of std 0.5: < 4e-13, amplified by at
# most ~10 through each of the LayerNorms of two layers: < 1e-10. A cache bug (a wrong position,
# mask offset or K/V head) moves the logits by ~1e-1. Seen: <= 1.5e-14 (logits up to ~7).
ATOL64 = 1e-10


def _model(cfg: GPTConfig, device="cpu") -> GPT:
    if torch.device(device).type == "mps":
        pytest.skip("MPS has no float64")
    model = GPT(cfg).to(device=device, dtype=torch.float64).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" not in name:
                p.normal_(0.0, 0.5)
    return model


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_decoding_one_token_at_a_time_equals_recomputing_the_prefix(cfg, device):
    model = _model(cfg, device)
    ids = torch.randint(0, cfg.vocab_size, (3, 20), device=device)
    full = model(ids).logits  # (B, T, V), the whole sequence at once
    cache = None
    for t in range(20):
        out = model(ids[:, t : t + 1], cache=cache, use_cache=True)
        assert out.cache is not None and out.cache.length == t + 1
        assert_close(out.logits[:, 0], full[:, t], rtol=0, atol=ATOL64)
        # and the uncached step: the prefix recomputed, its last row
        recomputed = model(ids[:, : t + 1]).logits[:, -1]
        assert_close(out.logits[:, 0], recomputed, rtol=0, atol=ATOL64)
        cache = out.cache


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_chunked_prefill_then_decoding_equals_one_pass(cfg):
    model = _model(cfg)
    ids = torch.randint(0, cfg.vocab_size, (2, 21))
    full = model(ids, output_attentions=True)
    cache, start = None, 0
    for end in (7, 8, 15, 16, 21):  # a prompt in chunks of 7, 1, 7, 1, 5 tokens
        out = model(ids[:, start:end], cache=cache, use_cache=True, output_attentions=True)
        assert_close(out.logits, full.logits[:, start:end], rtol=0, atol=ATOL64)
        for w, w_full in zip(out.attentions, full.attentions):
            assert w.shape == (2, cfg.num_heads, end - start, end)  # new queries, all keys
            assert_close(w, w_full[:, :, start:end, :end], rtol=0, atol=ATOL64)
        cache, start = out.cache, end


@settings(max_examples=10)  # each example builds a model; 10 cover the cases in ~2 s
@given(
    kv_heads=st.sampled_from([1, 2, 4]),
    layers=st.integers(1, 3),
    attention_only=st.booleans(),
    cuts=st.lists(st.integers(1, 15), max_size=4),
)
def test_any_split_of_a_sequence_into_chunks_gives_the_whole_pass(
    kv_heads, layers, attention_only, cuts
):
    cfg = GPTConfig(
        vocab_size=7,
        max_len=16,
        d_model=8,
        num_heads=4,
        num_layers=layers,
        num_kv_heads=kv_heads,
        attention_only=attention_only,
    )
    model = _model(cfg)
    ids = torch.randint(0, 7, (2, 16))
    full = model(ids).logits
    bounds = sorted({0, *cuts, 16})
    cache, pieces = None, []
    for start, end in zip(bounds, bounds[1:]):
        out = model(ids[:, start:end], cache=cache, use_cache=True)
        cache = out.cache
        pieces.append(out.logits)
    assert cache.numel() == kv_cache_numbers(cfg, 16, 2)
    assert_close(torch.cat(pieces, dim=1), full, rtol=0, atol=ATOL64)


def test_decoding_with_a_head_mask_equals_the_whole_pass_with_it():
    model = _model(GQA)
    ids = torch.randint(0, 13, (2, 12))
    mask = torch.ones(2, GQA.num_layers, GQA.num_heads, dtype=torch.float64)
    mask[0, 0, 1], mask[1, 1, 3] = 0, 0  # a different head removed in each sequence
    full = model(ids, head_mask=mask).logits
    out = model(ids[:, :5], head_mask=mask, use_cache=True)  # the prefill, then one at a time
    steps = [out.logits]
    for t in range(5, 12):
        out = model(ids[:, t : t + 1], head_mask=mask, cache=out.cache, use_cache=True)
        steps.append(out.logits)
    assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=ATOL64)


def test_a_cache_is_never_changed_and_can_be_reused():
    model = _model(MHA)
    ids = torch.randint(0, 13, (2, 10))
    prefix = model(ids[:, :6], use_cache=True).cache
    kept = [k.clone() for k in prefix.keys] + [v.clone() for v in prefix.values]
    a = model(ids[:, 6:8], cache=prefix, use_cache=True)
    b = model(ids[:, 6:], cache=prefix, use_cache=True)  # the same prefix, another continuation
    assert all(torch.equal(x, y) for x, y in zip(kept, prefix.keys + prefix.values))
    assert a.cache.length == 8 and b.cache.length == 10
    assert_close(b.logits[:, :2], a.logits, rtol=0, atol=ATOL64)


def test_the_cache_holds_the_keys_and_values_the_layers_computed():
    # The reference: each layer's K and V projections applied to the stream entering it.
    model = _model(GQA)
    ids = torch.randint(0, 13, (2, 9))
    out = model(ids, use_cache=True)
    for layer, block in enumerate(model.blocks):
        x = block.ln1(out.hidden[layer])  # (B, T, D)
        k = block.attn.w_k(x).view(2, 9, GQA.kv_heads, GQA.head_dim).transpose(1, 2)
        v = block.attn.w_v(x).view(2, 9, GQA.kv_heads, GQA.head_dim).transpose(1, 2)
        assert_close(out.cache.keys[layer], k, rtol=0, atol=ATOL64)
        assert_close(out.cache.values[layer], v, rtol=0, atol=ATOL64)


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_cache_size_is_two_layers_tokens_kv_heads_head_dim(cfg):
    model = _model(cfg)
    for batch, tokens in ((1, 1), (2, 9), (3, 24)):
        cache = model(torch.zeros(batch, tokens, dtype=torch.int64), use_cache=True).cache
        expected = 2 * cfg.num_layers * tokens * cfg.kv_heads * cfg.head_dim * batch
        assert cache.numel() == expected == kv_cache_numbers(cfg, tokens, batch)
        assert cache.nbytes() == 8 * expected  # float64
        assert all(k.shape == (batch, cfg.kv_heads, tokens, cfg.head_dim) for k in cache.keys)


def test_gqa_shrinks_the_cache_by_exactly_the_group_size():
    tokens = torch.zeros(2, 11, dtype=torch.int64)
    sizes = {
        cfg.kv_heads: _model(cfg)(tokens, use_cache=True).cache.numel() for cfg in (MHA, GQA, MQA)
    }
    assert sizes[4] == 2 * sizes[2] == 4 * sizes[1]  # g = 1, 2, 4
    assert GQA.group_size == 2 and MQA.group_size == 4


def _as_mha(gqa: GPT) -> GPT:
    """The independent reference of GQA: a multi-head model whose K/V heads are the GQA model's,
    each repeated for the g query heads of its group (as Llama's ``repeat_kv`` does to the
    tensors, done here to the weights)."""
    cfg = gqa.config
    mha = _model(GPTConfig(**{**cfg.__dict__, "num_kv_heads": None}))
    state = dict(gqa.state_dict())
    dh, g = cfg.head_dim, cfg.group_size
    for key, value in gqa.state_dict().items():
        if ".attn.w_k." in key or ".attn.w_v." in key:  # (Hkv·Dh, D) or (Hkv·Dh,)
            heads = value.reshape(cfg.kv_heads, dh, *value.shape[1:])
            state[key] = heads.repeat_interleave(g, dim=0).reshape(cfg.num_heads * dh, -1)
            state[key] = state[key].reshape(cfg.num_heads * dh, *value.shape[1:])
    mha.load_state_dict(state, strict=True)
    return mha


@pytest.mark.parametrize("cfg", [GQA, MQA], ids=["gqa", "mqa"])
def test_gqa_equals_mha_with_each_kv_head_repeated_over_its_group(cfg):
    gqa = _model(cfg)
    mha = _as_mha(gqa)
    ids = torch.randint(0, 13, (3, 17))
    a = gqa(ids, output_attentions=True, use_cache=True)
    b = mha(ids, output_attentions=True, use_cache=True)
    assert_close(a.logits, b.logits, rtol=0, atol=ATOL64)
    for wa, wb in zip(a.attentions, b.attentions):
        assert_close(wa, wb, rtol=0, atol=ATOL64)
    assert b.cache.numel() == cfg.group_size * a.cache.numel()
    # and head_mask means the same on both
    mask = torch.ones(2, 4, dtype=torch.float64)
    mask[1, 3] = 0
    assert_close(
        gqa(ids, head_mask=mask).logits, mha(ids, head_mask=mask).logits, atol=ATOL64, rtol=0
    )


# ----- FLOPs per new token, counted ---------------------------------------------------------
PREFIXES = (0, 1, 6, 23)


@pytest.mark.parametrize(
    "cfg", [*CONFIGS, GPTConfig(d_ff=40, tie_embeddings=False)], ids=[*IDS, "untied"]
)
def test_counted_flops_per_step_equal_the_closed_form(cfg):
    model = _model(cfg)
    for p in PREFIXES:
        if p + 1 > cfg.max_len:
            continue
        for use_cache in (True, False):
            counted = measured_step_flops(model, p, use_cache=use_cache)
            assert counted == step_flops(cfg, p, use_cache=use_cache), (p, use_cache)
    assert measured_step_flops(model, 5, use_cache=True, batch=3) == step_flops(
        cfg, 5, use_cache=True, batch=3
    )


def test_with_the_cache_the_step_grows_linearly_without_it_quadratically():
    model = _model(MHA)
    cached = [measured_step_flops(model, p, use_cache=True) for p in range(12)]
    uncached = [measured_step_flops(model, p, use_cache=False) for p in range(12)]
    d, layers = MHA.d_model, MHA.num_layers
    # cached: first differences constant, = the scores and the mix of one more key
    assert {b - a for a, b in zip(cached, cached[1:])} == {layers * 2 * 2 * d}
    # uncached: second differences constant and positive (a parabola in p)
    first = [b - a for a, b in zip(uncached, uncached[1:])]
    assert {b - a for a, b in zip(first, first[1:])} == {2 * layers * 2 * 2 * d}
    assert cached[0] == uncached[0]  # one token, no prefix: the same call
    assert uncached[11] > 10 * cached[11]


def test_decode_cost_table_rows():
    model = _model(ATTN_ONLY)
    rows = decode_cost_table(model, [0, 4, 9])
    assert [r.prefix for r in rows] == [0, 4, 9]
    for r in rows:
        assert r.flops_cached == step_flops(ATTN_ONLY, r.prefix, use_cache=True)
        assert r.flops_uncached == step_flops(ATTN_ONLY, r.prefix, use_cache=False)
        assert r.cache_numbers == kv_cache_numbers(ATTN_ONLY, r.prefix + 1)


def test_count_flops_counts_a_matmul():
    a, b = torch.randn(3, 5), torch.randn(5, 7)
    assert count_flops(lambda: a @ b) == 2 * 3 * 5 * 7


# ----- real model sizes, computed ------------------------------------------------------------
def test_cache_of_7b_class_models():
    # Llama-2-7B: 2 · 32 layers · 4096 tokens · 32 heads · 128 = 2^30 numbers, 2 GiB in float16;
    # Llama-3-8B shares each K/V head among 4 query heads: a quarter of that.
    assert kv_cache_numbers(LLAMA2_7B, 4096) == 2 * 32 * 4096 * 32 * 128 == 2**30
    assert kv_cache_numbers(LLAMA3_8B, 4096) == 2 * 32 * 4096 * 8 * 128 == 2**28
    assert LLAMA2_7B.d_model == 4096
    rows = cache_size_table()
    assert [r.name for r in rows] == ["Llama-2-7B", "Llama-3-8B"]
    assert rows[0].bytes == 2 * 2**30 and rows[1].bytes == 2 * 2**28
    assert rows[0].numbers == 4 * rows[1].numbers and rows[1].group_size == 4
    assert (
        cache_size_table(tokens=1, batch=8, bytes_per_number=4)[0].bytes
        == 4 * 8 * 2 * 32 * 32 * 128
    )


def test_cache_size_input_errors():
    with pytest.raises(ValueError, match="num_kv_heads=3 must divide num_heads=32"):
        CacheShape("x", num_layers=2, num_heads=32, num_kv_heads=3, head_dim=64)
    with pytest.raises(ValueError, match="tokens must be >= 0, got -1"):
        kv_cache_numbers(MHA, -1)
    with pytest.raises(ValueError, match="batch must be >= 1, got 0"):
        kv_cache_numbers(MHA, 4, 0)
    with pytest.raises(TypeError, match="cfg must be a GPTConfig or a CacheShape, got dict"):
        kv_cache_numbers({}, 4)
    with pytest.raises(ValueError, match="prefix must be >= 0"):
        step_flops(MHA, -1, use_cache=True)
    with pytest.raises(ValueError, match=r"prefix \+ 1 = 25 positions exceed max_len=24"):
        measured_step_flops(_model(MHA), 24, use_cache=False)
