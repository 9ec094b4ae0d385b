"""The decoder-only model (GPT): shapes, causality, head_mask, the per-head views, generation and
bad input (issue 25).

The references: the same model with later tokens changed (causality, exact), a copy whose W_O
columns of a head are zeroed (head_mask), attention written out by hand from ``head_weights``
(the per-head views), the whole prefix recomputed (generation), and the error messages naming
the argument. GPT-2 parity is in ``test_gpt_parity.py``; the KV cache, GQA and the FLOP counts in
``test_gpt_cache.py``.
"""

from __future__ import annotations

import ast
import copy
import inspect
import math
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from attnlib import sinusoidal_encoding
from attnlib.models.gpt import GPT, GPTConfig, GPTOutput, KVCache
from attnlib.models.minilm import MiniLMEncoder

CFG = GPTConfig(vocab_size=11, max_len=16, d_model=12, num_heads=3, num_layers=2)
GQA = GPTConfig(vocab_size=11, max_len=16, d_model=16, num_heads=4, num_layers=2, num_kv_heads=2)
ATTN_ONLY = GPTConfig(
    vocab_size=11, max_len=16, d_model=12, num_heads=3, num_layers=2, attention_only=True
)

# Float64 comparisons of two computations of the same formula that differ only in how the
# products are grouped (written out by hand vs the model): each dot product of length n <= 48
# (the FFN width) is off by at most n·u·Σ|a_i b_i| with u = 1.1e-16; the activations and
# weights here are O(1) (LayerNorm outputs, weights of std 0.5), so Σ|a_i b_i| <= ~50 and each
# product is off by < 3e-13, amplified by at most ~1/σ <= 10 through each LayerNorm over two
# layers: < 1e-10. A real error (a wrong head, mask or position) moves them by ~1e-2.
# Seen: <= ~1e-14.
ATOL64 = 1e-10


def _model(cfg: GPTConfig = CFG, device="cpu", std: float = 0.5) -> GPT:
    """A float64 model in eval mode with weights large enough that every head matters."""
    if torch.device(device).type == "mps":
        pytest.skip("MPS has no float64")
    model = GPT(cfg).to(device=device, dtype=torch.float64).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" not in name:
                p.normal_(0.0, std)
    return model


def _ids(batch=2, length=9, vocab=CFG.vocab_size, device="cpu"):
    return torch.randint(0, vocab, (batch, length), device=device)


def test_forward_shapes_and_fields(device):
    model = _model(device=device)
    ids = _ids(device=device, length=7)
    out = model(ids, output_attentions=True, use_cache=True)
    assert isinstance(out, GPTOutput)
    assert out.logits.shape == (2, 7, CFG.vocab_size)
    assert len(out.hidden) == CFG.num_layers + 1
    assert all(h.shape == (2, 7, CFG.d_model) for h in out.hidden)
    assert out.attentions is not None and len(out.attentions) == CFG.num_layers
    assert all(w.shape == (2, CFG.num_heads, 7, 7) for w in out.attentions)
    assert out.cache is not None and out.cache.length == 7
    plain = model(ids, output_attentions=False)
    assert plain.attentions == () and plain.cache is None
    assert torch.equal(plain.logits, out.logits)


def test_output_flags_match_minilms():
    # Both models take output_attentions and output_hidden_states, both on by default; a field
    # turned off is an empty tuple, and GPT's streams are also readable as hidden_states.
    flags = ("output_attentions", "output_hidden_states")
    gpt_sig = inspect.signature(GPT.forward).parameters
    minilm_sig = inspect.signature(MiniLMEncoder.forward).parameters
    assert {f: gpt_sig[f].default for f in flags} == {f: minilm_sig[f].default for f in flags}
    assert all(gpt_sig[f].default is True for f in flags)
    model, ids = _model(), _ids(length=5)
    full = model(ids)
    assert len(full.attentions) == CFG.num_layers
    assert full.hidden_states is full.hidden and len(full.hidden) == CFG.num_layers + 1
    lean = model(ids, output_attentions=False, output_hidden_states=False)
    assert lean.attentions == () and lean.hidden == () and lean.hidden_states == ()
    assert torch.equal(lean.logits, full.logits)
    with pytest.raises(TypeError, match="output_hidden_states must be True or False"):
        model(ids, output_hidden_states="no")


