"""The masking explorer: padding lengths per batch row, a causal switch, and a masking recipe x
dtype switch.

Teaches C11 (hidden positions get weight exactly 0), C25 (valid_lens per batch row; a row with
valid_len 0 gives zero weights), C36 (the causal mask hides j > i), C37 (the two masks combine)
and C12 (a fully hidden row: "a large negative number" fails differently per dtype). The recipe
menu applies the recipes of :data:`attnlib.course.pitfalls.ROW_RECIPES` (additive ones *add* the
padding mask and the causal mask, each with the sentinel) in float32, float16 or bfloat16.

Cells: hatched = hidden and weight 0 (correct); a hidden key that received weight keeps its
colour and number and gets an open orange square; a NaN weight is a hatched cell under a filled red
square.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from attnlib.core.masks import causal_mask, padding_mask
from attnlib.core.scoring import scaled_scores
from attnlib.course.examples import DEFAULT_VALID_LENS, demo_batch
from attnlib.course.pitfalls import classify_row, recipe_softmax
from attnlib.util.i18n import N_, _, gettext
from attnlib.widgets.framework.artists import Heatmap, Points
from attnlib.widgets.framework.controls import dropdown, int_slider, toggle
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.frames import slider_axis
from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells
from attnlib.widgets.framework.tables import GridTable

__all__ = ["masking_explorer", "masking_picture", "RECIPES", "DTYPES", "LEGEND"]

#: Menu value (the English label) -> key of :data:`attnlib.course.pitfalls.ROW_RECIPES`; the
#: menu shows each value in the reader's language.
RECIPES = {
    "attnlib masked_softmax": "attnlib masked_softmax",
    N_("add M = -inf (plain softmax)"): "plain softmax, M = -inf",
    N_("add M = -1e9"): "add M = -1e9",
    N_("add M = finfo(dtype).min"): "add M = finfo(dtype).min",
    N_("replace by -1e6 (d2l)"): "replace by -1e6 (d2l)",
    N_("add M = -1e6"): "add M = -1e6",
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
#: What the cells of the picture mean, one line (the stored picture's caption).
LEGEND = N_(
    "hatched = hidden, weight 0  ·  open orange square = weight leaked onto a hidden key  ·  "
    "red square = NaN"
)
#: The verdicts of :func:`_verdict` (code names) as the readout shows them.
_VERDICTS = {
    "NaN": N_("NaN"),
    "zeros": N_("zeros"),
    "uniform": N_("uniform"),
    "as if unmasked": N_("as if unmasked"),
    "≈ as if unmasked": N_("≈ as if unmasked"),
    "other": N_("other"),
}
#: The verdicts that fully hidden queries of one batch row get together (at the builder's
#: defaults), each one message: a static page re-says a frame's string as a whole (tests check
#: that every such string is here).
_TOGETHER = frozenset(
    (
        N_("uniform / ≈ as if unmasked"),
        N_("other / uniform"),
        N_("uniform / as if unmasked / ≈ as if unmasked"),
    )
)
#: The readout's keys of each batch row's verdict.
_ROW_VERDICTS = (
    N_("row 0: a fully hidden query gets"),
    N_("row 1: a fully hidden query gets"),
    N_("row 2: a fully hidden query gets"),
)
_CAPTION_PX = 44  # room added above the panels for the settings and the legend
_OFF = -10.0  # where the markers of cells without a mark go: outside the panel (clipped)


def _verdict(w: np.ndarray, s: torch.Tensor) -> str:
    """:func:`~attnlib.course.pitfalls.classify_row`, plus "≈ as if unmasked" for a row whose scores
    were rounded in the sum with the sentinel (-1e6 in float32: steps of 1/16, so each weight is off
    by a factor within e^(±1/16), i.e. 7 %)."""
    verdict = classify_row(torch.from_numpy(w), s)
    if verdict == "other" and np.allclose(w, torch.softmax(s, -1).numpy(), rtol=0.07, atol=0.0):
        return "≈ as if unmasked"
    return verdict


def _verdicts(seen: list[str]) -> str:
    """What the fully hidden queries of a batch row got (``seen``: verdicts, each once), as the
    readout says it in the current language."""
    if not seen:
        return _("(none)")
    english = " / ".join(seen)
    if len(seen) == 1 or english in _TOGETHER:
        return gettext(english if len(seen) > 1 else _VERDICTS[seen[0]])
    return " / ".join(gettext(_VERDICTS[v]) for v in seen)  # not one message: said piece by piece


def _marks(cond: np.ndarray) -> np.ndarray:
    """``(L*S, 2)`` marker positions: the ``(j, i)`` of every True cell, the rest
    outside the panel.
    """
    L, S = cond.shape
    jj, ii = np.meshgrid(np.arange(S, dtype=np.float64), np.arange(L, dtype=np.float64))
    xy = np.stack([jj.ravel(), ii.ravel()], 1)  # (L*S, 2)
    xy[~cond.ravel()] = _OFF
    return xy


@builder(N_("masking"))
def masking_explorer(
    valid_lens=DEFAULT_VALID_LENS,
    *,
    causal: bool = False,
    recipe: str = "attnlib masked_softmax",
    dtype: str = "float32",
    num_tokens: int = 6,
    d_k: int = 8,
    seed: int = 0,
) -> Explorer:
    """Sliders for each batch row's valid length, a causal toggle and recipe / dtype menus, over one
    batch.

    Args:
        valid_lens: the starting length of each of the B = 3 batch rows, in ``[0, num_tokens]``.
        causal: start with the causal mask on.
        recipe: a key of :data:`RECIPES` (how the hidden scores are hidden).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``: the dtype the scores are masked
            and softmaxed in.
        num_tokens: L = S, tokens per row (2..10).
        d_k: width of the random queries and keys.
        seed: seed of the explorer's own generator for the random queries, keys and values.

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``len0``, ``len1``,
        ``len2``, ``causal``, ``recipe``, ``dtype`` and a readout of what each batch row's fully
        hidden queries get, the largest weight on a hidden key, the NaN count, the fully hidden
        query rows and the largest gap between the rows' weights and the exact masked softmax
        (float64).
    """
    if isinstance(valid_lens, (str, bytes)) or not hasattr(valid_lens, "__iter__"):
        raise TypeError(f"valid_lens must be a sequence of 3 ints, got {valid_lens!r}")
    # int() would truncate 1.7 to 1 without a word, so each length must already be an integer.
    for n in valid_lens:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"valid_lens must hold ints, got {type(n).__name__} ({n!r})")
    lens = tuple(int(n) for n in valid_lens)
    if len(lens) != 3:
        raise ValueError(f"valid_lens must give 3 lengths (one per batch row), got {valid_lens!r}")
    if isinstance(num_tokens, bool) or not isinstance(num_tokens, numbers.Integral):
        raise TypeError(
            f"num_tokens must be an int, got {type(num_tokens).__name__} ({num_tokens!r})"
        )
    if not 2 <= num_tokens <= 10:
        raise ValueError(f"num_tokens must be in [2, 10], got {num_tokens}")
    if any(not 0 <= n <= num_tokens for n in lens):
        raise ValueError(f"valid_lens must lie in [0, num_tokens={num_tokens}], got {lens}")
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {list(RECIPES)}, got {recipe!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    B, L = 3, num_tokens
    demo = demo_batch(batch=B, num_tokens=L, d_k=d_k, seed=seed)
    q, k, v = demo.q, demo.k, demo.v  # (B, L, Dk), (B, S, Dk), (B, S, Dv)
    scores = scaled_scores(q, k)  # (B, L, S) float64

    controls = {
        f"len{b}": int_slider(_("valid_len (row {b})", b=b), 0, L, lens[b], width="230px")
        for b in range(B)
    }
    controls["causal"] = toggle(_("causal mask (hide j > i)"), causal)
    recipes = [(gettext(r), r) for r in RECIPES]  # shown in the reader's language; value: r
    controls["recipe"] = dropdown(_("recipe"), recipes, recipe, width="300px")
    controls["dtype"] = dropdown("dtype", list(DTYPES), dtype, width="180px")

    def rows(n: torch.Tensor, recipe: str, dtype: str, causal: bool):
        """Weights ``(N, B, L, S)`` (every batch row of length ``n[i]``), visible ``(N, L, S)``
        and the exact masked softmax (float64), for every valid length ``n`` ``(N,)`` at once."""
        N = len(n)
        pad = padding_mask(n.repeat_interleave(B), L).reshape(N, B, 1, L)  # (N, B, 1, S)
        masks = [pad] + ([causal_mask(L)] if causal else [])  # each broadcastable to (N, B, L, S)
        visible = (pad & causal_mask(L)) if causal else pad.expand(N, B, L, L)
        s = scores.expand(N, B, L, L)
        w = recipe_softmax(s.to(DTYPES[dtype]), masks, RECIPES[recipe]).double()
        exact = recipe_softmax(s, masks, "attnlib masked_softmax")  # (N, B, L, S) float64
        return w.numpy(), visible[:, 0].numpy(), exact.numpy()

    # one table per (recipe, dtype, causal): every length of the sliders' range in one call
    table = GridTable({"n": slider_axis(controls["len0"]).values}, rows)

    def row_results(rec: str, dt: str, c: bool, n: int):
        return table(n=n, recipe=rec, dtype=dt, causal=c)

    def compute(len0, len1, len2, causal, recipe, dtype):
        arrays, readout = {}, {}
        worst_hidden, nans, empty, gap = 0.0, 0, 0, 0.0
        verdicts = []
        for b, n in enumerate((len0, len1, len2)):
            w_all, vis, exact_all = row_results(recipe, dtype, bool(causal), int(n))
            w, exact = w_all[b], exact_all[b]  # (L, S)
            isnan = np.isnan(w)
            wf = np.where(isnan, 0.0, w)  # (L, S) drawn: NaN cells get a red square instead
            hidden = ~vis
            arrays[f"w{b}"] = wf
            arrays[f"hid{b}"] = ((hidden & (wf == 0)) | isnan).astype(
                np.float64
            )  # hatched, no number
            arrays[f"leak{b}"] = _marks(hidden & (wf > 0) & ~isnan)
            arrays[f"nan{b}"] = _marks(isnan)
            worst_hidden = max(worst_hidden, float(np.where(hidden, wf, 0.0).max()))
            nans += int(isnan.sum())
            rows = np.flatnonzero(~vis.any(-1))  # queries of this batch row with nothing visible
            empty += len(rows)
            gap = max(gap, float(np.abs(np.where(isnan, 0.0, w - exact)).max()))
            # what the fully hidden queries got, judged on the keys the causal mask leaves (j <= i)
            seen = [
                _verdict(w[i, : (i + 1 if causal else L)], scores[b, i, : (i + 1 if causal else L)])
                for i in rows.tolist()
            ]
            verdicts.append(_verdicts(list(dict.fromkeys(seen))))
        readout["valid_lens"] = [int(len0), int(len1), int(len2)]
        for key, verdict in zip(_ROW_VERDICTS, verdicts):
            readout[key] = verdict
        readout[N_("largest weight on a hidden key")] = worst_hidden
        readout[N_("NaN weights")] = nans
        readout[N_("fully hidden query rows")] = empty
        readout[N_("largest |w - exact| (non-NaN)")] = gap
        return Frame(arrays=arrays, readout=readout)

    scene = _scene(B, L)
    data = {"q": q, "k": k, "v": v, "scores": scores}  # the inputs, for tests and curious readers
    return Explorer(controls, compute, scene, data=data, digits=3)


def _scene(B: int, L: int) -> Scene:
    """One heatmap per batch row: weights, hatched hidden cells, leak and NaN marks."""
    panels = []
    for b in range(B):
        panels.append(
            Panel(
                [
                    Heatmap(
                        f"w{b}",
                        hidden=f"hid{b}",
                        annotate=True,
                        colorbar=(b == B - 1),
                        cmap="viridis",
                    ),
                    Points(f"leak{b}", color="#ff7f0e", marker="s", size=11, filled=False),
                    Points(f"nan{b}", color="#d62728", marker="s", size=12),
                ],
                title=_("batch row {b}", b=b),
                xlabel=_("key j"),
                ylabel=_("query i") if b == 0 else "",
                **cells(L, L),
            )
        )
    scene = Scene(panels, cols=B, width=900, height=300)
    return scene


def masking_picture(explorer: Explorer, **values):
    """The explorer's picture at ``values`` (missing ones: current) as a matplotlib ``Figure``,
    for a notebook to store: each panel titled with its batch row's valid length, and the
    recipe, dtype, causal switch and :data:`LEGEND` written above the panels. Moves nothing.

    Args:
        explorer: a :func:`masking_explorer`.
        values: control values (``len0``, ``len1``, ``len2``, ``causal``, ``recipe``, ``dtype``).

    Returns:
        A ``Figure`` (Agg), the same panels as the browser draws, ``_CAPTION_PX`` pixels taller.
    """
    from attnlib.widgets.framework.render import render

    settings = {**explorer.values(), **values}
    fig = render(explorer.scene, explorer.compute(**values))
    width, height = fig.get_size_inches()
    dpi = fig.dpi
    grown = height + _CAPTION_PX / dpi
    for ax in fig.axes:  # keep every axes where it was, in pixels from the bottom
        x0, y0, w, h = ax.get_position().bounds
        ax.set_position((x0, y0 * height / grown, w, h * height / grown))
    fig.set_size_inches(width, grown)
    heatmaps = [ax for ax in fig.axes if ax.get_images() and ax.get_title()]
    for b, ax in enumerate(heatmaps):
        ax.set_title(_("batch row {b} (valid_len {n})", b=b, n=settings[f"len{b}"]), fontsize=10)
    shown = {"recipe": gettext(settings["recipe"]), "dtype": settings["dtype"]}
    caption = (
        _("recipe: {recipe}   ·   dtype: {dtype}   ·   causal mask: on", **shown)
        if settings["causal"]
        else _("recipe: {recipe}   ·   dtype: {dtype}   ·   causal mask: off", **shown)
    )
    fig.text(
        0.5,
        1 - 6 / (grown * dpi),
        caption,
        ha="center",
        va="top",
        fontsize=10,
    )
    fig.text(0.5, 1 - 26 / (grown * dpi), gettext(LEGEND), ha="center", va="top", fontsize=8)

    return fig
