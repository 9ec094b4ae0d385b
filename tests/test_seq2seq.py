"""The tiny encoder-decoder (attnlib.models.seq2seq.model): shapes, greedy decoding, eval mode, bad
input."""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError, fields, replace

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attnlib.core.transformer import DecoderBlock, EncoderBlock
from attnlib.course.examples import Seq2SeqConfig, trained_reversal_model
from attnlib.models.seq2seq.model import (
    DecodeOutput,
    EncodeOutput,
    GreedyDecode,
    Seq2SeqOutput,
    Seq2SeqTransformer,
    eval_mode,
    greedy_decode,
)
from attnlib.models.seq2seq.toy_tasks import BOS, EOS, PAD, make_batch

SMALL = Seq2SeqConfig(vocab_size=10, d_model=32, num_heads=2, d_ff=64)


def test_model_shapes_and_attention_maps(device):
    config = replace(SMALL, num_encoder_layers=2, num_decoder_layers=2)
    model = Seq2SeqTransformer(config).to(device)
    batch = make_batch("reverse", 3, 5, 10, min_len=2, device=device)
    out = model(batch.src, batch.tgt_in, src_valid_lens=batch.src_valid_lens)
    assert out.logits.shape == (3, 6, 10)
    assert len(out.encoder_weights) == len(out.cross_weights) == 2
    assert out.encoder_weights[0].shape == (3, 2, 5, 5)
    assert out.decoder_self_weights[0].shape == (3, 2, 6, 6)
    assert out.cross_weights[1].shape == (3, 2, 6, 5)  # C39: [target length, source length]
    for b in range(3):  # padded source positions get no cross-attention
        n = int(batch.src_valid_lens[b])
        assert torch.all(out.cross_weights[0][b, ..., n:] == 0)


def test_the_config_sets_the_modules():
    config = Seq2SeqConfig()
    model = Seq2SeqTransformer(config)
    assert model.config is config
    assert model.output.weight.shape == (config.vocab_size, config.d_model)
    assert len(model.encoder) == config.num_encoder_layers
    assert len(model.decoder) == config.num_decoder_layers
    assert model.encoder[0].self_attn.num_heads == config.num_heads
    assert model.positions.max_positions == config.max_positions


def _untrained_float64(device):
    torch.manual_seed(0)
    return (
        Seq2SeqTransformer(SMALL).to(device, torch.float64),
        make_batch("copy", 8, 5, 10, min_len=2, device=device),
        None,
    )


def _trained(device):
    # The committed reversal model writes EOS after the 6 letters; decoding 10 steps exercises
    # the PAD written after the first EOS.
    return (
        trained_reversal_model(device),
        make_batch("reverse", 64, 6, 13, split="test", device=device),
        10,
    )


@pytest.mark.parametrize("make", [_untrained_float64, _trained], ids=["untrained-f64", "trained"])
def test_c36_greedy_tokens_are_the_argmax_of_one_teacher_forced_pass(make, device):
    """Feeding the greedy output back, shifted right, in ONE causal pass reproduces it.

    Row t of a causal decoder depends on inputs 0..t only (C36), so one teacher-forced pass over
    [BOS, tokens[:-1]] must have its argmax equal to the greedy token at every position up to the
    first EOS, and its cross-attention rows there equal to greedy decoding's. After the first
    EOS greedy_decode writes PAD.
    """
    model, batch, max_len = make(device)
    decoded = greedy_decode(model, batch.src, batch.src_valid_lens, max_len=max_len)
    tokens, cross = decoded.tokens, decoded.cross_weights
    B, T = tokens.shape
    assert T == (max_len or batch.src.shape[1] + 1)
    assert cross[-1].shape == (B, model.encoder[0].self_attn.num_heads, T, batch.src.shape[1])
    tgt_in = torch.cat([torch.full((B, 1), BOS, device=device), tokens[:, :-1]], dim=1)  # (B, T)
    with torch.no_grad():
        out = model.eval()(batch.src, tgt_in, src_valid_lens=batch.src_valid_lens)
    eos_seen_before = (tokens == EOS).long().cumsum(1) - (tokens == EOS).long() > 0  # (B, T)
    upto_eos = ~eos_seen_before
    assert torch.equal(out.logits.argmax(-1)[upto_eos], tokens[upto_eos])
    assert (tokens[eos_seen_before] == PAD).all()
    # Same arithmetic on the same rows: default tolerances of the dtype hold.
    rows = upto_eos[:, None, :, None].expand_as(cross[-1])
    assert_close(out.cross_weights[-1][rows], cross[-1][rows])
    if make is _trained:  # the EOS path really ran: sequences shorter than T-1 ended early
        assert bool(eos_seen_before.any())


