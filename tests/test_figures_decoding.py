"""attnlib.figures.decoding: the cross-attention panel and the repeatable training wrapper."""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

import attnlib.seq2seq
from attnlib.decoding import token_labels, trace_greedy_decoding
from attnlib.figures.decoding import cross_attention_panel, train_reversal_model
from attnlib.seq2seq import Seq2SeqTransformer


def _trace():
    torch.manual_seed(0)
    model = Seq2SeqTransformer(13, d_model=16, num_heads=2, d_ff=16, num_decoder_layers=2).eval()
    return trace_greedy_decoding(model, torch.tensor([4, 9, 3, 7, 12]))


def test_c39_panel_is_target_by_source_with_token_labels():
    trace = _trace()
    ax = Figure().subplots()
    im = cross_attention_panel(trace, ax=ax)
    data = im.get_array()
    assert data.shape == (6, 5)  # [T steps, S source positions]
    np.testing.assert_allclose(data, trace.cross_weights[-1].mean(0).double().numpy(), rtol=1e-6)
    assert [t.get_text() for t in ax.get_xticklabels()] == token_labels(trace.src)
    assert "6 × 5" in ax.get_title()


def test_panel_one_head_and_layer():
    trace = _trace()
    im = cross_attention_panel(trace, ax=Figure().subplots(), layer=0, head=1, title="x")
    np.testing.assert_allclose(im.get_array(), trace.cross_weights[0][1].double().numpy(), rtol=1e-6)


def test_train_reversal_model_is_repeatable_and_restores_state(monkeypatch):
    """The wrapper seeds inside a forked RNG and restores the thread count (training stubbed out)."""
    calls = []

    def fake_train(model, **kwargs):
        calls.append((torch.get_num_threads(), kwargs))
        return attnlib.seq2seq.TrainHistory(steps=1)

    monkeypatch.setattr(attnlib.seq2seq, "train_seq2seq", fake_train)
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    state = torch.get_rng_state()
    m1, h1 = train_reversal_model()
    m2, _ = train_reversal_model()
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.get_num_threads() == threads
    assert calls[0][0] == 1 and calls[0][1]["task"] == "reverse"
    assert h1.steps == 1 and not m1.training
    for a, b in zip(m1.parameters(), m2.parameters()):
        assert torch.equal(a, b)