def test_hidden_are_the_streams_entering_each_block_and_the_logits_their_unembedding():
    model = _model()
    ids = _ids()
    out = model(ids)
    emb = model.tok_emb.weight[ids] + model.pos_emb.weight[: ids.shape[1]]  # (B, T, D)
    assert torch.equal(out.hidden[0], emb)
    for layer, block in enumerate(model.blocks):
        assert_close(block(out.hidden[layer])[0], out.hidden[layer + 1], rtol=0, atol=0)
    final = torch.nn.functional.layer_norm(
        out.hidden[-1], (CFG.d_model,), model.ln_f.weight, model.ln_f.bias, CFG.layer_norm_eps
    )
    assert_close(out.logits, final @ model.tok_emb.weight.T, rtol=0, atol=ATOL64)


def test_attention_rows_are_causal_distributions():
    out = _model()(_ids(), output_attentions=True)
    for w in out.attentions:
        future = torch.ones(9, 9, dtype=torch.bool).triu(1)
        assert torch.all(w[..., future] == 0)
        assert_close(w.sum(-1), torch.ones_like(w.sum(-1)), rtol=0, atol=1e-14)


@pytest.mark.parametrize("cfg", [CFG, GQA, ATTN_ONLY], ids=["mha", "gqa", "attention_only"])
def test_logits_at_t_do_not_change_when_later_tokens_change(cfg):
    # Exact: the weights on later keys are exactly 0 (masked, then multiplied by the mask), so
    # their values add exact zeros, in the same order, to the same sums.
    model = _model(cfg)
    ids = _ids(batch=3, length=12, vocab=cfg.vocab_size)
    base = model(ids)
    for t in range(12):
        changed = ids.clone()
        changed[:, t + 1 :] = (ids[:, t + 1 :] + 1 + torch.arange(11 - t)) % cfg.vocab_size
        out = model(changed)
        assert torch.equal(out.logits[:, : t + 1], base.logits[:, : t + 1])
        if t < 11:  # and the change does reach the later positions
            assert not torch.equal(out.logits[:, t + 1 :], base.logits[:, t + 1 :])


def test_head_mask_of_ones_equals_no_mask_and_booleans_equal_floats():
    model = _model()
    ids = _ids()
    base = model(ids).logits
    ones = torch.ones(CFG.num_layers, CFG.num_heads, dtype=torch.float64)
    assert torch.equal(model(ids, head_mask=ones).logits, base)  # x · 1 is exact
    keep = torch.tensor([[True, False, True], [True, True, False]])
    assert torch.equal(
        model(ids, head_mask=keep).logits, model(ids, head_mask=keep.to(torch.float64)).logits
    )


def _without_head(model: GPT, layer: int, head: int) -> GPT:
    """The independent reference of an ablation: a copy whose W_O columns for that head are 0
    (``nn.Linear`` stores W_O transposed: head h's rows of the math are columns here)."""
    other = copy.deepcopy(model)
    dh = model.config.head_dim
    with torch.no_grad():
        other.blocks[layer].attn.w_o.weight[:, head * dh : (head + 1) * dh] = 0
    return other


@pytest.mark.parametrize("cfg", [CFG, GQA], ids=["mha", "gqa"])
def test_zeroing_a_head_equals_zeroing_its_rows_of_w_o(cfg):
    # Exact: both make that head's terms of the W_O product exact zeros (0·w or x·0).
    model = _model(cfg)
    ids = _ids(vocab=cfg.vocab_size)
    for layer in range(cfg.num_layers):
        for head in range(cfg.num_heads):
            mask = torch.ones(cfg.num_layers, cfg.num_heads, dtype=torch.float64)
            mask[layer, head] = 0
            ablated = model(ids, head_mask=mask, output_attentions=True)
            reference = _without_head(model, layer, head)(ids, output_attentions=True)
            assert_close(ablated.logits, reference.logits, rtol=0, atol=0)
            for a, b in zip(ablated.attentions, reference.attentions):
                assert_close(a, b, rtol=0, atol=0)  # a removed head still looks where it looked
            assert not torch.allclose(ablated.logits, model(ids).logits, atol=1e-3)


