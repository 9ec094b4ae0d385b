"""The decoding explorer: step through greedy decoding and watch both attention maps fill in.

Teaches C36 (the decoder's self-attention is causal: step t sees inputs 0..t only), C39 (the
cross-attention map is [target length, source length]: row t is where step t looked in the source)
and C40 (a model trained on reversal looks along the anti-diagonal). Everything is decoded once, at
build time (:func:`attnlib.decoding.trace_greedy_decoding`); the slider only reveals rows.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.decoding import DecodingTrace, trace_greedy_decoding
from attnlib.examples import DEFAULT_SOURCE, untrained_reversal_model
from attnlib.seq2seq import Seq2SeqTransformer
from attnlib.toy_tasks import NUM_SPECIAL, token_labels
from attnlib.widgets.base import Explorer, dropdown, int_slider, new_figure, register

__all__ = ["decoding_explorer", "visible_rows"]


def visible_rows(num_rows: int, num_cols: int, step: int, *, causal: bool) -> np.ndarray:
    """Which cells of a ``(T, num_cols)`` attention map are shown after ``step`` decoding steps.

    Args:
        num_rows: T, the number of decoding steps.
        num_cols: columns of the map (T for self-attention, S for cross-attention).
        step: how many steps have run, in ``[0, T]``; rows ``t >= step`` are not computed yet.
        causal: also hide columns ``j > t`` (the decoder's self-attention).

    Returns:
        Boolean ``(T, num_cols)``, True = shown.
    """
    if not 0 <= step <= num_rows:
        raise ValueError(f"step must be in [0, {num_rows}], got {step}")
    rows = np.arange(num_rows)[:, None] < step  # (T, 1)
    shown = np.broadcast_to(rows, (num_rows, num_cols)).copy()
    if causal:
        shown &= np.arange(num_cols)[None, :] <= np.arange(num_rows)[:, None]
    return shown


def _written(out_lab: list[str], t: int) -> str:
    return "wrote: " + " ".join(out_lab[:t])


def _mesh(ax, weights, shown, row_labels, col_labels, *, title, xlabel):
    """A heatmap as a ``QuadMesh`` (row 0 on top): redrawing a few cells is much cheaper than
    resampling an image, which keeps a slider move fast. Hidden cells are drawn grey."""
    import matplotlib

    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
    mesh = ax.pcolormesh(plotting.masked(weights, shown), cmap=cmap, vmin=0.0, vmax=1.0)
    rows, cols = shown.shape
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks(np.arange(cols) + 0.5, labels=col_labels)
    ax.set_yticks(np.arange(rows) + 0.5, labels=row_labels)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("step t")
    return mesh


def _head_options(num_heads: int):
    return [("average of heads", -1)] + [(f"head {h + 1}", h) for h in range(num_heads)]


@register("decoding")
def decoding_explorer(model: Seq2SeqTransformer | None = None, src=DEFAULT_SOURCE, *,
                      step: int | None = None, head: int = -1, layer: int = -1) -> Explorer:
    """A slider over greedy-decoding steps: causal self-attention and cross-attention, row by row.

    Args:
        model: a trained :class:`~attnlib.seq2seq.Seq2SeqTransformer` (None:
            :func:`attnlib.examples.untrained_reversal_model`, so its maps show no alignment yet).
        src: the source sequence, token ids ``>= NUM_SPECIAL`` (a tensor or a sequence of ints).
        step: starting step in ``[1, T]`` (default: T, everything decoded).
        head: starting head, ``-1`` for the average over heads.
        layer: which decoder layer's maps to show (default the last).

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``step`` and ``head`` and a
        readout of what step t read and wrote, its cross-attention row over the source and the
        source position it looked at most.
    """
    if model is None:
        model = untrained_reversal_model()
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer or None, got {type(model).__name__}")
    device = next(model.parameters()).device
    src = torch.as_tensor(src, dtype=torch.long).reshape(-1).to(device)  # (S,)
    if src.numel() < 1 or int(src.min()) < NUM_SPECIAL or int(src.max()) >= model.vocab_size:
        raise ValueError(f"src must hold symbol ids in [{NUM_SPECIAL}, {model.vocab_size}), got {src.tolist()}")
    trace: DecodingTrace = trace_greedy_decoding(model, src)
    num_layers = len(trace.cross_weights)
    if not -num_layers <= layer < num_layers:
        raise ValueError(f"layer must be in [{-num_layers}, {num_layers}), got {layer}")
    self_w = plotting.to_numpy(trace.self_weights[layer])  # (H, T, T)
    cross_w = plotting.to_numpy(trace.cross_weights[layer])  # (H, T, S)
    num_heads, T, S = cross_w.shape
    if not -1 <= head < num_heads:
        raise ValueError(f"head must be -1 (average) or in [0, {num_heads}), got {head}")
    step = T if step is None else int(step)
    if not 1 <= step <= T:
        raise ValueError(f"step must be in [1, {T}], got {step}")
    self_mean, cross_mean = self_w.mean(0), cross_w.mean(0)  # (T, T), (T, S)
    src_lab = token_labels(trace.src)
    in_lab = token_labels(trace.tgt_in)
    out_lab = token_labels(trace.tokens)

    controls = {
        "step": int_slider("decoding step t", 1, T, step, width="320px"),
        "head": dropdown("head", _head_options(num_heads), head, width="220px"),
    }
    fig, (ax_self, ax_cross) = new_figure(1, 2, figsize=(8.0, 3.5), width_ratios=[T, S + 1.5])
    src_text = " ".join(src_lab)
    # Tick labels are static, so they name positions only: the tokens appear in the caption
    # as they are written, never ahead of the step that writes them.
    rows = [str(t + 1) for t in range(T)]
    im_self = _mesh(ax_self, self_mean, visible_rows(T, T, step, causal=True), rows, [str(j) for j in range(T)],
                    title="decoder self-attention (causal)", xlabel="decoder input j")
    im_cross = _mesh(ax_cross, cross_mean, visible_rows(T, S, step, causal=False), rows, src_lab,
                     title=f"cross-attention [{T} steps × {S} source]", xlabel="source token j")
    fig.colorbar(im_cross, ax=ax_cross, label="weight")
    from matplotlib.patches import Rectangle

    box_self = ax_self.add_patch(Rectangle((0, step - 1), T, 1, fill=False, ec="red", lw=1.5))
    box_cross = ax_cross.add_patch(Rectangle((0, step - 1), S, 1, fill=False, ec="red", lw=1.5))
    # The source line is static (drawn once); only the short "wrote:" line changes per step.
    fig.suptitle(f"source: {src_text}", x=0.02, ha="left", fontsize=9, family="monospace")
    caption = fig.text(0.35, 0.985, _written(out_lab, T), ha="left", va="top", fontsize=9, color="C3")

    def update(step, head):
        t = int(step)
        sw = self_mean if head == -1 else self_w[head]  # (T, T)
        cw = cross_mean if head == -1 else cross_w[head]  # (T, S)
        im_self.set_array(plotting.masked(sw, visible_rows(T, T, t, causal=True)))
        im_cross.set_array(plotting.masked(cw, visible_rows(T, S, t, causal=False)))
        box_self.set_y(t - 1)
        box_cross.set_y(t - 1)
        caption.set_text(_written(out_lab, t))
        row = cw[t - 1]  # (S,)
        top = int(np.argmax(row))
        return {
            "step t": t,
            "reads": in_lab[t - 1],
            "writes": out_lab[t - 1],
            "cross-attention row (source positions 0..S-1)": row,
            "most attended source position": f"{top} ({src_lab[top]})",
            "self-attention row (inputs 0..t-1)": sw[t - 1, :t],
        }

    ex = Explorer(controls, update, fig, dynamic=[im_self, im_cross, box_self, box_cross, caption],
                  digits=2)
    ex.trace = trace  # what was decoded, for tests and for readers who want the numbers
    ex.images = {"self": im_self, "cross": im_cross}
    return ex
