"""Key picture of notebook 08: a tiny encoder–decoder trained on reversal looks along the anti-diagonal (C39, C40)."""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.decoding import DecodingTrace, token_labels, trace_greedy_decoding
from attnlib.figures import register_figure

__all__ = ["cross_attention_panel", "train_reversal_model", "decoding_cross_attention_figure"]



def cross_attention_panel(trace: DecodingTrace, ax=None, *, layer: int = -1, head: int | None = None,
                          title: str | None = None):
    """Draw one decoding's cross-attention map, ``[T steps, S source positions]``, with token labels.

    Args:
        trace: from :func:`attnlib.decoding.trace_greedy_decoding`.
        ax: axes to draw into (None: a new pyplot figure).
        layer: decoder layer (default the last).
        head: one head, or None for the average over heads.
        title: axes title (default says which layer/head and the shape).

    Returns:
        The ``AxesImage``.
    """
    weights = trace.cross_weights[layer]  # (H, T, S)
    w = weights.mean(0) if head is None else weights[head]  # (T, S)
    steps, src_len = w.shape
    rows = [f"{t + 1}: →{o}" for t, o in enumerate(token_labels(trace.tokens))]
    if title is None:
        who = "average of heads" if head is None else f"head {head + 1}"
        title = f"cross-attention [{steps} × {src_len}], {who}"
    return plotting.heatmap(w, ax=ax, row_labels=rows, col_labels=token_labels(trace.src), vmin=0.0,
                            vmax=1.0, title=title, xlabel="source token j",
                            ylabel="step t: writes", colorbar_label="weight")


def train_reversal_model(seed: int = 0):
    """Train notebook 08's model on reversal, repeatably, without touching the caller's state.

    The random state is forked (``torch.random.fork_rng``) and seeded with ``seed``, and torch
    runs single-threaded while training (then the thread count is restored), so the result is the
    same on every run of one machine. Takes about 10-20 s on a laptop CPU.

    Returns:
        ``(model, history)``: the trained :class:`~attnlib.seq2seq.Seq2SeqTransformer` on the CPU
        (eval mode) and its :class:`~attnlib.seq2seq.TrainHistory`.
    """
    from attnlib.seq2seq import Seq2SeqTransformer, train_seq2seq

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = Seq2SeqTransformer(13, d_model=64, num_heads=4, d_ff=128)
            history = train_seq2seq(model, task="reverse", seq_len=6, steps=1500, batch_size=128,
                                    lr=3e-3, target_accuracy=0.99, progress=False)
    finally:
        torch.set_num_threads(threads)
    return model.eval(), history


@register_figure("decoding_cross_attention", formats=("png",))
def decoding_cross_attention_figure():
    """Untrained vs trained: the cross-attention of greedy decoding on one held-out sequence."""
    from matplotlib.figure import Figure

    from attnlib.widgets.decoding import DEFAULT_SOURCE, default_model

    src = torch.tensor(DEFAULT_SOURCE)  # a held-out sequence
    trained, history = train_reversal_model()
    fig = Figure(figsize=(8.4, 3.6), layout="constrained")
    ax_before, ax_after = fig.subplots(1, 2)
    cross_attention_panel(trace_greedy_decoding(default_model(), src), ax=ax_before,
                          title="before training")
    cross_attention_panel(trace_greedy_decoding(trained, src), ax=ax_after,
                          title=f"after training ({history.steps} steps): anti-diagonal")
    fig.suptitle("Reversal: output step t reads source position n−1−t (C40)", fontsize=10)
    return fig
