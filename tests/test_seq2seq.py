"""The tiny encoder-decoder (attnlib.models.seq2seq.model): shapes, greedy decoding, eval mode, bad
input."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.testing import assert_close

from attnlib.course.examples import Seq2SeqConfig, trained_reversal_model
from attnlib.models.seq2seq.model import Seq2SeqTransformer, eval_mode, greedy_decode
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