def test_eval_mode_is_used_and_restored():
    model = Seq2SeqTransformer(replace(SMALL, dropout=0.5))
    src = torch.tensor([[3, 4, 5]])
    with eval_mode(model) as m:
        assert m is model and not model.training
    assert model.training
    a = greedy_decode(model, src).tokens
    b = greedy_decode(model, src).tokens
    assert torch.equal(a, b)  # no dropout while decoding
    assert model.training
    with pytest.raises(RuntimeError):
        with eval_mode(model):
            raise RuntimeError("inside")
    assert model.training  # restored on an exception too


def test_bad_input_errors():
    with pytest.raises(TypeError, match="Seq2SeqConfig"):
        Seq2SeqTransformer(13)
    model = Seq2SeqTransformer(SMALL)
    with pytest.raises(ValueError, match="outside \\[0, 10\\)"):
        model(torch.tensor([[3, 12]]), torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="max_positions=16"):
        model(torch.full((1, 17), 3), torch.tensor([[BOS]]))
    with pytest.raises(TypeError, match="integer token ids"):
        model(torch.tensor([[3.0, 4.0]]), torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="max_len=20 exceeds"):
        greedy_decode(model, torch.full((1, 3), 3), max_len=20)
    with pytest.raises(TypeError, match="Seq2SeqTransformer"):
        greedy_decode(torch.nn.Linear(2, 2), torch.full((1, 3), 3))


# ----- the results: frozen dataclasses with tuple fields, equal to torch's own layers ------------


def _sinusoids(length: int, width: int) -> torch.Tensor:
    """The original Transformer's table, written out: PE[p, 2i] = sin(p / 10000^(2i/D)), cos."""
    pe = torch.zeros(length, width, dtype=torch.float64)
    for p in range(length):
        for i in range(0, width, 2):
            angle = p / 10000 ** (i / width)
            pe[p, i] = math.sin(angle)
            pe[p, i + 1] = math.cos(angle)
    return pe


def _torch_twin(device):
    """A float64 model whose two blocks are copies of torch's own layers, and those layers."""
    torch.manual_seed(0)
    layer = dict(dropout=0.0, batch_first=True, dtype=torch.float64, device=device)
    D, H, F = SMALL.d_model, SMALL.num_heads, SMALL.d_ff
    enc = nn.TransformerEncoderLayer(D, H, F, **layer).eval()
    dec = nn.TransformerDecoderLayer(D, H, F, **layer).eval()
    model = Seq2SeqTransformer(SMALL).to(device, torch.float64).eval()
    model.encoder[0] = EncoderBlock.from_torch(enc)
    model.decoder[0] = DecoderBlock.from_torch(dec)
    return model, enc, dec


