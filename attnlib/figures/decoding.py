"""Key picture of notebook 08: a tiny encoder–decoder trained on reversal looks along the
anti-diagonal (C39, C40)."""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.course.decoding import DecodingTrace, trace_greedy_decoding
from attnlib.course.examples import DEFAULT_SOURCE, trained_reversal_model, untrained_reversal_model
from attnlib.figures import register_figure
from attnlib.models.seq2seq.toy_tasks import EOS, token_labels
from attnlib.util.i18n import _

__all__ = ["cross_attention_panel", "decoding_cross_attention_figure"]


def cross_attention_panel(
    trace: DecodingTrace,
    ax=None,
    *,
    layer: int = -1,
    head: int | None = None,
    title: str | None = None,
):
    """Draw one decoding's cross-attention map, ``[T steps, S source positions]``, token-labelled.

    Args:
        trace: from :func:`attnlib.course.decoding.trace_greedy_decoding`.
        ax: axes to draw into (None: a new pyplot figure).
        layer: decoder layer (default the last).
        head: one head, or None for the average over heads.
        title: axes title (default says which layer/head and the shape).

    Returns:
        The ``AxesImage``. Rows after the first ``</s>`` (not decoded: greedy decoding stops
        there, and the trace holds padding) are masked, drawn grey and labelled so.
    """
    weights = trace.cross_weights[layer]  # (H, T, S)
    w = weights.mean(0) if head is None else weights[head]  # (T, S)
    steps, src_len = w.shape
    written = trace.tokens.tolist()
    done = written.index(EOS) + 1 if EOS in written else steps  # rows 0..done-1 were decoded
    # Past </s> greedy decoding stops; those rows were computed on padding it never fed, so
    # they are drawn hidden (grey) and labelled as not decoded.
    rows = [
        f"{t}: →{o}" if t < done else _("{t}: (after </s>)", t=t)
        for t, o in enumerate(token_labels(trace.tokens))
    ]  # 0-based, as the notebook
    decoded = torch.arange(steps, device=w.device)[:, None] < done  # (T, 1)
    if title is None:
        if head is None:
            title = _("cross-attention [{T} × {S}], average of heads", T=steps, S=src_len)
        else:
            title = _("cross-attention [{T} × {S}], head {head}", T=steps, S=src_len, head=head)
    return plotting.heatmap(
        w,
        ax=ax,
        row_labels=rows,
        col_labels=token_labels(trace.src),
        vmin=0.0,
        vmax=1.0,
        mask=decoded.expand(steps, src_len),
        title=title,
        xlabel=_("source token j"),
        ylabel=_("position t: writes"),
        colorbar_label=_("weight"),
    )


# Not pixel-tested: the trained weights are committed (attnlib/data/reversal.pt), but the float32
# forward pass still rounds differently on other CPU kernels. What it shows (the shapes, and an
# anti-diagonal after training that the untrained model lacks) is checked in
# tests/test_figures_decoding.py.
@register_figure("decoding_cross_attention", formats=("png",), pixel_test=False)
def decoding_cross_attention_figure():
    """Untrained vs trained: the cross-attention of greedy decoding on one held-out sequence."""
    from matplotlib.figure import Figure

    src = torch.tensor(DEFAULT_SOURCE)  # a held-out sequence
    fig = Figure(figsize=(8.4, 3.6), layout="constrained")
    ax_before, ax_after = fig.subplots(1, 2)
    cross_attention_panel(
        trace_greedy_decoding(untrained_reversal_model(), src),
        ax=ax_before,
        title=_("before training"),
    )
    cross_attention_panel(
        trace_greedy_decoding(trained_reversal_model(), src),
        ax=ax_after,
        title=_("after training: anti-diagonal"),
    )
    fig.suptitle(_("Reversal: output position t reads source position n−1−t"), fontsize=10)
    return fig
