"""Our GPT against an independent implementation: transformers' ``GPT2LMHeadModel``, built from a
small ``GPT2Config`` (nothing downloaded) and given the same weights (issue 25, claim C49's
reference).

Every weight, the LayerNorms' included, is drawn at random (std 0.3) so that no part can be wrong
unseen, and both models run in float64.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from attnlib.models.gpt import GPT, GPTConfig
from attnlib.models.gpt.gpt2 import activation_from_gpt2, gpt2_config_kwargs, state_dict_from_gpt2

transformers = pytest.importorskip("transformers")

# Two computations of the same formula in float64 that group the sums differently (GPT-2's
# Conv1D is addmm(b, x, W), ours F.linear(x, Wᵀ, b); its eager attention adds a finfo.min mask,
# ours masks then multiplies by the mask): each dot product of length n <= 128 (the FFN width)
# is off by at most n·u·Σ|a_i b_i|, u = 1.1e-16, Σ|a_i b_i| <= ~100 for LayerNorm outputs and
# weights of std 0.3 (<= 1.4e-12), amplified by at most ~10 through each LayerNorm (the stream's
# std stays above ~0.1) over two layers and the final one: < 1e-10. A wrong transpose, split of
# c_attn, position or mask changes the logits by ~1e-1 (they are O(1) here). Seen: <= 1.4e-15.
ATOL64 = 1e-10

CFG = GPTConfig(vocab_size=37, max_len=24, d_model=32, num_heads=4, num_layers=2)


def _pair(cfg: GPTConfig, *, zero_mlp: bool = False, hf_activation: str | None = None):
    """A random ``GPT2LMHeadModel`` for ``cfg`` and our GPT loaded with its weights.

    ``hf_activation`` overrides the reference's ``activation_function`` (written by hand, so the
    reference does not depend on our name mapping)."""
    kwargs = gpt2_config_kwargs(cfg)
    if hf_activation is not None:
        kwargs["activation_function"] = hf_activation
    hf_cfg = transformers.GPT2Config(**kwargs, attn_implementation="eager")
    hf = transformers.GPT2LMHeadModel(hf_cfg).double().eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0.0, 0.3)
        if zero_mlp:  # the attention-only model, as a GPT-2 whose MLPs output 0
            for block in hf.transformer.h:
                block.mlp.c_proj.weight.zero_()
                block.mlp.c_proj.bias.zero_()
    ours = GPT(cfg).double().eval()
    ours.load_state_dict(state_dict_from_gpt2(hf.state_dict(), cfg), strict=True)
    return hf, ours


def _ids(batch=3, length=24, vocab=CFG.vocab_size):
    return torch.randint(0, vocab, (batch, length))


CASES = {
    "tied": (CFG, False),
    "untied": (GPTConfig(**{**CFG.__dict__, "tie_embeddings": False}), False),
    "relu_d_ff": (GPTConfig(**{**CFG.__dict__, "activation": "relu", "d_ff": 48}), False),
    "attention_only": (GPTConfig(**{**CFG.__dict__, "attention_only": True}), True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_logits_attentions_and_states_equal_gpt2(case):
    cfg, zero_mlp = CASES[case]
    hf, ours = _pair(cfg, zero_mlp=zero_mlp)
    if not cfg.tie_embeddings:
        assert hf.lm_head.weight is not hf.transformer.wte.weight
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids, output_attentions=True, output_hidden_states=True)
        out = ours(ids, output_attentions=True)
    assert ref.logits.abs().max() > 1  # not a vanishing output
    assert_close(out.logits, ref.logits, rtol=0, atol=ATOL64)
    for a, b in zip(out.attentions, ref.attentions, strict=True):
        assert_close(a, b, rtol=0, atol=ATOL64)
    # transformers' last hidden state is after ln_f; ours are the streams entering each block
    for a, b in zip(out.hidden[:-1], ref.hidden_states[:-1], strict=True):
        assert_close(a, b, rtol=0, atol=ATOL64)
    final = torch.nn.functional.layer_norm(
        out.hidden[-1], (cfg.d_model,), ours.ln_f.weight, ours.ln_f.bias, cfg.layer_norm_eps
    )
    assert_close(final, ref.hidden_states[-1], rtol=0, atol=ATOL64)


def test_cached_decoding_equals_gpt2s_own_cached_decoding():
    hf, ours = _pair(CFG)
    ids = _ids(batch=2)
    with torch.no_grad():
        ref = hf(ids[:, :10], use_cache=True)
        out = ours(ids[:, :10], use_cache=True)
        past, cache = ref.cache, out.cache
        for t in range(10, 24):
            ref = hf(ids[:, t : t + 1], cache=past, use_cache=True)
            out = ours(ids[:, t : t + 1], cache=cache, use_cache=True)
            assert_close(out.logits, ref.logits, rtol=0, atol=ATOL64)
            past, cache = ref.cache, out.cache


def test_head_mask_equals_gpt2_with_that_heads_rows_of_w_o_zeroed():
    # GPT-2 (transformers 5) takes no head_mask: the reference zeroes the head's rows of c_proj
    # (a Conv1D, weight (in, out): rows h·Dh:(h+1)·Dh read head h), an independent way to
    # remove what the head passes on.
    hf, ours = _pair(CFG)
    ids = _ids()
    dh = CFG.head_dim
    with torch.no_grad():
        ones = torch.ones(CFG.num_layers, CFG.num_heads, dtype=torch.float64)
        assert_close(ours(ids, head_mask=ones).logits, hf(ids).logits, rtol=0, atol=ATOL64)
        for layer, head in ((0, 0), (0, 3), (1, 2)):
            mask = ones.clone()
            mask[layer, head] = 0
            c_proj = hf.transformer.h[layer].attn.c_proj.weight
            kept = c_proj[head * dh : (head + 1) * dh].clone()
            c_proj[head * dh : (head + 1) * dh] = 0
            ref = hf(ids).logits
            c_proj[head * dh : (head + 1) * dh] = kept
            got = ours(ids, head_mask=mask).logits
            assert_close(got, ref, rtol=0, atol=ATOL64)
            assert (got - hf(ids).logits).abs().max() > 1e-3  # the head did matter


def test_conversion_refuses_what_gpt2_is_not():
    hf, _ = _pair(CFG)
    attention_only = GPTConfig(**{**CFG.__dict__, "attention_only": True})
    with pytest.raises(ValueError, match="layer 0's MLP .* is not zero"):
        state_dict_from_gpt2(hf.state_dict(), attention_only)
    gqa = GPTConfig(**{**CFG.__dict__, "num_kv_heads": 2})
    with pytest.raises(ValueError, match="differs in num_kv_heads"):
        gpt2_config_kwargs(gqa)
    sinusoidal = GPTConfig(**{**CFG.__dict__, "positions": "sinusoidal", "bias": False})
    with pytest.raises(ValueError, match="differs in positions, bias"):
        state_dict_from_gpt2(hf.state_dict(), sinusoidal)


@pytest.mark.parametrize("hf_activation", ["gelu_new", "gelu_pytorch_tanh"])
def test_tanh_gelu_checkpoint_equals_gpt2_built_with_it(hf_activation):
    # Real GPT-2 checkpoints use activation_function="gelu_new", the tanh approximation of GELU.
    cfg = GPTConfig(**{**CFG.__dict__, "activation": activation_from_gpt2(hf_activation)})
    assert cfg.activation == "gelu_tanh"
    hf, ours = _pair(cfg, hf_activation=hf_activation)
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids).logits
        assert_close(ours(ids).logits, ref, rtol=0, atol=ATOL64)
        # the exact-GELU model with the same weights is another function: the test can tell
        exact = GPT(CFG).double().eval()
        exact.load_state_dict(state_dict_from_gpt2(hf.state_dict(), CFG), strict=True)
        assert (exact(ids).logits - ref).abs().max() > 1e-4


def test_conversion_refuses_a_checkpoint_of_another_activation():
    hf, _ = _pair(CFG, hf_activation="gelu_new")
    with pytest.raises(ValueError, match=r"activation_function='gelu_new' is our 'gelu_tanh'"):
        state_dict_from_gpt2(
            hf.state_dict(), CFG, activation_function=hf.config.activation_function
        )
    tanh = GPTConfig(**{**CFG.__dict__, "activation": "gelu_tanh"})
    state_dict_from_gpt2(hf.state_dict(), tanh, activation_function="gelu_new")  # agrees: loads
    assert gpt2_config_kwargs(tanh)["activation_function"] == "gelu_new"
    with pytest.raises(ValueError, match=r"activation_function='gelu_fast' has no GPT activation"):
        activation_from_gpt2("gelu_fast")