def test_encode_decode_and_forward_equal_torchs_layers(device):
    """EncodeOutput, DecodeOutput and Seq2SeqOutput hold what torch's own encoder and decoder
    layers compute from the embeddings plus the written-out sinusoids (float64, padded source)."""
    model, enc, dec = _torch_twin(device)
    batch = make_batch("reverse", 3, 5, SMALL.vocab_size, min_len=2, device=device)
    src, tgt_in, lens = batch.src, batch.tgt_in, batch.src_valid_lens
    S, T = src.shape[1], tgt_in.shape[1]
    hidden_keys = torch.arange(S, device=device) >= lens[:, None]  # torch: True = ignored
    future = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)  # torch: True = hidden
    pe = _sinusoids(max(S, T), SMALL.d_model).to(device)
    x = model.src_embed.weight[src] + pe[:S]  # (B, S, D)
    y = model.tgt_embed.weight[tgt_in] + pe[:T]  # (B, T, D)
    weights = dict(need_weights=True, average_attn_weights=False)
    memory = enc(x, src_key_padding_mask=hidden_keys)
    enc_w = enc.self_attn(x, x, x, key_padding_mask=hidden_keys, **weights)[1]  # (B, H, S, S)
    out = dec(y, memory, tgt_mask=future, memory_key_padding_mask=hidden_keys, tgt_is_causal=True)
    logits = out @ model.output.weight.T + model.output.bias  # (B, T, V)
    sa, self_w = dec.self_attn(y, y, y, attn_mask=future, **weights)  # Post-LN: on y itself
    h = dec.norm1(y + sa)
    cross_w = dec.multihead_attn(h, memory, memory, key_padding_mask=hidden_keys, **weights)[1]

    encoded = model.encode(src, lens)
    assert isinstance(encoded, EncodeOutput)
    assert_close(encoded.memory, memory)
    assert_close(encoded.weights, (enc_w,))
    decoded = model.decode(tgt_in, encoded.memory, lens)
    assert isinstance(decoded, DecodeOutput)
    assert_close(decoded.logits, logits)
    assert_close(decoded.self_weights, (self_w,))
    assert_close(decoded.cross_weights, (cross_w,))
    whole = model(src, tgt_in, src_valid_lens=lens)
    assert isinstance(whole, Seq2SeqOutput)
    assert_close(whole.logits, logits)
    assert_close(whole.encoder_weights, (enc_w,))
    assert_close(whole.decoder_self_weights, (self_w,))
    assert_close(whole.cross_weights, (cross_w,))


def test_greedy_decode_equals_a_step_by_step_argmax_loop(device):
    """GreedyDecode's tokens are the argmax of the model's forward on each prefix, PAD after the
    first EOS; its cross_weights are the forward's on the finished prefix."""
    model = trained_reversal_model(device)
    batch = make_batch("reverse", 32, 6, 13, min_len=3, split="test", device=device)
    src, lens, max_len = batch.src, batch.src_valid_lens, 9
    decoded = greedy_decode(model, src, lens, max_len=max_len)
    assert isinstance(decoded, GreedyDecode)

    tgt = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=device)
    with torch.no_grad():
        for _ in range(max_len):  # one forward pass on the prefix per step
            logits = model(src, tgt, src_valid_lens=lens).logits  # (B, t, V)
            tgt = torch.cat([tgt, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        last = model(src, tgt[:, :-1], src_valid_lens=lens)  # what the last step saw
    expected = tgt[:, 1:].tolist()
    for row in expected:  # PAD strictly after the first EOS, by hand
        if EOS in row:
            first = row.index(EOS)
            row[first + 1 :] = [PAD] * (len(row) - first - 1)
    assert decoded.tokens.tolist() == expected
    assert any(EOS in row[:-1] for row in expected)  # the PAD path ran (shorter sources)
    assert_close(decoded.cross_weights, last.cross_weights)


def _results(device):
    model = Seq2SeqTransformer(replace(SMALL, num_encoder_layers=2, num_decoder_layers=2))
    model = model.to(device).eval()
    batch = make_batch("copy", 2, 4, SMALL.vocab_size, device=device)
    encoded = model.encode(batch.src)
    with torch.no_grad():
        return [
            model(batch.src, batch.tgt_in),
            encoded,
            model.decode(batch.tgt_in, encoded.memory),
            greedy_decode(model, batch.src),
        ]


def test_results_are_frozen_read_by_name_and_hold_tuples(device):
    for result in _results(device):
        name = type(result).__name__
        assert not isinstance(result, tuple), name
        with pytest.raises(TypeError):  # no positional unpacking
            first, *rest = result
        first_field = fields(result)[0].name
        with pytest.raises(FrozenInstanceError):
            setattr(result, first_field, None)
        per_layer = [getattr(result, f.name) for f in fields(result)[1:]]
        assert per_layer, name
        for value in per_layer:  # one tensor per layer, in a tuple (not a list)
            assert isinstance(value, tuple) and len(value) == 2, name
            assert all(isinstance(w, torch.Tensor) for w in value), name


def test_the_config_is_passed_as_config():
    model = Seq2SeqTransformer(config=SMALL)
    assert model.config is SMALL
    with pytest.raises(TypeError, match="cfg"):  # the old name is not silently accepted
        Seq2SeqTransformer(cfg=SMALL)
    with pytest.raises(TypeError, match="config must be an attnlib.models.seq2seq"):
        Seq2SeqTransformer(config={"d_model": 32})
