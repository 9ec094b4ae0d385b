"""The two-key explorer: two scores, two 2-D values, and the output sliding along their segment.

Teaches C09 (scores [log 3, 0] give weights [3/4, 1/4]; with values [2, 0] and [0, 4] the output
is [1.5, 1]; the scores choose the mix, the values choose what is mixed) and C07 (the output is a
convex combination: with two values it lies on the segment between them).
"""

from __future__ import annotations

import math

import torch

from attnlib import plotting
from attnlib.softmax import masked_softmax
from attnlib.widgets.base import Explorer, float_slider, new_figure, register

__all__ = ["two_key_explorer"]

_SCORE_LIM = 5.0
_VALUE_LIM = 5.0


@register("two_key")
def two_key_explorer(scores=(math.log(3.0), 0.0), values=((2.0, 0.0), (0.0, 4.0))) -> Explorer:
    """Sliders for two scores and two 2-D values: the weights and the output point (C09, C07).

    Args:
        scores: ``(s1, s2)``, each in [-5, 5]; the default is the worked example ``[log 3, 0]``.
        values: ``((v1x, v1y), (v2x, v2y))``, each coordinate in [-5, 5]; default ``[2, 0], [0, 4]``.
    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``s1, s2, v1x, v1y, v2x, v2y`` and
        a readout of the scores, the weights ``(2,)`` and the output ``(2,)``.
    """
    s = torch.as_tensor(scores, dtype=torch.float64)
    v = torch.as_tensor(values, dtype=torch.float64)
    if s.shape != (2,):
        raise ValueError(f"scores must be two numbers (s1, s2), got shape {tuple(s.shape)}")
    if v.shape != (2, 2):
        raise ValueError(f"values must be two 2-D points ((v1x, v1y), (v2x, v2y)), got shape {tuple(v.shape)}")
    if s.abs().max() > _SCORE_LIM or v.abs().max() > _VALUE_LIM:
        raise ValueError(f"scores must lie in [-{_SCORE_LIM}, {_SCORE_LIM}] and value coordinates in "
                         f"[-{_VALUE_LIM}, {_VALUE_LIM}], got scores {s.tolist()} and values {v.tolist()}")
    controls = {
        "s1": float_slider("score s1", -_SCORE_LIM, _SCORE_LIM, float(s[0]), step=0.01, width="260px"),
        "s2": float_slider("score s2", -_SCORE_LIM, _SCORE_LIM, float(s[1]), step=0.01, width="260px"),
        "v1x": float_slider("v1 x", -_VALUE_LIM, _VALUE_LIM, float(v[0, 0]), step=0.1, readout_format=".1f",
                            width="220px"),
        "v1y": float_slider("v1 y", -_VALUE_LIM, _VALUE_LIM, float(v[0, 1]), step=0.1, readout_format=".1f",
                            width="220px"),
        "v2x": float_slider("v2 x", -_VALUE_LIM, _VALUE_LIM, float(v[1, 0]), step=0.1, readout_format=".1f",
                            width="220px"),
        "v2y": float_slider("v2 y", -_VALUE_LIM, _VALUE_LIM, float(v[1, 1]), step=0.1, readout_format=".1f",
                            width="220px"),
    }

    def compute(s1, s2, v1x, v1y, v2x, v2y):
        z = torch.tensor([s1, s2], dtype=torch.float64)  # (S=2,)
        vals = torch.tensor([[v1x, v1y], [v2x, v2y]], dtype=torch.float64)  # (S, 2)
        a = masked_softmax(z)  # (S,)
        return z, a, vals, a @ vals  # output (2,)

    z0, a0, v0, o0 = compute(*(c.value for c in controls.values()))
    fig, (ax_w, ax_p) = new_figure(1, 2, figsize=(8.0, 3.4), width_ratios=[0.8, 1.2])
    bars = plotting.weight_bars(a0, ax=ax_w, labels=["v1", "v2"], ylim=(0.0, 1.15),
                                title="weights = softmax(s1, s2)", xlabel="value")
    bar_texts = [ax_w.text(j, 0.0, "", ha="center", va="bottom", fontsize=9) for j in range(2)]

    lim = _VALUE_LIM + 0.5
    (segment,) = ax_p.plot(v0[:, 0], v0[:, 1], "--", color="C2", lw=1.5, label="segment v1–v2")
    value_pts = ax_p.scatter(v0[:, 0], v0[:, 1], marker="^", s=70, color="C2", zorder=3, label="values")
    value_texts = [ax_p.annotate(f"v{j + 1}", tuple(v0[j].tolist()), xytext=(6, -12),
                                 textcoords="offset points", color="C2") for j in range(2)]
    out_pt = ax_p.scatter([o0[0]], [o0[1]], marker="*", s=180, color="black", zorder=4,
                          label="output a1·v1 + a2·v2")
    out_text = ax_p.annotate("", tuple(o0.tolist()), xytext=(8, 6), textcoords="offset points", fontsize=9)
    ax_p.set_xlim(-lim, lim)
    ax_p.set_ylim(-lim, lim)
    ax_p.set_aspect("equal", adjustable="box")
    ax_p.axhline(0, color="0.85", lw=0.8, zorder=0)
    ax_p.axvline(0, color="0.85", lw=0.8, zorder=0)
    ax_p.set_xlabel("dimension 1")
    ax_p.set_ylabel("dimension 2")
    ax_p.set_title("the output mixes the values")
    ax_p.legend(loc="lower left", fontsize="x-small", framealpha=0.8)

    def update(s1, s2, v1x, v1y, v2x, v2y):
        z, a, vals, out = compute(s1, s2, v1x, v1y, v2x, v2y)
        plotting.set_bar_heights(bars, a)
        for j, t in enumerate(bar_texts):
            t.set_position((j, float(a[j]) + 0.02))
            t.set_text(f"{float(a[j]):.3f}")
        segment.set_data(vals[:, 0].numpy(), vals[:, 1].numpy())
        value_pts.set_offsets(vals.numpy())
        for t, p in zip(value_texts, vals.tolist()):
            t.xy = tuple(p)
        out_pt.set_offsets(out.numpy()[None, :])
        out_text.xy = tuple(out.tolist())
        out_text.set_text(f"({float(out[0]):.2f}, {float(out[1]):.2f})")
        return {"scores s": z, "weights a": a, "output o": out}

    dynamic = [*bars.patches, *bar_texts, segment, value_pts, *value_texts, out_pt, out_text]
    return Explorer(controls, update, fig, dynamic=dynamic, columns=["1", "2"], digits=3)
