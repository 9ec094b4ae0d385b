"""The induction explorer: replay notebook 11's training run and watch the induction stripe form.

Teaches C51 (the phase change: a plateau, then a short drop, while the loss on a segment's second
occurrence falls below the first's) and C52 (the circuit: a layer-0 head that looks at the previous
token, a layer-1 head that looks at the token after the earlier occurrence of the current token).
The model is the one shipped with attnlib (:func:`attnlib.course.induction.load_run`): its float16
snapshots, saved during the run, are replayed, not retrained. Every snapshot's attention maps on
one held-out sequence are computed once, at build time; the sliders only pick among them.
Positions are 0-based; a query at position q of the second occurrence should look at
``q - d + 1`` (d = distance between the occurrences), the token after its earlier copy.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib.course.induction import load_run, match_profile, snapshot_model
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Bars, Heatmap, Line, Points
from attnlib.widgets.framework.controls import dropdown, int_slider
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.readout import Key
from attnlib.widgets.framework.scene import Frame, Panel, Scene, bar_slots, cells

__all__ = ["induction_explorer", "replay_data"]


def replay_data(example: int = 1) -> dict:
    """Everything the explorer shows, computed from the shipped run (float64 numpy).

    Args:
        example: which sequence of the run's held-out batch is shown (default 1: a 12-token
            segment; sequence 0's is 4 tokens long).

    Returns:
        At the E snapshots: ``steps (E,)``, ``loss``, ``in_context``, ``copy_acc`` ``(E,)``,
        ``previous``/``induction``/``copying`` ``(E, layers, H)`` (on the whole held-out batch),
        ``weights (E, layers, H, T, T)`` on the shown sequence; at every evaluation:
        ``curve_steps``, ``curve_loss``, ``curve_in_context``; and the sequence's ``ids (T,)``,
        ``first``, ``second``, ``segment`` (this sequence's length); ``found_offset``, the
        offset o at which the last layer's heads (mean) put most weight on ``q - d + o`` at the
        last snapshot (1 for a textbook induction head).
    """
    _model, run = load_run("two_layer")
    batch = run.setup.eval_batch()
    n = batch.ids.shape[0]
    if isinstance(example, bool) or not isinstance(example, int) or not 0 <= example < n:
        raise ValueError(f"example must be an int in [0, {n}), got {example!r}")
    ids = batch.ids[example : example + 1]  # (1, T)
    weights = []
    for i in range(len(run.snapshots)):
        with torch.no_grad():
            att = snapshot_model(run, i)(ids, output_attentions=True).attentions
        weights.append(torch.stack([w[0] for w in att]).double().numpy())  # (layers, H, T, T)
    at = [run.eval_index(int(s)) for s in run.snapshot_steps]  # the snapshots' evaluations
    m = {k: v.double()[at].numpy() for k, v in run.metrics.items()}
    final = snapshot_model(run, len(run.snapshots) - 1)
    with torch.no_grad():
        att = final(batch.ids, output_attentions=True).attentions
    offsets = list(range(0, batch.segment + 1))
    profile = match_profile(att, batch, offsets)[-1].mean(0)  # (offsets,) last layer, mean of heads
    return dict(
        steps=run.snapshot_steps.numpy(),
        **{k: m[k] for k in ("loss", "in_context", "copy_acc", "previous", "induction", "copying")},
        curve_steps=run.eval_steps.double().numpy(),
        curve_loss=run.metrics["loss"].double().numpy(),
        curve_in_context=run.metrics["in_context"].double().numpy(),
        weights=np.stack(weights),
        ids=ids[0].numpy(),
        found_offset=offsets[int(profile.argmax())],
        first=int(batch.first[example]),
        second=int(batch.second[example]),
        segment=int(batch.row_lengths()[example]),
    )


@builder(N_("induction"))
def induction_explorer(
    checkpoint: int | None = None, *, head: int = 2, query: int | None = None, example: int = 1
) -> Explorer:
    """Training replayed: a head's attention map at a saved checkpoint, the query's row, and the
    loss curve with a marker at that checkpoint (C51, C52).

    Args:
        checkpoint: starting snapshot index (default: the last).
        head: starting head, ``layer * H + h`` (default 2: layer 1, head 0).
        query: starting query position (default: the second occurrence's start + 5).
        example: which held-out sequence is shown (:func:`replay_data`).

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``checkpoint``,
        ``query`` (both fast: each precomputed over its range) and ``head`` (a menu), and a
        readout of the step, the losses and the head's scores.
    """
    d = replay_data(example)
    E, layers, H, T, _T = d["weights"].shape
    n_heads = layers * H
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < n_heads:
        raise ValueError(f"head must be an int in [0, {n_heads}) (layer * {H} + h), got {head!r}")
    checkpoint = E - 1 if checkpoint is None else checkpoint
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, int) or not 0 <= checkpoint < E:
        raise ValueError(f"checkpoint must be an int in [0, {E}), got {checkpoint!r}")
    dist, seg = d["second"] - d["first"], d["segment"]
    query = d["second"] + 5 if query is None else query
    if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < T:
        raise ValueError(f"query must be an int in [0, {T}), got {query!r}")
    future = np.triu(np.ones((T, T), dtype=bool), 1)  # (T, T) True = j > i, hidden
    off = d["found_offset"]
    tokens = [str(int(t)) for t in d["ids"]]
    found_key = Key(
        f"this model's target: earlier copy + {off}",
        _("this model's target: earlier copy + {off}", off=off),
    )

    def compute(checkpoint, query, head):
        c, q, lh = int(checkpoint), int(query), int(head)
        layer, h = divmod(lh, H)
        w = d["weights"][c, layer, h]  # (T, T)
        row = w[q]  # (T,)
        top = int(np.argmax(row[: q + 1]))
        inside = d["second"] <= q < d["second"] + seg - 1
        return Frame(
            arrays={
                "w": w,
                "row": row,
                "row_box": _box(q, T),
                # off the panel (x = -10) when the query is not in the second occurrence
                "mark_textbook": [[float(q - dist + 1) if inside else -10.0, 1.04]],
                "mark_found": [[float(q - dist + off) if inside else -10.0, 1.04]],
                "marker": [[float(d["steps"][c]), float(d["loss"][c])]],
                "marker_ic": [[float(d["steps"][c]), float(d["in_context"][c])]],
            },
            readout={
                N_("step"): int(d["steps"][c]),
                N_("loss (held-out)"): float(d["loss"][c]),
                N_("in-context score (2nd − 1st occurrence loss)"): float(d["in_context"][c]),
                N_("copy accuracy (2nd occurrence)"): float(d["copy_acc"][c]),
                N_("head"): _("layer {layer}, head {h}", layer=layer, h=h),
                N_("previous-token score"): float(d["previous"][c, layer, h]),
                N_("induction (prefix-matching) score"): float(d["induction"][c, layer, h]),
                N_("copying score"): float(d["copying"][c, layer, h]),
                N_("query position, token"): f"{q}, {tokens[q]}",
                N_("most attended key, weight"): f"{top} ({float(row[top]):.2f})",
                N_("textbook target: after the earlier copy"): (
                    str(q - dist + 1) if inside else _("none")
                ),
                found_key: str(q - dist + off) if inside else _("none"),
            },
        )

    scene = _scene(d, T, future)
    head_options = [
        (_("layer {layer}, head {h}", layer=lh // H, h=lh % H), lh) for lh in range(n_heads)
    ]
    controls = {
        "checkpoint": int_slider(_("checkpoint"), 0, E - 1, checkpoint, width="300px"),
        "query": int_slider(_("query position"), 0, T - 1, query, width="300px"),
        "head": dropdown(_("head"), head_options, head, width="200px"),
    }
    return Explorer(
        controls,
        compute,
        scene,
        title=_("Induction heads: the training run replayed"),
        digits=2,
        data={"replay": d},
    )


def _box(t: int, n_cols: int) -> np.ndarray:
    """The outline of row t of a heatmap (cells span ±0.5), as a closed polyline ``(5, 2)``."""
    x0, x1, y0, y1 = -0.5, n_cols - 0.5, t - 0.5, t + 0.5
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]])


def _scene(d: dict, T: int, future: np.ndarray) -> Scene:
    """The head's map, the query's row with both targets marked, and the curves with a marker."""
    ticks = [str(t) if t % 8 == 0 else "" for t in range(T)]
    attn = Panel(
        [
            Heatmap("w", hidden=future, cmap="viridis", vmin=0.0, vmax=1.0, colorbar=True),
            Line("row_box", color="C3", width=1.5),
        ],
        title=_("this head's weights at the checkpoint"),
        xlabel=_("key position"),
        ylabel=_("query position"),
        equal=True,
        **cells(T, T, ticks, ticks),
    )
    row = Panel(
        [
            Bars("row", color="C0"),
            Points("mark_textbook", color="C3", marker="^", size=6),
            Points("mark_found", color="black", marker="^", size=6),
        ],
        ylim=(0.0, 1.1),
        yticks=[0.0, 0.5, 1.0],
        title=_("query's row ▲ red: textbook target, black: found"),
        xlabel=_("key position"),
        ylabel=_("weight"),
        **bar_slots(T, ticks),
    )
    steps, loss, ic = d["curve_steps"], d["curve_loss"], d["curve_in_context"]
    lo = float(min(ic.min(), 0.0)) - 0.2
    hi = float(loss.max()) + 0.2
    curve = Panel(
        [
            Line(np.stack([steps, loss], 1), color="C0", width=1.5),
            Line(np.stack([steps, ic], 1), color="C1", width=1.5),
            Line(np.array([[steps[0], 0.0], [steps[-1], 0.0]]), color="0.6", width=1.0, dash=True),
            Points("marker", color="C0", size=6),
            Points("marker_ic", color="C1", size=6),
        ],
        xlim=(float(steps[0]), float(steps[-1])),
        ylim=(lo, hi),
        title=_("loss (blue), in-context score (orange)"),
        xlabel=_("training step"),
        ylabel="nats",
    )
    return Scene(
        [attn, curve, row],
        cols=2,
        width=760,
        height=370,  # with its controls and title the explorer fits 620 px (the browser test)
        col_widths=[1.0, 1.2],
        row_heights=[1.6, 1.0],
    )
