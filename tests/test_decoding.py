"""Greedy-decoding traces (attnlib.course.decoding) against step-by-step decoding; the
anti-diagonal."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
import torch

from attnlib.course.decoding import DecodingTrace, anti_diagonal_mass, trace_greedy_decoding
from attnlib.models.seq2seq.config import Seq2SeqConfig
from attnlib.models.seq2seq.model import Seq2SeqTransformer, greedy_decode
from attnlib.models.seq2seq.toy_tasks import BOS


@pytest.fixture
def model(device):
    # Two decoder layers so the per-layer tuples are exercised; untrained is enough here.
    config = Seq2SeqConfig(d_model=32, num_heads=4, d_ff=64, num_decoder_layers=2)
    return Seq2SeqTransformer(config).to(device).eval()


def test_trace_tokens_equal_greedy_decode(model, device):
    src = torch.tensor([6, 3, 8, 5, 4], device=device)
    trace = trace_greedy_decoding(model, src)
    tokens = greedy_decode(model, src.unsqueeze(0)).tokens
    assert isinstance(trace, DecodingTrace)
    assert torch.equal(trace.tokens, tokens[0])
    assert trace.num_steps == 6
    assert int(trace.tgt_in[0]) == BOS
    assert torch.equal(trace.tgt_in[1:], trace.tokens[:-1])
    assert torch.equal(trace.src, src)


def test_c36_trace_rows_equal_step_by_step_decoding(model, device):
    """Row t of the one-pass trace is exactly what step t saw when decoding incrementally."""
    # In float64: the one pass and the steps do the same arithmetic on other shapes, so they
    # differ by rounding alone, which in float32 (~1e-7 here) depends on the CPU's kernels.
    # Bound: unit roundoff 1.1e-16 x inner sizes <= 64 x magnitudes <= ~10 over 2 encoder and 2
    # decoder layers: < 1e-12. Attending to one key too many or too few moves a weight by ~1e-1.
    model = model.double()
    src = torch.tensor([[7, 9, 3, 12, 5, 6]], device=device)
    trace = trace_greedy_decoding(model, src)
    memory = model.encode(src).memory
    tgt = torch.full((1, 1), BOS, dtype=torch.long, device=device)
    with torch.no_grad():
        for t in range(trace.num_steps):
            step = model.decode(tgt, memory)  # only steps 0..t exist
            logits, self_ws, cross_ws = step.logits, step.self_weights, step.cross_weights
            assert int(logits[0, -1].argmax()) == int(trace.tokens[t])
            for layer in range(2):
                assert self_ws[layer].dtype == torch.float64
                torch.testing.assert_close(
                    trace.self_weights[layer][:, t, : t + 1],
                    self_ws[layer][0, :, t],
                    atol=1e-12,
                    rtol=0,
                )
                torch.testing.assert_close(
                    trace.cross_weights[layer][:, t], cross_ws[layer][0, :, t], atol=1e-12, rtol=0
                )
            tgt = torch.cat([tgt, logits[:, -1].argmax(-1, keepdim=True)], dim=1)


def test_trace_is_frozen_and_holds_tuples(model, device):
    trace = trace_greedy_decoding(model, torch.tensor([3, 4, 5], device=device))
    assert not isinstance(trace, tuple)
    with pytest.raises(FrozenInstanceError):
        trace.tokens = trace.tokens[:1]
    for per_layer in (trace.self_weights, trace.cross_weights):
        assert isinstance(per_layer, tuple) and len(per_layer) == 2  # two decoder layers


def test_c39_trace_shapes_are_target_by_source(model, device):
    src = torch.tensor([3, 4, 5, 6, 7, 8, 9], device=device)  # S = 7
    trace = trace_greedy_decoding(model, src, max_len=4)  # T = 4
    assert [tuple(w.shape) for w in trace.cross_weights] == [(4, 4, 7)] * 2  # (H, T, S)
    assert [tuple(w.shape) for w in trace.self_weights] == [(4, 4, 4)] * 2  # (H, T, T)
    for w in trace.self_weights:  # causal: nothing above the diagonal, rows sum to 1
        assert float(w.triu(diagonal=1).abs().max()) == 0.0
        torch.testing.assert_close(w.sum(-1), torch.ones(4, 4, device=device))


def test_trace_restores_training_mode(model, device):
    model.train()
    trace_greedy_decoding(model, torch.tensor([3, 4], device=device))
    assert model.training


@pytest.mark.parametrize(
    "src, err, match",
    [
        (torch.tensor([3, 0, 4]), ValueError, "no PAD"),
        (torch.tensor([[3, 4], [5, 6]]), ValueError, "one sequence"),
        (torch.tensor([3.0, 4.0]), TypeError, "src"),
        (torch.tensor([], dtype=torch.long), ValueError, "non-empty"),
    ],
)
def test_trace_bad_input(src, err, match):
    m = Seq2SeqTransformer(Seq2SeqConfig(d_model=16, num_heads=2, d_ff=16))
    with pytest.raises(err, match=match):
        trace_greedy_decoding(m, src)


def test_trace_bad_model():
    with pytest.raises(TypeError, match="Seq2SeqTransformer"):
        trace_greedy_decoding(torch.nn.Linear(2, 2), torch.tensor([3]))


def test_anti_diagonal_mass_closed_form():
    n = 4
    perfect = torch.zeros(2, 3, n + 1, n)
    for t in range(n):
        perfect[:, :, t, n - 1 - t] = 1.0
    assert anti_diagonal_mass(perfect) == pytest.approx(1.0)
    uniform = torch.full((2, n + 1, n), 1 / n)
    assert anti_diagonal_mass(uniform) == pytest.approx(1 / n)
    # With lengths, the anti-diagonal of each sequence's own length counts.
    w = torch.zeros(1, 4, 4)
    w[0, 0, 1], w[0, 1, 0] = 1.0, 1.0
    assert anti_diagonal_mass(w, torch.tensor([2])) == pytest.approx(1.0)


def test_anti_diagonal_mass_bad_input():
    with pytest.raises(ValueError, match="src_valid_lens must be in"):
        anti_diagonal_mass(torch.rand(1, 3, 3), torch.tensor([0]))
    with pytest.raises(ValueError, match="src_valid_lens has 2 rows"):
        anti_diagonal_mass(torch.rand(1, 3, 3), torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="weights must be"):
        anti_diagonal_mass(torch.rand(1, 1, 1, 3, 3))
