"""attnlib.figures.decoding: the cross-attention panel, and what the notebook-08 figure shows.

The figure is drawn from the committed trained weights, but float32 rounding on other CPU kernels
can still move its pixels, so it is not pixel-tested (tests/test_figures.py); this module checks
its content instead: the shapes, and an anti-diagonal after training that the untrained model
does not have (C40).
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnlib.course.decoding import anti_diagonal_mass, trace_greedy_decoding
from attnlib.course.examples import DEFAULT_SOURCE, Seq2SeqConfig
from attnlib.figures import FIGURES
from attnlib.figures.decoding import cross_attention_panel
from attnlib.models.seq2seq.model import Seq2SeqTransformer
from attnlib.models.seq2seq.toy_tasks import token_labels


def _trace():
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(d_model=16, num_heads=2, d_ff=16, num_decoder_layers=2)
    model = Seq2SeqTransformer(cfg).eval()
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
    np.testing.assert_allclose(
        im.get_array(), trace.cross_weights[0][1].double().numpy(), rtol=1e-6
    )


def test_c40_figure_is_untrained_then_anti_diagonal():
    fig = FIGURES["decoding_cross_attention"]()
    panels = [ax for ax in fig.axes if ax.images]  # the colorbars' axes hold no image
    assert len(panels) == 2
    before, after = (np.asarray(ax.images[0].get_array(), dtype=np.float64) for ax in panels)
    n = len(DEFAULT_SOURCE)
    assert before.shape == after.shape == (n + 1, n)  # [T steps, S source]: C39
    np.testing.assert_allclose(after.sum(1), 1.0, rtol=1e-5)  # each row is a distribution

    def mass(w):
        return anti_diagonal_mass(torch.from_numpy(w)[None])  # rows t < n, weight on n-1-t

    assert mass(after) > 0.5 and mass(after) > 2 * mass(before)
    titles = [ax.get_title() for ax in panels]
    assert titles == ["before training", "after training: anti-diagonal"]  # no step count
    # The trained model writes the source backwards, then EOS (row labels "t: →letter").
    written = [label.get_text().split("→")[1] for label in panels[1].get_yticklabels()]
    assert written == token_labels(list(DEFAULT_SOURCE[::-1])) + ["</s>"]


def test_rows_after_eos_are_hidden_and_labelled():
    # A trace that wrote one letter, then </s>, then padding: greedy decoding stopped at </s>, so
    # the last row was never decoded (the trace computed it on padding) and must not be shown.
    from attnlib.course.decoding import DecodingTrace
    from attnlib.models.seq2seq.toy_tasks import BOS, EOS, PAD

    cross = torch.tensor([[[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]])  # (H=1, T=3, S=2)
    trace = DecodingTrace(
        src=torch.tensor([4, 5]),
        tgt_in=torch.tensor([BOS, 5, EOS]),
        tokens=torch.tensor([5, EOS, PAD]),
        self_weights=(torch.ones(1, 3, 3) / 3,),
        cross_weights=(cross,),
    )
    ax = Figure().subplots()
    data = cross_attention_panel(trace, ax=ax).get_array()
    assert np.ma.getmaskarray(data).tolist() == [[False, False], [False, False], [True, True]]
    np.testing.assert_array_equal(np.ma.getdata(data)[:2], cross[0, :2].numpy())
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[1] == "1: →</s>" and labels[2] == "2: (after </s>)"
