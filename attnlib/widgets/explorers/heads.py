"""The heads explorer: the same projections cut into 1, 2, 4 or 8 heads, every head's weight map at
once.

Teaches C16 (each head attends with its own slice of the projections), C17 (one wide head gives
one weight map per query, h heads give h; for h > 1 the wide head's map is not the average of the
heads')
and C28 (the heads are not copies of one another). The projections are fixed; only how their
output is cut into heads changes. A toggle adds the sinusoidal positions of notebook 07 to the
embeddings, so the two rows of a repeated token (*the*) stop being identical.
"""

from __future__ import annotations

import torch

from attnlib.core.multihead import head_weight_maps
from attnlib.core.positional import sinusoidal_encoding
from attnlib.course.examples import DEFAULT_TOKENS, demo_projections
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Heatmap, Text
from attnlib.widgets.framework.controls import selection_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.readout import Key
from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells

__all__ = ["heads_explorer", "HEAD_CHOICES", "repeated_token"]

#: Numbers of heads offered (divisors of the default d_model = 16; all 8 maps have a panel).
HEAD_CHOICES = (1, 2, 4, 8)
_MAX_HEADS = max(HEAD_CHOICES)


def repeated_token(tokens) -> tuple[int, int] | None:
    """The 0-based positions ``(i, j)``, i < j, of the first token that occurs twice, or None."""
    seen: dict[str, int] = {}
    for j, t in enumerate(tokens):
        if t in seen:
            return seen[t], j
        seen[t] = j
    return None


@builder(N_("heads"))
def heads_explorer(
    tokens=DEFAULT_TOKENS,
    *,
    d_model: int = 16,
    num_heads: int = 4,
    positions: bool = False,
    score_gain: float = 2.0,
    seed: int = 0,
) -> Explorer:
    """A number-of-heads slider and a "+ positions" toggle: every head's weight map for one
    sentence.

    Top left: the one wide head (Dh = D) of the same projections, softmax((1/√h) Σ_r s^(r)); below
    it the average of the h heads' maps (the same picture only at h = 1, where the one head is
    the wide head). Then one panel per head 1..8; heads that do not exist at the chosen h are
    hatched.

    Args:
        tokens: the L tokens (2..10) of the input sentence.
        d_model: D; must be divisible by 8 so every choice in :data:`HEAD_CHOICES` works.
        num_heads: starting number of heads, one of :data:`HEAD_CHOICES`.
        positions: start with the sinusoidal positional encoding added to the embeddings.
        score_gain: scales W_Q so the random scores are not all flat
        (a learned model's would not be).
        seed: seed of the explorer's own generator for embeddings and projections.

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``heads`` (1, 2, 4,
        8) and ``positions``; its readout holds h, Dh, how far the heads' maps are from each other
        (0 would mean copies), how far their average is from the wide head, and the gap between the
        rows of the repeated token.
    """
    tokens = [str(t) for t in tokens]
    if not 2 <= len(tokens) <= 10:
        raise ValueError(f"tokens must have between 2 and 10 entries, got {len(tokens)}")
    if not isinstance(d_model, int) or d_model <= 0 or d_model % _MAX_HEADS:
        raise ValueError(
            f"d_model must be a positive int divisible by {_MAX_HEADS}, got {d_model!r}"
        )
    if num_heads not in HEAD_CHOICES:
        raise ValueError(f"num_heads must be one of {HEAD_CHOICES}, got {num_heads!r}")
    data = demo_projections(tokens, d_model=d_model, score_gain=score_gain, seed=seed)
    L = len(tokens)
    pe = sinusoidal_encoding(L, d_model, dtype=torch.float64)  # (L, D)
    inputs = {False: data.x, True: data.x + pe}  # (1, L, D) each
    maps = {
        (p, h): head_weight_maps(inputs[p], data.w_q, data.w_k, h)  # (H, L, S)
        for p in (False, True)
        for h in HEAD_CHOICES
    }
    pair = repeated_token(tokens)
    zeros, ones = torch.zeros(L, L, dtype=torch.float64), torch.ones(L, L, dtype=torch.float64)
    if pair is not None:  # the key code reads, and its name in the reader's language
        i, j = pair
        pair_key = Key(
            f"max |row {i} - row {j}| ('{tokens[i]}'), all heads",
            _("max |row {i} - row {j}| ('{token}'), all heads", i=i, j=j, token=tokens[i]),
        )

    def compute(heads, positions):
        h, p = int(heads), bool(positions)
        w = maps[(p, h)]  # (H, L, S)
        wide = maps[(p, 1)][0]  # (L, S)
        mean = w.mean(0)  # (L, S)
        arrays = {"wide": wide, "mean": mean}
        texts = {}
        for r in range(_MAX_HEADS):
            arrays[f"w{r + 1}"] = w[r] if r < h else zeros
            arrays[f"hid{r + 1}"] = zeros if r < h else ones
            texts[f"t{r + 1}"] = "" if r < h else _("no head {r} at h = {h}", r=r + 1, h=h)
        flat = w.reshape(h, -1)  # (H, L*S)
        gap = (
            float((flat[:, None] - flat[None]).abs().mean(-1).sum() / (h * (h - 1)))
            if h > 1
            else 0.0
        )
        readout = {
            N_("heads h"): h,
            N_("head width Dh = D / h"): d_model // h,
            N_("mean |A_r - A_s| between heads"): gap,
            N_("max |mean of heads - wide head|"): float((mean - wide).abs().max()),
        }
        if pair is not None:
            i, j = pair
            readout[pair_key] = float((w[:, i] - w[:, j]).abs().max())
        readout[N_("query 0's row, wide head")] = wide[0]
        readout[N_("query 0's row, head 1")] = w[0, 0]
        return Frame(arrays=arrays, readout=readout, texts=texts)

    scene = _scene(L, tokens, d_model)
    controls = {
        "heads": selection_slider(_("heads h"), HEAD_CHOICES, num_heads, width="260px"),
        "positions": toggle(_("+ positions (sinusoidal, notebook 07)"), positions),
    }
    # data: the input and projections, for tests and curious readers
    return Explorer(controls, compute, scene, columns=tokens, digits=3, data=data)


