"""The query explorer: move a 2-D query over fixed keys and values and watch scores, weights and output.

Teaches C19 (scores -> softmax weights -> weighted sum of values), C07 (the output lies in the
convex hull of the values) and C26 (the 2-D example: q = (1, 2) against k1 = (1, 0), k2 = (0, 1)).
The query's x and y sliders are precomputed together, as a grid (step 0.1: 61 x 61 frames).
"""

from __future__ import annotations

import math

import torch

from attnlib.attention import dot_product_attention
from attnlib.examples import DEFAULT_KEYS, DEFAULT_VALUES
from attnlib.plotting import convex_hull
from attnlib.scoring import dot_score, scaled_dot_score
from attnlib.widgets.controls import float_slider, toggle
from attnlib.widgets.explorer import Explorer
from attnlib.widgets.scene import Arrows, Bars, Frame, Panel, Points, Polygon, Scene, Segments

__all__ = ["query_explorer", "query_frame", "DEFAULT_KEYS", "DEFAULT_VALUES"]

STEP = 0.1
#: Widths (pixels) of the lines from the output to each value: as thick as that value's weight.
_MIN_WIDTH, _WIDTH_PER_WEIGHT = 0.5, 6.0


def _as_points(name, x) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float64)
    if t.ndim != 2 or t.shape[1] != 2:
        raise ValueError(f"{name} must be a list of 2-D points with shape (S, 2), got shape {tuple(t.shape)}")
    return t


def query_frame(k: torch.Tensor, v: torch.Tensor, x: float, y: float, scaled: bool) -> Frame:
    """What the explorer shows for query ``(x, y)`` over keys ``k`` ``(S, 2)`` and values ``v`` ``(S, 2)``."""
    q = torch.tensor([[x, y]], dtype=torch.float64)  # (L=1, 2)
    scale = 1.0 / math.sqrt(2.0) if scaled else 1.0
    out, weights = dot_product_attention(q, k, v, scale=scale)  # (1, 2), (1, S)
    scores = (scaled_dot_score if scaled else dot_score)(q, k)[0]  # (S,)
    w, o = weights[0], out[0]
    origin = torch.zeros(1, 2, dtype=torch.float64)
    return Frame(
        arrays={"query": q, "query_arrow": torch.stack([origin, q], 1),  # (1, 2), (1, 2, 2)
                "output": o[None], "mix": torch.stack([o.expand_as(v), v], 1),  # (1, 2), (S, 2, 2)
                "mix_widths": _MIN_WIDTH + _WIDTH_PER_WEIGHT * w, "weights": w},
        readout={"scores": scores, "weights": w, "output (x, y)": o})


def query_explorer(keys=DEFAULT_KEYS, values=DEFAULT_VALUES, *, query=(1.0, 2.0), scaled: bool = True,
                   key_labels=None) -> Explorer:
    """Sliders for a 2-D query over fixed keys and values (C19, C07, C26).

    Args:
        keys: ``(S, 2)`` key points (S = 2..6).
        values: ``(S, 2)`` value points.
        query: the query's starting position ``(x, y)``, each in [-3, 3] (on the 0.1 grid).
        scaled: start with the 1/sqrt(d_k) scale on (d_k = 2).
        key_labels: names for the keys (default ``k1..kS``; values are ``v1..vS``).
    Returns:
        An :class:`~attnlib.widgets.explorer.Explorer` with controls ``x``, ``y``, ``scaled`` and a
        readout of ``scores`` ``(S,)``, ``weights`` ``(S,)`` and ``output (x, y)`` ``(2,)``.
    """
    k = _as_points("keys", keys)  # (S, 2)
    v = _as_points("values", values)  # (S, 2)
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"keys has S={k.shape[0]} points but values has S={v.shape[0]}")
    if not 2 <= k.shape[0] <= 6:
        raise ValueError(f"keys must have between 2 and 6 points, got S={k.shape[0]}")
    S = k.shape[0]
    labels = list(key_labels) if key_labels is not None else [f"k{j + 1}" for j in range(S)]
    if len(labels) != S:
        raise ValueError(f"key_labels has {len(labels)} names for S={S} keys")
    controls = {
        "x": float_slider("query x", -3.0, 3.0, float(query[0]), step=STEP, readout_format=".1f", width="260px"),
        "y": float_slider("query y", -3.0, 3.0, float(query[1]), step=STEP, readout_format=".1f", width="260px"),
        "scaled": toggle("divide scores by √d_k", scaled),
    }
    lim = max(3.2, 1.1 * float(torch.cat([k, v]).abs().max()))
    origin = torch.zeros(S, 2, dtype=torch.float64)
    plane = Panel([
        Polygon(convex_hull(v), color="C2", alpha=0.15),
        Arrows(torch.stack([origin, k], 1), color="C0", width=1.2),
        Points(k, color="C0", marker="s", size=5, labels=labels, label="keys"),
        Points(v, color="C2", marker="^", size=6, labels=[f"v{j + 1}" for j in range(S)], label="values"),
        Segments("mix", color="0.35", widths="mix_widths"),
        Arrows("query_arrow", color="C3", width=1.5),
        Points("query", color="C3", size=6, label="query"),
        Points("output", color="black", marker="*", size=6, label="output"),
    ], xlim=(-lim, lim), ylim=(-lim, lim), equal=True, title="query, keys, values, output", legend="lower right")
    bars = Panel([Bars("weights", color="C0")], xlim=(-0.6, S - 0.4), ylim=(0.0, 1.0), title="softmax weights",
                 xlabel="key", ylabel="weight", xticks=list(range(S)), xticklabels=labels)
    scene = Scene([plane, bars], cols=2, width=720, height=320, col_widths=[1.15, 1.0])
    args = {"keys": [list(map(float, p)) for p in keys], "values": [list(map(float, p)) for p in values],
            "query": list(map(float, query)), "scaled": bool(scaled)}
    if key_labels is not None:
        args["key_labels"] = labels
    return Explorer(controls, lambda x, y, scaled: query_frame(k, v, x, y, scaled), scene, grid=[("x", "y")],
                    name="query", args=args, columns=labels, digits=3)
