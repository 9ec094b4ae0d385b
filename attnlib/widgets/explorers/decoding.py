"""The decoding explorer: step through greedy decoding and watch both attention maps fill in.

Teaches C36 (the decoder's self-attention is causal: position t sees inputs 0..t only), C39 (the
cross-attention map is [target length, source length]: row t is where position t looked in the
source) and C40 (a model trained on reversal looks along the anti-diagonal; the same model before
training does not). Both models are notebook 08's: the trained one from the weights shipped with
attnlib (:func:`attnlib.course.examples.trained_reversal_model`, no training here), the untrained
one its seeded initialisation. Every (model, source) pair is decoded once, at build time
(:func:`attnlib.course.decoding.trace_greedy_decoding`); the position slider only reveals rows.
Positions are 0-based everywhere: output position t reads decoder input t and writes token t.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.course.decoding import DecodingTrace, trace_greedy_decoding
from attnlib.course.examples import trained_reversal_model, untrained_reversal_model
from attnlib.models.seq2seq.toy_tasks import NUM_SPECIAL, token_labels
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Bars, Heatmap, Line, Text
from attnlib.widgets.framework.controls import dropdown, int_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, bar_slots, cells

__all__ = ["decoding_explorer", "visible_rows", "SOURCES"]

#: The sources the explorer offers, as letters (all of the training length 6): the notebook's
#: held-out example, a pair-repeating one, one letter six times (no alignment can be read off the
#: letters) and a run of neighbours.
SOURCES = ("b g a e j d", "a a b b c c", "c c c c c c", "a b c d e f")


def _ids(letters: str) -> list[int]:
    """Token ids of a space-separated string of letters ``a..`` (ids start at NUM_SPECIAL)."""
    return [NUM_SPECIAL + ord(ch) - ord("a") for ch in letters.split()]


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


def _box(t: int, n_cols: int) -> np.ndarray:
    """The outline of row t of a heatmap (cells span ±0.5), as a closed polyline ``(5, 2)``."""
    x0, x1, y0, y1 = -0.5, n_cols - 0.5, t - 0.5, t + 0.5
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]])


def _decode(model, src: torch.Tensor) -> tuple[DecodingTrace, torch.Tensor]:
    """The greedy trace of ``src`` and the next-token probabilities at every position ``(T, V)``."""
    trace = trace_greedy_decoding(model, src)
    with torch.no_grad():
        logits = model(src[None], trace.tgt_in[None]).logits[0]  # (T, V)
    return trace, logits.double().softmax(-1)


@builder(N_("decoding"))
def decoding_explorer(
    source: str = SOURCES[0],
    *,
    trained: bool = True,
    step: int | None = None,
    head: int | None = None,
    sources=SOURCES,
) -> Explorer:
    """Greedy decoding of notebook 08's reversal model, position by position (C36, C39, C40).

    Left: the decoder's causal self-attention; middle: the cross-attention over the source (rows
    not yet decoded, and the future in self-attention, hatched); right: the next-token
    probabilities at position t. Controls: the position slider (fast), the source, the
    trained/untrained model and the head (each recomputes).

    Args:
        source: the starting source, one of ``sources``.
        trained: start with the trained model (the shipped weights) or the untrained one.
        step: starting output position t, 0-based, in ``[0, T)`` (default: the last, ``T - 1``).
        head: starting head (0-based), or None for the average over heads.
        sources: the sources offered, space-separated letters ``a..j``, all of one length.

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``step``, ``source``,
        ``trained``, ``head`` and a readout of what position t read and wrote, its probability,
        the cross-attention row over the source, the source position it looked at most, and the
        self-attention row.
    """
    sources = tuple(sources)
    if not sources or not all(isinstance(s, str) for s in sources):
        raise TypeError(f"sources must be a non-empty sequence of strings, got {sources!r}")
    if source not in sources:
        raise ValueError(f"source must be one of {sources}, got {source!r}")
    if not isinstance(trained, bool):
        raise TypeError(f"trained must be a bool, got {type(trained).__name__}")
    models = {True: trained_reversal_model(), False: untrained_reversal_model()}
    vocab = models[True].vocab_size
    ids = {}
    for s in sources:
        letters = _ids(s)
        if not letters or min(letters) < NUM_SPECIAL or max(letters) >= vocab:
            raise ValueError(
                f"sources must hold letters a..{chr(ord('a') + vocab - NUM_SPECIAL - 1)} "
                f"separated by spaces, got {s!r}"
            )
        ids[s] = torch.tensor(letters)
    lengths = {len(v) for v in ids.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"sources must all have one length (the picture's size), got lengths {sorted(lengths)}"
        )
    traces = {(s, tr): _decode(models[tr], ids[s]) for s in sources for tr in (True, False)}
    num_heads, T, S = traces[(source, trained)][0].cross_weights[-1].shape
    if head is not None and not (isinstance(head, int) and 0 <= head < num_heads):
        raise ValueError(
            f"head must be None (average of heads) or an int in [0, {num_heads}), got {head!r}"
        )
    step = T - 1 if step is None else step
    if not (isinstance(step, int) and 0 <= step < T):
        raise ValueError(f"step must be an int in [0, {T - 1}], got {step!r}")
    data = {}
    for key, (trace, probs) in traces.items():
        data[key] = dict(
            self_w=plotting.to_numpy(trace.self_weights[-1]).astype(np.float64),  # (H, T, T)
            cross_w=plotting.to_numpy(trace.cross_weights[-1]).astype(np.float64),  # (H, T, S)
            probs=plotting.to_numpy(probs),  # (T, V)
            src=token_labels(trace.src),
            reads=token_labels(trace.tgt_in),
            writes=token_labels(trace.tokens),
            tokens=trace.tokens.tolist(),
        )

    def compute(step, source, trained, head):
        t, d = int(step), data[(source, bool(trained))]
        sw = d["self_w"].mean(0) if head is None else d["self_w"][head]  # (T, T)
        cw = d["cross_w"].mean(0) if head is None else d["cross_w"][head]  # (T, S)
        row = cw[t]  # (S,)
        top = int(np.argmax(row))
        written = d["tokens"][t]
        return Frame(
            arrays={
                "self": sw,
                "self_hidden": ~visible_rows(T, T, t + 1, causal=True),
                "cross": cw,
                "cross_hidden": ~visible_rows(T, S, t + 1, causal=False),
                "self_box": _box(t, T),
                "cross_box": _box(t, S),
                "probs": d["probs"][t],
            },
            readout={
                N_("position t"): t,
                N_("reads"): d["reads"][t],
                N_("writes"): d["writes"][t],
                N_("p(written token)"): float(d["probs"][t, written]),
                N_("cross-attention row (source positions 0..S-1)"): row,
                N_("most attended source position"): f"{top} ({d['src'][top]})",
                N_("reversal needs source position"): (
                    str(S - 1 - t) if t < S else _("none (writes </s>)")
                ),
                N_("self-attention row (inputs 0..T-1)"): sw[t],
            },
            texts={
                "src": _("source: {tokens}", tokens=" ".join(d["src"])),
                "wrote": _(
                    "written, positions 0..t: {tokens}", tokens=" ".join(d["writes"][: t + 1])
                ),
            },
        )

    scene = _scene(T, S, vocab)
    head_options: list[tuple[str, int | None]] = [(_("average of heads"), None)]
    head_options += [(_("head {h}", h=h), h) for h in range(num_heads)]
    controls = {
        "step": int_slider(_("output position t"), 0, T - 1, step, width="300px"),
        "source": dropdown(_("source"), list(sources), source, width="220px"),
        "trained": toggle(_("trained model"), trained),
        "head": dropdown(_("head"), head_options, head, width="200px"),
    }
    decoded = {"traces": {key: tr for key, (tr, _probs) in traces.items()}}  # what was decoded
    return Explorer(controls, compute, scene, digits=2, data=decoded)


def _scene(T: int, S: int, vocab: int) -> Scene:
    """Self- and cross-attention at this step and the output probabilities."""
    positions = [str(t) for t in range(T)]
    vocab_labels = token_labels(range(vocab))
    self_panel = Panel(
        [
            Heatmap("self", hidden="self_hidden", cmap="viridis"),
            Line("self_box", color="C3", width=2.0),
        ],
        title=_("self-attention (causal)"),
        xlabel=_("decoder input j"),
        ylabel=_("output position t"),
        **cells(T, T, positions, positions),
    )
    cross_panel = Panel(
        [
            Heatmap("cross", hidden="cross_hidden", cmap="viridis", colorbar=True),
            Line("cross_box", color="C3", width=2.0),
        ],
        title=_("cross-attention [{T} × {S}]", T=T, S=S),
        xlabel=_("source position j"),
        **cells(T, S, positions, [str(j) for j in range(S)]),
    )
    prob_panel = Panel(
        [
            Bars("probs", color="C0"),
            Text(0.02, 0.95, key="src", axes=True, size=8, color="0.2", va="top"),
            Text(0.02, 0.87, key="wrote", axes=True, size=8, color="C3", va="top"),
        ],
        ylim=(0.0, 1.3),  # room above a bar of 1 for the two texts
        yticks=[0.0, 0.25, 0.5, 0.75, 1.0],
        title=_("next-token probabilities at t"),
        xlabel=_("token"),
        **bar_slots(vocab, vocab_labels),
    )
    # Within the notebook's width in a 1280 px browser (about 850 px, issue 16).
    scene = Scene(
        [self_panel, cross_panel, prob_panel],
        cols=3,
        width=840,
        height=320,
        col_widths=[0.95, 1.0, 1.85],  # the token labels of the bars need the room
    )
    return scene