def test_the_course_ablation_helper_builds_a_gpt_head_mask():
    from attnlib.course.head_stats import head_mask_without  # notebook 10's helper

    model = _model()
    ids = _ids()
    mask = head_mask_without(model, [(1, 2)])  # float32: multiplying by 0 or 1 is still exact
    assert mask.shape == (CFG.num_layers, CFG.num_heads)
    reference = _without_head(model, 1, 2)(ids).logits
    assert_close(model(ids, head_mask=mask).logits, reference, rtol=0, atol=0)


def test_a_per_sequence_head_mask_equals_each_sequence_run_with_its_own():
    model = _model()
    ids = _ids(batch=3)
    masks = torch.ones(3, CFG.num_layers, CFG.num_heads, dtype=torch.float64)
    masks[0, 0, 1] = 0
    masks[1, 1, 2] = 0.5
    batched = model(ids, head_mask=masks).logits
    for b in range(3):
        alone = model(ids[b : b + 1], head_mask=masks[b]).logits
        assert_close(batched[b : b + 1], alone, rtol=0, atol=ATOL64)


def _written_out_layer(model: GPT, layer: int, x: torch.Tensor):
    """One attention sub-layer computed by hand from the per-head views (the math of the
    papers: ``softmax(q kᵀ/√Dh + causal) v W_O`` summed over heads, plus W_O's bias)."""
    attn = model.blocks[layer].attn
    ln = model.blocks[layer].ln1
    h_in = torch.nn.functional.layer_norm(x, (x.shape[-1],), ln.weight, ln.bias, ln.eps)
    length = x.shape[1]
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    out, weights = attn.w_o.bias.detach().clone(), []
    for h in range(model.config.num_heads):
        w_q, w_k, w_v, w_o = attn.head_weights(h)
        b_q, b_k, b_v = attn.head_biases(h)
        q, k, v = h_in @ w_q + b_q, h_in @ w_k + b_k, h_in @ w_v + b_v  # (B, T, Dh)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(model.config.head_dim)).masked_fill(
            future, float("-inf")
        )
        w = scores.softmax(-1)  # (B, T, T)
        weights.append(w)
        out = out + w @ v @ w_o  # (B, T, D)
    return out, torch.stack(weights, dim=1)


@pytest.mark.parametrize("cfg", [ATTN_ONLY, GQA], ids=["mha", "gqa"])
def test_head_weights_written_out_give_the_models_attention(cfg):
    model = _model(cfg)
    ids = _ids(vocab=cfg.vocab_size)
    out = model(ids, output_attentions=True)
    for layer in range(cfg.num_layers):
        x = out.hidden[layer]
        by_hand, weights = _written_out_layer(model, layer, x)
        assert_close(weights, out.attentions[layer], rtol=0, atol=ATOL64)
        attn_out, _, _, _ = model.blocks[layer].attn(
            torch.nn.functional.layer_norm(
                x, (cfg.d_model,), model.blocks[layer].ln1.weight, model.blocks[layer].ln1.bias
            )
        )
        assert_close(attn_out, by_hand, rtol=0, atol=ATOL64)
        if cfg.attention_only:  # the block adds its attention to the stream, nothing else
            assert_close(out.hidden[layer + 1] - x, by_hand, rtol=0, atol=ATOL64)


def test_head_weights_are_detached_views_with_the_math_shapes():
    model = _model(GQA)
    attn = model.blocks[1].attn
    d, dh = GQA.d_model, GQA.head_dim
    for h in range(GQA.num_heads):
        w_q, w_k, w_v, w_o = attn.head_weights(h)
        assert (w_q.shape, w_k.shape, w_v.shape, w_o.shape) == ((d, dh),) * 3 + ((dh, d),)
        assert not w_q.requires_grad
        assert w_q.untyped_storage().data_ptr() == attn.w_q.weight.untyped_storage().data_ptr()
        kv = h // GQA.group_size  # heads 0, 1 read K/V head 0; heads 2, 3 K/V head 1
        assert attn.kv_head_of(h) == kv
        assert torch.equal(w_k, attn.w_k.weight[kv * dh : (kv + 1) * dh].T)
        assert torch.equal(w_o, attn.w_o.weight[:, h * dh : (h + 1) * dh].T)
    assert GPT(GPTConfig(bias=False)).blocks[0].attn.head_biases(0) is None
    with pytest.raises(ValueError, match="head must be <= 3, got 4"):
        attn.head_weights(4)