def _scene(L: int, tokens, d_model: int) -> Scene:
    """The weight maps only: the wide head and the mean of the heads (left column), and eight head
    slots, hatched where a head does not exist at the chosen h (each with a text for it)."""
    grid = cells(L, L, tokens, tokens)
    side = dict(grid, xlabel=_("key"))
    panels = [
        Panel(
            [Heatmap("wide", cmap="viridis")],
            title=_("one wide head (Dh = {d_model})", d_model=d_model),
            ylabel=_("query"),
            **side,
        )
    ]
    for r in range(4):
        panels.append(
            Panel(
                [
                    Heatmap(f"w{r + 1}", hidden=f"hid{r + 1}", colorbar=(r == 3)),
                    Text(0.5, 0.5, key=f"t{r + 1}", axes=True, ha="center", size=8),
                ],
                title=_("head {h}", h=r + 1),
                **grid,
            )
        )
    panels.append(
        Panel(
            [Heatmap("mean", cmap="viridis")],
            title=_("mean of the h heads' maps"),
            ylabel=_("query"),
            **side,
        )
    )
    for r in range(4, 8):
        panels.append(
            Panel(
                [
                    Heatmap(f"w{r + 1}", hidden=f"hid{r + 1}", colorbar=(r == 7)),
                    Text(0.5, 0.5, key=f"t{r + 1}", axes=True, ha="center", size=8),
                ],
                title=_("head {h}", h=r + 1),
                xlabel=_("key"),
                **grid,
            )
        )
    scene = Scene(panels, cols=5, width=980, height=350, col_widths=[1.15, 1.0, 1.0, 1.0, 1.3])
    return scene
