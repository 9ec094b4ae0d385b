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