def test_tied_and_untied_unembedding_and_sinusoidal_positions():
    tied = GPT(CFG)
    assert tied.unembed is None
    assert tied.unembedding().data_ptr() == tied.tok_emb.weight.data_ptr()
    untied = GPT(GPTConfig(tie_embeddings=False))
    assert untied.unembedding().shape == (64, 64)
    assert untied.unembedding().data_ptr() == untied.unembed.weight.data_ptr()
    sin = GPT(GPTConfig(positions="sinusoidal", max_len=20, d_model=8, num_heads=2))
    assert torch.equal(sin.pos_emb.weight, sinusoidal_encoding(20, 8, dtype=torch.float64))
    assert "pos_emb.weight" not in sin.state_dict()  # a constant, not a parameter
    assert sin(torch.zeros(1, 20, dtype=torch.int64)).logits.shape == (1, 20, 64)


def test_parameter_counts_match_the_closed_form():
    # D = 64, V = 64, max_len 64, L = 2, F = 4D: embeddings V·D + 64·D; per block 4·(D² + D)
    # attention, 2 LayerNorms of 2D, an FFN of 2·D·F + F + D; the final LayerNorm 2D; tied.
    d, v, f = 64, 64, 256
    block = 4 * (d * d + d) + 2 * 2 * d + 2 * d * f + f + d
    full = v * d + 64 * d + 2 * block + 2 * d
    assert sum(p.numel() for p in GPT(GPTConfig()).parameters()) == full
    attn_only = v * d + 64 * d + 2 * (4 * (d * d + d) + 2 * d) + 2 * d
    model = GPT(GPTConfig(attention_only=True))
    assert sum(p.numel() for p in model.parameters()) == attn_only
    assert model.blocks[0].ffn is None and model.blocks[0].ln2 is None
    # GQA with 1 K/V head of 32 (MQA): W_K and W_V are (D, 32)
    mqa = GPT(GPTConfig(num_kv_heads=1, attention_only=True))
    kv_saving = 2 * 2 * (d * 32 + 32)  # two layers, W_K and W_V, from (D, D) to (D, Dh)
    assert sum(p.numel() for p in mqa.parameters()) == attn_only - kv_saving


def test_initial_weights_follow_gpt2():
    model = GPT(GPTConfig(d_model=256, num_layers=8, num_heads=4, max_len=256, vocab_size=256))
    w_q = model.blocks[0].attn.w_q.weight
    w_o = model.blocks[0].attn.w_o.weight
    # the sample std of 65 536 normals is within 1 % of sigma (its relative error ~ 1/sqrt(2n))
    assert abs(w_q.std().item() / 0.02 - 1) < 0.01
    assert abs(w_o.std().item() / (0.02 / math.sqrt(16)) - 1) < 0.01
    assert torch.all(model.blocks[0].attn.w_q.bias == 0)


@pytest.mark.parametrize("cfg", [CFG, GQA], ids=["mha", "gqa"])
def test_generate_with_and_without_the_cache_and_against_recomputation(cfg):
    model = _model(cfg)
    prompt = _ids(batch=2, length=5, vocab=cfg.vocab_size)
    ids, steps = model.generate(prompt, 8)
    ids_plain, steps_plain = model.generate(prompt, 8, use_cache=False)
    assert ids.shape == (2, 13) and steps.shape == (2, 8, cfg.vocab_size)
    assert torch.equal(ids[:, :5], prompt)
    assert torch.equal(ids, ids_plain)
    assert_close(steps, steps_plain, rtol=0, atol=ATOL64)
    # the reference: the logits of the whole generated sequence at the positions that chose
    full = model(ids[:, :-1]).logits[:, 4:]  # (B, 8, V)
    assert_close(steps, full, rtol=0, atol=ATOL64)
    assert torch.equal(ids[:, 5:], full.argmax(-1))


