"""The query explorer: move a 2-D query over fixed keys and values and watch scores, weights and output.

Teaches C19 (scores -> softmax weights -> weighted sum of values), C07 (the output lies in the
convex hull of the values) and C26 (the 2-D example: q = (1, 2) against k1 = (1, 0), k2 = (0, 1)).
"""

from __future__ import annotations

import math

import torch

from attnlib import plotting
from attnlib.attention import dot_product_attention
from attnlib.widgets.base import Explorer, float_slider, new_figure, register, toggle

__all__ = ["query_explorer", "DEFAULT_KEYS", "DEFAULT_VALUES"]

#: The teaching example: k1, k2 as in C26, plus a third key pointing the other way.
DEFAULT_KEYS = ((1.0, 0.0), (0.0, 1.0), (-1.0, -1.0))
#: One 2-D value per key; their triangle is the hull the output must stay in.
DEFAULT_VALUES = ((2.0, 0.0), (0.0, 2.5), (-2.0, -1.0))


def _as_points(name, x) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float64)
    if t.ndim != 2 or t.shape[1] != 2:
        raise ValueError(f"{name} must be a list of 2-D points with shape (S, 2), got shape {tuple(t.shape)}")
    return t


@register("query")
def query_explorer(keys=DEFAULT_KEYS, values=DEFAULT_VALUES, *, query=(1.0, 2.0), scaled: bool = True,
                   key_labels=None) -> Explorer:
    """Sliders for a 2-D query over fixed keys and values (C19, C07, C26).

    Args:
        keys: ``(S, 2)`` key points (S = 2..6).
        values: ``(S, 2)`` value points.
        query: the query's starting position ``(x, y)``, each in [-3, 3].
        scaled: start with the 1/sqrt(d_k) scale on (d_k = 2).
        key_labels: names for the keys (default ``k1..kS``; values are ``v1..vS``).
    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``x``, ``y``, ``scaled`` and a
        readout of ``scores`` ``(S,)``, ``weights`` ``(S,)`` and ``output`` ``(2,)``.
    """
    k = _as_points("keys", keys)  # (S, 2)
    v = _as_points("values", values)  # (S, 2)
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"keys has S={k.shape[0]} points but values has S={v.shape[0]}")
    if not 2 <= k.shape[0] <= 6:
        raise ValueError(f"keys must have between 2 and 6 points, got S={k.shape[0]}")
    S = k.shape[0]
    labels = list(key_labels) if key_labels is not None else [f"k{j + 1}" for j in range(S)]
    controls = {
        "x": float_slider("query x", -3.0, 3.0, float(query[0]), step=0.05, width="260px"),
        "y": float_slider("query y", -3.0, 3.0, float(query[1]), step=0.05, width="260px"),
        "scaled": toggle("divide scores by √d_k", scaled),
    }

    def compute(x, y, scaled):
        q = torch.tensor([[x, y]], dtype=torch.float64)  # (L=1, 2)
        scale = 1.0 / math.sqrt(2.0) if scaled else 1.0
        out, weights = dot_product_attention(q, k, v, scale=scale)  # (1, 2), (1, S)
        scores = (q @ k.T) * scale  # (1, S)
        return q[0], scores[0], weights[0], out[0]

    q0, s0, w0, o0 = compute(controls["x"].value, controls["y"].value, controls["scaled"].value)
    lim = max(3.2, 1.1 * float(torch.cat([k, v]).abs().max()))
    fig, (ax_plane, ax_bars) = new_figure(1, 2, figsize=(8.0, 3.4), width_ratios=[1.1, 1.0])
    art = plotting.qkv_points(q0, k, v, o0, ax=ax_plane, weights=w0, key_labels=labels, lim=lim,
                              title="query, keys, values, output")
    bars = plotting.weight_bars(w0, ax=ax_bars, labels=labels, ylim=(0.0, 1.0),
                                title="softmax weights", xlabel="key")

    def update(x, y, scaled):
        q, scores, weights, out = compute(x, y, scaled)
        art.update(query=q, output=out, weights=weights)
        plotting.set_bar_heights(bars, weights)
        return {"scores": scores, "weights": weights, "output (x, y)": out}

    dynamic = [art.mix_lines, *art.query_arrows, art.query, art.output, *bars.patches]
    return Explorer(controls, update, fig, dynamic=dynamic, columns=labels, digits=3)
