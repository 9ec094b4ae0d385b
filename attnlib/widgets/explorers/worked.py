"""The two-key explorer: a query against the fixed keys k1 = (1, 0), k2 = (0, 1), and two editable
values.

Teaches C26 (the slides' 2-D example: q1 = (1, 2) gives weights (0.33, 0.67)), C09 (the query
chooses the mix, the values choose what is mixed: with two keys a1 = sigma(s1 - s2), and moving a
value moves the output, never the weights) and C07 (the output lies on the segment between the two
values). Every slider is fast (precomputed in the browser). The query's x and y are two separate
frame sets of 61 frames each, not a 61 x 61 grid: with four value sliders beside them, every move of
a value would re-make a 3721-frame grid (~0.1-1 s on 2 cores; `benchmarks/widget_latency.py` median
71 ms even at a 25 x 25 grid), while two 61-frame sets and four 17-frame sets are re-made in ~20 ms.
Three panels: the matching path (query and keys -> scores), the logistic curve a1 = sigma(s1 - s2)
with the current point on it, and the content path (values -> output).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib.core.attention import dot_product_attention
from attnlib.core.scoring import default_scale, scaled_scores
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Arrows, Line, Points, Text
from attnlib.widgets.framework.controls import float_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, square
from attnlib.widgets.framework.tables import grid_table

__all__ = ["two_key_explorer", "two_key_frame", "KEYS", "QUERY_LIM", "VALUE_LIM"]

#: The fixed keys of the slides' 2-D example.
KEYS = ((1.0, 0.0), (0.0, 1.0))
QUERY_LIM, QUERY_STEP = 3.0, 0.1
VALUE_LIM, VALUE_STEP = 8.0, 1.0
_DIFF_LIM = 6.5  # the sigma panel's x range: |s1 - s2| <= 2 * QUERY_LIM = 6 unscaled


def _scores_weights(x: torch.Tensor, y: torch.Tensor, scaled: bool):
    """Scores and softmax weights ``(N, S)`` of the queries ``(x, y)`` (each ``(N,)``) against
    :data:`KEYS` (attnlib, float64), as numpy arrays.
    """
    q = torch.stack([x, y], -1).double()  # (N, d_k=2)
    k = torch.tensor(KEYS, dtype=torch.float64)  # (S=2, d_k)
    scale = default_scale(2) if scaled else 1.0
    _, weights = dot_product_attention(q, k, k, scale=scale)  # (N, S); values do not enter
    return scaled_scores(q, k, scale).numpy(), weights.numpy()


def two_key_frame(s: np.ndarray, a: np.ndarray, x, y, v1x, v1y, v2x, v2y) -> Frame:
    """What the explorer shows for query ``(x, y)`` with scores ``s`` and weights ``a`` ``(S,)``
    against :data:`KEYS`, and values ``v1``, ``v2``; the output is ``a1 v1 + a2 v2``.
    """
    v = np.array([[v1x, v1y], [v2x, v2y]], dtype=np.float64)  # (S, d_v=2)
    o = a @ v  # (d_v,) the weighted sum of the values
    diff = float(s[0] - s[1])
    return Frame(
        arrays={
            "query": [[x, y]],
            "query_arrow": [[[0.0, 0.0], [x, y]]],  # (1, 2), (1, 2, 2)
            "sigma_point": [[diff, float(a[0])]],
            "values": v,
            "output": o[None],  # (S, 2), (1, 2)
        },
        readout={
            N_("scores (s1, s2)"): s,
            "s1 - s2": diff,
            "a1 = σ(s1 - s2)": float(a[0]),
            N_("weights (a1, a2)"): a,
            N_("output o = a1 v1 + a2 v2"): o,
        },
        texts={
            "a1": f"a1 = {float(a[0]):.3f}",
            "mix_text": f"o = {float(a[0]):.3f} v1 + {float(a[1]):.3f} v2",
        },
    )


@builder(N_("two_key"))
def two_key_explorer(
    query=(1.0, 2.0), values=((2.0, 0.0), (0.0, 4.0)), *, scaled: bool = True
) -> Explorer:
    """Sliders for a 2-D query against k1 = (1, 0), k2 = (0, 1), and for the two values
    (C26, C09, C07).

    Args:
        query: the query's start ``(x, y)``, each in [-3, 3] on the 0.1 grid; default the slides'
            q1 = (1, 2).
        values: ``((v1x, v1y), (v2x, v2y))``, each coordinate an integer in [-8, 8]; default
            the worked example's [2, 0] and [0, 4].
        scaled: start with the scores divided by sqrt(d_k) = sqrt(2).
    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``x, y, scaled, v1x,
        v1y, v2x, v2y`` and a readout of the scores, ``s1 - s2``, ``a1 = σ(s1 - s2)``, the weights
        and the output.
    """
    qt = torch.as_tensor(query, dtype=torch.float64)
    vt = torch.as_tensor(values, dtype=torch.float64)
    if qt.shape != (2,):
        raise ValueError(f"query must be two numbers (x, y), got shape {tuple(qt.shape)}")
    if vt.shape != (2, 2):
        raise ValueError(
            f"values must be two 2-D points ((v1x, v1y), (v2x, v2y)), got shape {tuple(vt.shape)}"
        )
    if qt.abs().max() > QUERY_LIM or vt.abs().max() > VALUE_LIM:
        raise ValueError(
            f"query coordinates must lie in [-{QUERY_LIM}, {QUERY_LIM}] and value coordinates in "
            f"[-{VALUE_LIM}, {VALUE_LIM}], got query {qt.tolist()} and values {vt.tolist()}"
        )

    def value_slider(label, x):
        return float_slider(
            label,
            -VALUE_LIM,
            VALUE_LIM,
            float(x),
            step=VALUE_STEP,
            readout_format=".0f",
            width="200px",
        )

    def query_slider(axis, x):
        return float_slider(
            _("query {axis}", axis=axis),
            -QUERY_LIM,
            QUERY_LIM,
            float(x),
            step=QUERY_STEP,
            readout_format=".1f",
            width="240px",
        )

    controls = {
        "x": query_slider("x", qt[0]),
        "y": query_slider("y", qt[1]),
        "scaled": toggle(_("divide scores by √d_k = √2"), scaled),
        "v1x": value_slider("v1 x", vt[0, 0]),
        "v1y": value_slider("v1 y", vt[0, 1]),
        "v2x": value_slider("v2 x", vt[1, 0]),
        "v2y": value_slider("v2 y", vt[1, 1]),
    }
    # the weights of every query on the sliders' grid: one attnlib call per scale setting
    table = grid_table(controls, "x", "y")(_scores_weights)

    def compute(x, y, scaled, v1x, v1y, v2x, v2y):
        s, a = table(x=x, y=y, scaled=bool(scaled))  # (S,), (S,)
        return two_key_frame(s, a, x, y, v1x, v1y, v2x, v2y)

    scene = _scene()
    # o = a @ v: every array and number is affine in the four values (weights, scores and texts
    # do not move with them), so the static site stores 5 frames per query, not 17**4
    values_ = ("v1x", "v1y", "v2x", "v2y")
    return Explorer(controls, compute, scene, columns=["1", "2"], digits=3, affine=values_)


def _scene() -> Scene:
    """The matching path, the logistic curve a1 = σ(s1 − s2), the content path."""
    k = torch.tensor(KEYS, dtype=torch.float64)  # (S=2, 2)
    origin = torch.zeros(2, 2, dtype=torch.float64)
    qlim = QUERY_LIM + 0.3
    matching = Panel(
        [
            Line(
                [[-qlim, -qlim], [qlim, qlim]],
                color="0.6",
                width=1.0,
                dash=True,
                label="x = y: a1 = a2",
            ),
            Arrows(torch.stack([origin, k], 1), color="C0", width=1.2),
            Points(k, color="C0", marker="s", size=5, labels=["k1", "k2"], label=_("keys")),
            Arrows("query_arrow", color="C3", width=1.5),
            Points("query", color="C3", size=6, label=_("query q")),
        ],
        **square(qlim),
        title=_("matching: q against k1, k2"),
        xlabel=_("dimension 1"),
        ylabel=_("dimension 2"),
        legend="lower right",
    )
    t = torch.linspace(-_DIFF_LIM, _DIFF_LIM, 131, dtype=torch.float64)
    sigma = Panel(
        [
            Line(torch.stack([t, torch.sigmoid(t)], 1), color="C0", width=1.5),
            Line([[-_DIFF_LIM, 0.5], [_DIFF_LIM, 0.5]], color="0.7", width=1.0, dash=True),
            Points("sigma_point", color="black", size=6),
            Text(0.04, 0.92, key="a1", axes=True),
        ],
        xlim=(-_DIFF_LIM, _DIFF_LIM),
        ylim=(0.0, 1.0),
        title=_("weight of position 1: a1 = σ(s1 − s2)"),
        xlabel="s1 − s2",
        ylabel="a1",
    )
    vlim = VALUE_LIM + 0.8
    content = Panel(
        [
            # where the star sits on the dashed segment is the weights (the corner text prints them)
            Line("values", color="C2", width=1.2, dash=True),
            Text(0.04, 0.94, key="mix_text", axes=True, size=8.0),
            Points(
                "values", color="C2", marker="^", size=6, labels=["v1", "v2"], label=_("values")
            ),
            Points("output", color="black", marker="*", size=6, label=_("output o")),
        ],
        **square(vlim),
        title=_("content: o = a1 v1 + a2 v2"),
        xlabel=_("dimension 1"),
        ylabel=_("dimension 2"),
        legend="lower left",
    )
    scene = Scene(
        [matching, sigma, content], cols=3, width=900, height=300, col_widths=[1.0, 1.0, 1.0]
    )
    return scene