def test_dropout_acts_in_training_only():
    model = GPT(GPTConfig(dropout=0.5)).double()
    ids = _ids(vocab=64)
    model.train()
    assert not torch.equal(model(ids).logits, model(ids).logits)
    model.eval()
    assert torch.equal(model(ids).logits, model(ids).logits)


# ----- bad input: a clear error naming the argument -------------------------------------------
CONFIG_ERRORS = [
    (dict(d_model=10, num_heads=3), ValueError, "num_heads=3 must divide d_model=10"),
    (dict(num_heads=4, num_kv_heads=3), ValueError, "num_kv_heads=3 must divide num_heads=4"),
    (dict(num_kv_heads=0), ValueError, "num_kv_heads must be >= 1, got 0"),
    (dict(num_kv_heads=1.0), TypeError, "num_kv_heads must be an int"),
    (dict(vocab_size=0), ValueError, "vocab_size must be >= 1, got 0"),
    (dict(max_len=2.5), TypeError, "max_len must be an int"),
    (dict(num_layers=0), ValueError, "num_layers must be >= 1"),
    (dict(d_ff=0), ValueError, "d_ff must be >= 1"),
    (dict(attention_only="yes"), TypeError, "attention_only must be True or False"),
    (dict(tie_embeddings=1), TypeError, "tie_embeddings must be True or False"),
    (dict(positions="rotary"), ValueError, "positions must be one of"),
    (dict(activation="tanh"), ValueError, "activation must be one of"),
    (dict(layer_norm_eps=0.0), ValueError, "layer_norm_eps must be a finite number > 0"),
    (dict(dropout=1.0), ValueError, r"dropout must be in \[0, 1\)"),
]


@pytest.mark.parametrize("kwargs, error, message", CONFIG_ERRORS)
def test_bad_config_names_the_field(kwargs, error, message):
    with pytest.raises(error, match=message):
        GPTConfig(**kwargs)


def test_model_needs_a_gpt_config():
    with pytest.raises(TypeError, match="config must be an attnlib.models.gpt.GPTConfig"):
        GPT(dict(vocab_size=4))  # type: ignore[arg-type]


def _cache(batch=2, layers=2, heads=3, length=4, dh=4, dtype=torch.float64):
    t = torch.zeros(batch, heads, length, dh, dtype=dtype)
    return KVCache((t,) * layers, (t,) * layers)


FORWARD_ERRORS = [
    (dict(ids=[[1, 2]]), TypeError, "ids must be a torch.Tensor, got list"),
    (dict(ids=torch.ones(2, 3)), TypeError, "ids must hold integers .* got dtype torch.float32"),
    (dict(ids=torch.ones(2, 3, dtype=torch.uint8)), TypeError, "int64 or int32 .* torch.uint8"),
    (dict(ids=torch.ones(6, dtype=torch.int64)), ValueError, r"ids must have shape \(B, T\)"),
    (dict(ids=torch.ones(2, 0, dtype=torch.int64)), ValueError, r"T >= 1, got \(2, 0\)"),
    (dict(ids=torch.ones(1, 17, dtype=torch.int64)), ValueError, "T=17 .* max_len=16"),
    (dict(ids=torch.full((2, 3), 11)), ValueError, r"ids must lie in \[0, 11\) .* got 11"),
    (dict(ids=torch.full((2, 3), -1)), ValueError, r"ids must lie in \[0, 11\) .* got -1"),
    (
        dict(head_mask=torch.ones(3, 2, dtype=torch.float64)),
        ValueError,
        r"head_mask must have shape \(num_layers, num_heads\) = \(2, 3\) .* got \(3, 2\)",
    ),
    (
        dict(head_mask=torch.ones(2, 3, dtype=torch.int64)),
        TypeError,
        "head_mask must be floating .* or boolean",
    ),
    (dict(head_mask=torch.ones(5, 2, 3)), ValueError, r"\(B, num_layers, num_heads\) = \(2, 2"),
    (dict(cache=(torch.zeros(1),)), TypeError, "cache must be a KVCache or None, got tuple"),
    (dict(cache=_cache(batch=3)), ValueError, "cache has batch size 3 but ids have B=2"),
    (dict(cache=_cache(layers=1)), ValueError, "cache holds 1 layers but .* num_layers=2"),
    (dict(cache=_cache(heads=1)), ValueError, r"\(B, num_kv_heads, S, head_dim\) = \(2, 3, 4, 4\)"),
    (
        dict(cache=_cache(dtype=torch.float32)),
        TypeError,
        "cache has dtype torch.float32 but the model has torch.float64",
    ),
    (
        dict(cache=_cache(length=14)),
        ValueError,
        "after the cache's 14: 17 positions, more than the model's max_len=16",
    ),
    (dict(use_cache=1), TypeError, "use_cache must be True or False"),
    (dict(output_attentions="no"), TypeError, "output_attentions must be True or False"),
]


