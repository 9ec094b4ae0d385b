"""The decoding explorer: what it shows against the trace and the causal mask."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlib.decoding import trace_greedy_decoding
from attnlib.examples import DEFAULT_SOURCE, Seq2SeqConfig, untrained_reversal_model
from attnlib.masks import causal_mask
from attnlib.seq2seq import Seq2SeqTransformer
from attnlib.toy_tasks import token_labels
from attnlib.widgets import BUILDERS
from attnlib.widgets.decoding import decoding_explorer, visible_rows

pytestmark = pytest.mark.usefixtures("agg_figures")


def test_registered_and_builds_without_arguments():
    assert BUILDERS["decoding"] is decoding_explorer
    ex = decoding_explorer()
    T = len(DEFAULT_SOURCE) + 1
    assert ex.values() == {"step": T, "head": -1}
    assert ex.state()["step t"] == T
    assert ex.render().shape[2] == 4


def test_without_a_model_it_shows_the_untrained_notebook_model():
    ex = decoding_explorer()
    expected = trace_greedy_decoding(untrained_reversal_model(), torch.tensor(DEFAULT_SOURCE))
    assert torch.equal(ex.trace.tokens, expected.tokens)
    torch.testing.assert_close(ex.trace.cross_weights[-1], expected.cross_weights[-1])


def test_c39_readout_rows_are_the_trace_rows():
    ex = decoding_explorer()
    trace = ex.trace
    cross = trace.cross_weights[-1]  # (H, T, S)
    selfw = trace.self_weights[-1]  # (H, T, T)
    out = token_labels(trace.tokens)
    inp = token_labels(trace.tgt_in)
    for step, head in [(1, -1), (3, 0), (7, 3), (4, -1)]:
        state = ex.set(step=step, head=head)
        c = cross.mean(0) if head == -1 else cross[head]
        s = selfw.mean(0) if head == -1 else selfw[head]
        np.testing.assert_allclose(state["cross-attention row (source positions 0..S-1)"],
                                   c[step - 1].double().numpy(), rtol=1e-6)
        np.testing.assert_allclose(state["self-attention row (inputs 0..t-1)"],
                                   s[step - 1, :step].double().numpy(), rtol=1e-6)
        assert state["writes"] == out[step - 1] and state["reads"] == inp[step - 1]
        top = int(c[step - 1].argmax())
        assert state["most attended source position"].startswith(f"{top} ")
        assert sum(state["cross-attention row (source positions 0..S-1)"]) == pytest.approx(1.0)


def test_c36_images_show_only_decoded_rows_and_the_causal_triangle():
    ex = decoding_explorer()
    T, S = ex.trace.num_steps, ex.trace.src.shape[0]
    ex.set(step=3, head=-1)
    shown_self = ~np.ma.getmaskarray(ex.images["self"].get_array()).reshape(T, T)
    shown_cross = ~np.ma.getmaskarray(ex.images["cross"].get_array()).reshape(T, S)
    expected_self = causal_mask(T).numpy() & (np.arange(T)[:, None] < 3)
    assert (shown_self == expected_self).all()
    assert shown_cross[:3].all() and not shown_cross[3:].any()
    assert shown_cross.shape == (T, S)


def test_visible_rows_against_masks():
    v = visible_rows(5, 5, 5, causal=True)
    assert (v == causal_mask(5).numpy()).all()
    assert not visible_rows(4, 3, 0, causal=False).any()
    assert visible_rows(4, 3, 4, causal=False).all()
    with pytest.raises(ValueError, match="step"):
        visible_rows(4, 3, 5, causal=False)


def test_takes_a_model_and_source():
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(vocab_size=9, d_model=16, num_heads=2, d_ff=16, num_decoder_layers=2)
    m = Seq2SeqTransformer(cfg).eval()
    ex = decoding_explorer(m, [3, 4, 5], step=2, head=1, layer=0)
    assert ex.values() == {"step": 2, "head": 1}
    np.testing.assert_allclose(ex.state()["cross-attention row (source positions 0..S-1)"],
                               ex.trace.cross_weights[0][1, 1].double().numpy(), rtol=1e-6)


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(src=[3, 1, 4]), ValueError, "symbol ids"),
    (dict(src=[3, 40]), ValueError, "symbol ids"),
    (dict(step=0), ValueError, "step"),
    (dict(step=99), ValueError, "step"),
    (dict(head=4), ValueError, "head"),
    (dict(layer=1), ValueError, "layer"),
    (dict(model=torch.nn.Linear(2, 2)), TypeError, "Seq2SeqTransformer"),
])
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        decoding_explorer(**kwargs)
