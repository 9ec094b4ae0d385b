"""The query explorer: move a 2-D query over fixed keys and values and watch scores, weights and
output.

Teaches C19 (scores -> softmax weights -> weighted sum of values), C07 (the output lies in the
convex hull of the values), C26 (the 2-D example: q = (1, 2) against k1 = (1, 0), k2 = (0, 1)) and
C03 (a dot-product score is not a cosine: stretch a key and its score grows with its length, so a
long key can win against a better aligned short one; the readout shows both).
The query's x and y sliders are precomputed together, as a grid (step 0.1: 61 x 61 frames); the
key-length slider is a second, small frame set (its 12 steps at the current query).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib.core.attention import dot_product_attention
from attnlib.core.scoring import cosine_score, default_scale, scaled_scores
from attnlib.course.examples import DEFAULT_KEYS, DEFAULT_VALUES
from attnlib.plotting import convex_hull
from attnlib.util._checks import check_int
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Arrows, Points, Polygon, Segments
from attnlib.widgets.framework.controls import float_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, square, weights_panel
from attnlib.widgets.framework.tables import grid_table

__all__ = ["query_explorer", "query_frame", "KEY_LENGTHS", "DEFAULT_KEYS", "DEFAULT_VALUES"]

STEP = 0.1
#: Widths (pixels) of the lines from the output to each value: as thick as that value's weight.
_MIN_WIDTH, _WIDTH_PER_WEIGHT = 0.5, 6.0


def _as_points(name, x) -> torch.Tensor:
    try:
        t = torch.as_tensor(x, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"{name} must be a list of 2-D points with shape (S, 2), e.g. [[1.0, 0.0], "
            f"[0.0, 1.0]], got {type(x).__name__} ({x!r:.60})"
        ) from None
    if t.ndim != 2 or t.shape[1] != 2:
        raise ValueError(
            f"{name} must be a list of 2-D points with shape (S, 2), got shape {tuple(t.shape)}"
        )
    return t


def _frame(q, k, v, scores, cosines, w, o) -> Frame:
    """The frame of one query from numpy arrays: q ``(2,)``, k, v ``(S, 2)``, scores, cosines, w
    ``(S,)``, o ``(2,)``.
    """
    origin = np.zeros(2)
    return Frame(
        arrays={
            "query": q[None],
            "query_arrow": np.stack([origin, q])[None],  # (1, 2), (1, 2, 2)
            "keys": k,
            "key_arrows": np.stack([np.zeros_like(k), k], 1),  # (S, 2), (S, 2, 2)
            "output": o[None],
            "mix": np.stack([np.broadcast_to(o, v.shape), v], 1),  # (1, 2), (S, 2, 2)
            "mix_widths": _MIN_WIDTH + _WIDTH_PER_WEIGHT * w,
            "weights": w,
        },
        readout={
            N_("scores"): scores,
            N_("cosine(q, k)"): cosines,
            N_("key length |k|"): np.linalg.norm(k, axis=-1),
            N_("weights"): w,
            N_("output (x, y)"): o,
        },
    )


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaled: bool):
    """Scores, cosines, weights ``(L, S)`` and outputs ``(L, 2)`` of queries ``q`` ``(L, 2)``, as
    numpy arrays.
    """
    scale = default_scale(q.shape[-1]) if scaled else 1.0
    out, weights = dot_product_attention(q, k, v, scale=scale)  # (L, 2), (L, S)
    scores = scaled_scores(q, k, scale)  # (L, S)
    cosines = cosine_score(q, k)  # (L, S); 0 for the zero query
    return scores.numpy(), cosines.numpy(), weights.numpy(), out.numpy()


def query_frame(k: torch.Tensor, v: torch.Tensor, x: float, y: float, scaled: bool) -> Frame:
    """What the explorer shows for query ``(x, y)`` over keys ``k`` ``(S, 2)`` and values ``v``
    ``(S, 2)``.
    """
    q = torch.tensor([[x, y]], dtype=torch.float64)  # (L=1, 2)
    scores, cosines, w, o = _attend(q, k, v, scaled)
    return _frame(q[0].numpy(), k.numpy(), v.numpy(), scores[0], cosines[0], w[0], o[0])


#: The key-length slider: a factor on the stretched key's starting length.
KEY_LENGTHS = (0.25, 3.0, 0.25)


@builder(N_("query"))
def query_explorer(
    keys=DEFAULT_KEYS,
    values=DEFAULT_VALUES,
    *,
    query=(1.0, 2.0),
    scaled: bool = True,
    key_labels=None,
    stretch_key: int = 0,
    key_length: float = 1.0,
) -> Explorer:
    """Sliders for a 2-D query over fixed keys and values, and one for a key's length
    (C19, C07, C26, C03).

    Args:
        keys: ``(S, 2)`` key points (S = 2..6).
        values: ``(S, 2)`` value points.
        query: the query's starting position ``(x, y)``, each in [-3, 3] (on the 0.1 grid).
        scaled: start with the 1/sqrt(d_k) scale on (d_k = 2).
        key_labels: names for the keys (default ``k1..kS``; values are ``v1..vS``).
        stretch_key: the key (0-based) whose length the ``key_length`` slider multiplies.
        key_length: its starting factor, in [0.25, 3] (on the 0.25 grid); 1 = the key as given.
    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``x``, ``y``,
        ``key_length``, ``scaled`` and a readout of ``scores``, ``cosine(q, k)``, ``key length
        |k|``, ``weights`` (each ``(S,)``) and ``output (x, y)`` ``(2,)``.
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
    check_int("stretch_key", stretch_key, min=0, max=S - 1)
    lo, hi, step = KEY_LENGTHS
    # Checked here so the message names the argument, not the slider's label.
    if isinstance(key_length, bool) or not isinstance(key_length, (int, float)):
        raise TypeError(f"key_length must be a number, got {type(key_length).__name__}")
    if not lo <= key_length <= hi:
        raise ValueError(f"key_length must lie in [{lo:g}, {hi:g}], got {key_length}")
    controls = {
        "x": float_slider(
            _("query x"), -3.0, 3.0, float(query[0]), step=STEP, readout_format=".1f", width="260px"
        ),
        "y": float_slider(
            _("query y"), -3.0, 3.0, float(query[1]), step=STEP, readout_format=".1f", width="260px"
        ),
        "key_length": float_slider(
            _("length of {key} (×)", key=labels[stretch_key]),
            lo,
            hi,
            float(key_length),
            step=step,
            readout_format=".2f",
            width="260px",
        ),
        "scaled": toggle(_("divide scores by √d_k"), scaled),
    }
    stretch = torch.ones(S, 1, dtype=torch.float64)  # (S, 1)
    longest = k.clone()
    longest[stretch_key] *= hi
    lim = max(3.2, 1.1 * float(torch.cat([longest, v]).abs().max()))

    def stretched(key_length) -> torch.Tensor:
        f = stretch.clone()
        f[stretch_key] = float(key_length)
        return k * f  # (S, 2)

    @grid_table(controls, "x", "y")  # every query of the sliders' grid in one batched call
    def plane(x, y, key_length, scaled):
        return _attend(torch.stack([x, y], -1), stretched(key_length), v, bool(scaled))

    def compute(x, y, key_length, scaled):
        scores, cosines, w, o = plane(x=x, y=y, key_length=float(key_length), scaled=bool(scaled))
        kk = stretched(key_length).numpy()
        return _frame(np.array([float(x), float(y)]), kk, v.numpy(), scores, cosines, w, o)

    plane_panel = Panel(
        [
            Polygon(convex_hull(v), color="C2", alpha=0.15),
            Points(
                v,
                color="C2",
                marker="^",
                size=6,
                labels=[f"v{j + 1}" for j in range(S)],
                label=_("values"),
            ),
            Arrows("key_arrows", color="C0", width=1.2),
            Points("keys", color="C0", marker="s", size=5, labels=labels, label=_("keys")),
            Segments("mix", color="0.35", widths="mix_widths"),
            Arrows("query_arrow", color="C3", width=1.5),
            Points("query", color="C3", size=6, label=_("query")),
            Points("output", color="black", marker="*", size=6, label=_("output")),
        ],
        **square(lim),
        title=_("query, keys, values, output"),
        xlabel=_("first component"),
        ylabel=_("second component"),
        legend="lower right",
    )
    bars = weights_panel("weights", S, labels, title=_("softmax weights"))
    scene = Scene([plane_panel, bars], cols=2, width=720, height=320, col_widths=[1.15, 1.0])
    return Explorer(controls, compute, scene, grid=[("x", "y")], columns=labels, digits=3)