@pytest.mark.parametrize("kwargs, error, message", FORWARD_ERRORS)
def test_bad_forward_input_names_the_argument(kwargs, error, message):
    model = _model()
    kwargs = {"ids": torch.ones(2, 3, dtype=torch.int64), **kwargs}
    with pytest.raises(error, match=message):
        model(**kwargs)


def test_bad_generate_and_cache_input():
    model = _model()
    prompt = torch.ones(1, 10, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"T \+ max_new_tokens - 1 = 17 positions.*max_len=16"):
        model.generate(prompt, 8)
    assert model.generate(prompt, 7)[0].shape == (1, 17)  # the last token is never fed back
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1, got 0"):
        model.generate(prompt, 0)
    with pytest.raises(TypeError, match="ids must hold integers"):
        model.generate(prompt.double(), 2)
    t = torch.zeros(2, 3, 4, 4)
    with pytest.raises(ValueError, match="one tensor per layer .* 2 keys and 1 values"):
        KVCache((t, t), (t,))
    with pytest.raises(ValueError, match=r"values\[1\] has shape \(2, 3, 5, 4\)"):
        KVCache((t, t), (t, torch.zeros(2, 3, 5, 4)))
    with pytest.raises(ValueError, match=r"keys\[0\] must be a \(B, Hkv, S, Dh\) tensor"):
        KVCache((torch.zeros(3, 4),), (torch.zeros(3, 4),))
    with pytest.raises(TypeError, match="keys and values must be tuples"):
        KVCache([t], [t])  # type: ignore[arg-type]


def test_the_gpt_imports_no_other_model_and_nothing_above_models():
    # tests/test_layering.py checks seq2seq and minilm against each other; the same for gpt.
    folder = Path(GPT.__module__.replace(".", "/")).parent
    root = Path(__file__).resolve().parents[1]
    paths = sorted((root / folder).glob("*.py"))
    assert {p.name for p in paths} >= {"model.py", "config.py", "cache.py", "gpt2.py"}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attnlib"):
                parts = node.module.split(".")
                assert parts[1] in ("util", "core", "models"), f"{path.name}: {node.module}"
                if parts[1] == "models":
                    assert parts[2] == "gpt", f"{path.name} imports {node.module}"


def test_generate_runs_in_eval_mode_and_restores_the_mode():
    # With dropout 0.5 in training mode the two paths would draw different dropout masks; the
    # reference is the same model in eval mode, where dropout is the identity.
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=11, max_len=16, d_model=12, num_heads=3, num_layers=2, dropout=0.5)
    model = GPT(cfg).train()
    ids = torch.randint(0, 11, (2, 4))
    torch.manual_seed(1)
    cached = model.generate(ids, 5, use_cache=True)
    assert model.training
    torch.manual_seed(2)
    full = model.generate(ids, 5, use_cache=False)
    assert model.training
    assert torch.equal(cached[0], full[0])
    assert_close(cached[1], full[1])
    reference = copy.deepcopy(model).eval().generate(ids, 5, use_cache=False)
    assert_close(cached[1], reference[1])
    assert not model.eval().generate(ids, 1)[0].requires_grad and not model.training


def test_sinusoidal_positions_of_a_float64_model_are_exact():
    sin = GPT(GPTConfig(positions="sinusoidal", max_len=20, d_model=8, num_heads=2)).double()
    assert torch.equal(sin.pos_emb.weight, sinusoidal_encoding(20, 8, dtype=torch.float64))
