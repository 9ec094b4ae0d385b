"""Masking pitfalls: what the common "fill with a large negative number" recipes really give.

The textbook mask adds ``M`` (0 = visible, ``-inf`` = hidden) to the scores before the softmax.
Many implementations replace ``-inf`` by a "large negative number" such as ``-1e6`` (d2l) or
``-1e9`` (the Annotated Transformer). That is not one recipe but several, and which one you get
depends on the dtype:

- a row with *every* key hidden is undefined: ``-inf`` everywhere gives ``NaN``;
- ``-1e6`` and ``-1e9`` overflow to ``-inf`` in float16, so float16 gives ``NaN`` too;
- *replacing* the hidden scores by one big number makes a fully hidden row uniform;
- *adding* ``-1e6`` in float32 keeps the score differences (float32 still resolves 0.06 at
  1e6), so a fully hidden row gets exactly the weights it would have had with no mask at all;
  adding ``-1e9`` rounds them all away and gives a uniform row again;
- adding ``torch.finfo(dtype).min`` (Hugging Face's choice) gives a uniform fully hidden row in
  every dtype, and two such additive masks added together overflow to ``-inf`` (NaN again).

:func:`attnlib.masked_softmax` gives all-zero weights for such a row, in every dtype. The
functions here compute these cases so a notebook can print them; they are demonstrations of
what *not* to do, not building blocks.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

import torch

from attnlib.core.softmax import masked_softmax, valid_lens_mask
from attnlib.util._checks import check_mask, check_tensor, check_valid_lens
from attnlib.util.i18n import N_, _, gettext

__all__ = [
    "fill_masked_softmax",
    "fill_value_in",
    "lecture_masked_softmax",
    "classify_row",
    "MaskedRowCase",
    "fully_masked_row_cases",
    "format_cases",
    "DEFAULT_ROW_SCORES",
    "ROW_RECIPES",
    "recipe_softmax",
    "sentinel_for",
]

#: Scores of the demonstration row; exactly representable in float32, float16 and bfloat16.
DEFAULT_ROW_SCORES = (2.0, 0.5, -1.0, 1.0)

#: The recipes compared by :func:`fully_masked_row_cases`: name -> (fill, how). The names are
#: keys (English); :func:`format_cases` shows them in the current language.
ROW_RECIPES = {
    N_("plain softmax, M = -inf"): (float("-inf"), "add"),
    N_("add M = -1e6"): (-1e6, "add"),
    N_("add M = -1e9"): (-1e9, "add"),
    N_("replace by -1e6 (d2l)"): (-1e6, "replace"),
    N_("replace by -1e9"): (-1e9, "replace"),
    N_("add M = finfo(dtype).min"): ("finfo.min", "add"),
    "attnlib masked_softmax": (None, "attnlib"),
}

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def sentinel_for(fill, dtype: torch.dtype) -> float:
    """The number a recipe's ``fill`` means in ``dtype``: ``"finfo.min"`` is
    ``torch.finfo(dtype).min``.
    """
    if isinstance(fill, str):
        if fill != "finfo.min":
            raise ValueError(f"fill must be a number or 'finfo.min', got {fill!r}")
        return float(torch.finfo(dtype).min)
    return float(fill)


def fill_value_in(fill: float, dtype: torch.dtype) -> float:
    """The number ``fill`` becomes when stored in ``dtype`` (e.g. ``-1e9`` is ``-inf`` in float16).

    Args:
        fill: the sentinel, e.g. ``-1e9``.
        dtype: a floating dtype.

    Returns:
        The stored value as a Python float.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    # Through float64 so the only rounding is the one into ``dtype`` (no overflow error).
    return torch.tensor(float(fill), dtype=torch.float64).to(dtype).item()


def fill_masked_softmax(
    scores: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    valid_lens: torch.Tensor | None = None,
    fill: float = -1e6,
    how: str = "replace",
) -> torch.Tensor:
    """The common sentinel recipe: hide scores with a big negative ``fill``, then a plain softmax.

    Everything is computed in the scores' own dtype, as such code does, and ``fill`` is first
    stored in that dtype (so ``-1e6`` becomes ``-inf`` in float16; ``Tensor.masked_fill`` would
    raise instead). With ``how="replace"`` and ``fill=-1e6`` this is d2l's ``masked_softmax``:
    a row with ``valid_len`` 0 comes out uniform, not zero.

    Args:
        scores: ``(..., L, S)`` logits (not modified).
        attn_mask: optional boolean mask broadcastable to ``(..., L, S)``, True = may attend.
        valid_lens: optional integer ``(B,)`` or ``(B, L)``; keys at positions ``>= valid_len``
            are hidden (scores must then be ``(B, ..., L, S)``).
        fill: the sentinel (``float("-inf")`` gives the plain masked softmax).
        how: ``"replace"`` sets hidden scores to ``fill``; ``"add"`` adds ``fill`` to them
            (the additive mask ``softmax(Z + M)``).

    Returns:
        Weights ``(..., L, S)`` in the scores' dtype, possibly NaN or uniform on hidden rows.
    """
    check_tensor("scores", scores, ndim_min=2)
    if not isinstance(how, str):
        raise TypeError(f"how must be a str, 'replace' or 'add', got {type(how).__name__}")
    if how not in ("replace", "add"):
        raise ValueError(f"how must be 'replace' or 'add', got {how!r}")
    if isinstance(fill, bool) or not isinstance(fill, (int, float)):
        raise TypeError(f"fill must be a real number, got {type(fill).__name__} ({fill!r})")
    if math.isnan(fill):
        raise ValueError("fill must be a real number or -inf, got nan")
    visible = torch.ones(scores.shape, dtype=torch.bool, device=scores.device)  # (..., L, S)
    if attn_mask is not None:
        check_mask("attn_mask", attn_mask, scores.shape, scores.device)
        if attn_mask.dtype != torch.bool:
            raise TypeError(f"attn_mask must be boolean (True = may attend), got {attn_mask.dtype}")
        visible = visible & attn_mask
    if valid_lens is not None:
        check_valid_lens(
            valid_lens, tuple(scores.shape[:-2]), scores.shape[-2], scores.shape[-1], scores.device
        )
        visible = visible & valid_lens_mask(valid_lens, scores.shape)
    sentinel = torch.tensor(float(fill), dtype=torch.float64).to(
        device=scores.device, dtype=scores.dtype
    )
    if how == "replace":
        z = torch.where(visible, scores, sentinel)  # (..., L, S), a new tensor
    else:
        z = scores + torch.where(visible, torch.zeros_like(sentinel), sentinel)  # (..., L, S)
    return torch.softmax(z, dim=-1)


def classify_row(weights: torch.Tensor, scores: torch.Tensor, *, atol: float = 1e-3) -> str:
    """Name what a fully hidden row's weights turned out to be.

    Args:
        weights: ``(S,)`` weights of the row.
        scores: ``(S,)`` the row's raw scores (to recognise "as if unmasked").
        atol: tolerance for the comparisons (loose enough for bfloat16).

    Returns:
        ``"NaN"``, ``"zeros"``, ``"uniform"``, ``"as if unmasked"`` or ``"other"`` (keys, in
        English; ``gettext(verdict)`` is the verdict in the current language).
    """
    check_tensor("weights", weights, ndim=1)
    check_tensor("scores", scores, ndim=1)
    if weights.shape != scores.shape:
        raise ValueError(
            f"weights has shape {tuple(weights.shape)} but scores has {tuple(scores.shape)}"
        )
    w = weights.detach().to(device="cpu", dtype=torch.float64)
    if torch.isnan(w).any():
        return "NaN"
    if (w == 0).all():
        return N_("zeros")
    n = w.numel()
    if torch.allclose(w, torch.full_like(w, 1.0 / n), rtol=0.0, atol=atol):
        return N_("uniform")
    unmasked = torch.softmax(scores.detach().to(device="cpu", dtype=torch.float64), dim=-1)
    if torch.allclose(w, unmasked, rtol=0.0, atol=atol):
        return N_("as if unmasked")
    return N_("other")


@dataclass(frozen=True)
class MaskedRowCase:
    """One recipe applied to a fully hidden row in one dtype."""

    recipe: str  # a key of ROW_RECIPES
    dtype: str  # "float32", "float16" or "bfloat16"
    fill_stored: float | None  # the sentinel after rounding into dtype (None for attnlib)
    weights: tuple[float, ...]  # the row's weights as Python floats (may be NaN)
    verdict: str  # see classify_row


def fully_masked_row_cases(
    scores=DEFAULT_ROW_SCORES,
    *,
    dtypes=("float32", "float16", "bfloat16"),
    recipes=None,
    device=None,
) -> list[MaskedRowCase]:
    """Apply each masking recipe to one row whose keys are all hidden, in each dtype (C12).

    Args:
        scores: the row's ``S`` raw scores (a sequence or a 1-D tensor).
        dtypes: names among ``"float32"``, ``"float16"``, ``"bfloat16"``.
        recipes: names from :data:`ROW_RECIPES` (default: all, in order).
        device: where to compute (default: the CPU or the tensor's device).

    Returns:
        One :class:`MaskedRowCase` per (recipe, dtype), recipe-major.
    """
    row = torch.as_tensor(scores, dtype=torch.float64, device=device)
    check_tensor("scores", row, ndim=1)
    recipes = list(ROW_RECIPES) if recipes is None else list(recipes)
    for name in recipes:
        if name not in ROW_RECIPES:
            raise ValueError(f"unknown recipe {name!r}; choose from {list(ROW_RECIPES)}")
    for name in dtypes:
        if name not in _DTYPES:
            raise ValueError(f"unknown dtype {name!r}; choose from {list(_DTYPES)}")
    hidden = torch.zeros(1, row.numel(), dtype=torch.bool, device=row.device)  # (1, S): all hidden
    cases = []
    for recipe in recipes:
        fill, how = ROW_RECIPES[recipe]
        for name in dtypes:
            dtype = _DTYPES[name]
            z = row.to(dtype).unsqueeze(0)  # (1, S)
            if how == "attnlib":
                w, stored = masked_softmax(z, hidden), None
            else:
                f = sentinel_for(fill, dtype)
                w, stored = fill_masked_softmax(z, hidden, fill=f, how=how), fill_value_in(f, dtype)
            w = w[0]
            cases.append(
                MaskedRowCase(
                    recipe,
                    name,
                    stored,
                    tuple(w.to(device="cpu", dtype=torch.float64).tolist()),
                    classify_row(w, row),
                )
            )
    return cases


def format_cases(cases: list[MaskedRowCase], *, what: str = "verdict") -> str:
    """Lay out :func:`fully_masked_row_cases` as a text table: one row per recipe, one column per
    dtype.

    Args:
        cases: the cases.
        what: ``"verdict"`` (NaN / zeros / uniform / as if unmasked) or ``"weights"`` (rounded to
            3 decimals) or ``"fill"`` (the sentinel as stored in the dtype).

    Returns:
        The table as a string (the caller prints it), its header, recipes and verdicts in the
        current language; columns are aligned by their width on screen (a CJK character takes
        two columns).
    """
    if what not in ("verdict", "weights", "fill"):
        raise ValueError(f"what must be 'verdict', 'weights' or 'fill', got {what!r}")
    recipes = list(dict.fromkeys(c.recipe for c in cases))
    dtypes = list(dict.fromkeys(c.dtype for c in cases))
    by_key = {(c.recipe, c.dtype): c for c in cases}

    def cell(c: MaskedRowCase | None) -> str:
        if c is None:
            return ""
        if what == "verdict":
            return gettext(c.verdict)
        if what == "fill":
            return "-" if c.fill_stored is None else f"{c.fill_stored:g}"
        return (
            "[" + ", ".join("nan" if math.isnan(x) else f"{x + 0.0:.3f}" for x in c.weights) + "]"
        )

    rows = [[_("recipe"), *dtypes]] + [
        [gettext(r), *(cell(by_key.get((r, d))) for d in dtypes)] for r in recipes
    ]
    widths = [max(_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(text + " " * (w - _width(text)) for text, w in zip(row, widths)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _width(text: str) -> int:
    """Columns ``text`` takes in a monospaced font: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def recipe_softmax(scores: torch.Tensor, masks, recipe: str) -> torch.Tensor:
    """Weights of ``scores`` under one of :data:`ROW_RECIPES`, with several boolean masks at once.

    The additive recipes turn *each* mask into its own float mask (0 = visible, the sentinel =
    hidden) and add them all to the scores, in the scores' dtype, as code that "simply adds" a
    padding mask and a causal mask does; so a key hidden by two masks gets twice the sentinel
    (``2 * finfo(dtype).min`` overflows to ``-inf``). The replace recipes put the sentinel where
    any mask hides; ``"attnlib masked_softmax"`` ANDs the masks and calls
    :func:`attnlib.masked_softmax`.

    Args:
        scores: ``(..., L, S)`` logits in a floating dtype (float32, float16, bfloat16, ...).
        masks: a list of boolean masks broadcastable to ``(..., L, S)``, True = may attend.
        recipe: a key of :data:`ROW_RECIPES`.

    Returns:
        Weights ``(..., L, S)`` in the scores' dtype (NaN, uniform or "as if unmasked" rows where
        the recipe fails).
    """
    check_tensor("scores", scores, ndim_min=2)
    if not isinstance(recipe, str):
        raise TypeError(
            f"recipe must be a str, one of {list(ROW_RECIPES)}, got {type(recipe).__name__}"
        )
    if recipe not in ROW_RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; choose from {list(ROW_RECIPES)}")
    masks = list(masks)
    for i, m in enumerate(masks):
        check_mask(f"masks[{i}]", m, scores.shape, scores.device)
        if m.dtype != torch.bool:
            raise TypeError(f"masks[{i}] must be boolean (True = may attend), got {m.dtype}")
    fill, how = ROW_RECIPES[recipe]
    visible = torch.ones(scores.shape, dtype=torch.bool, device=scores.device)  # (..., L, S)
    for m in masks:
        visible = visible & m
    if how == "attnlib":
        return masked_softmax(scores, visible)
    if how == "replace":
        return fill_masked_softmax(
            scores, visible, fill=sentinel_for(fill, scores.dtype), how="replace"
        )
    sentinel = torch.tensor(sentinel_for(fill, scores.dtype), dtype=torch.float64).to(
        scores.device, scores.dtype
    )
    zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
    z = scores
    for m in masks:
        z = z + torch.where(m, zero, sentinel)  # (..., L, S), in the scores' dtype
    return torch.softmax(z, dim=-1)


def lecture_masked_softmax(x: torch.Tensor, valid_lens: torch.Tensor | None) -> torch.Tensor:
    """The ``masked_softmax`` of lecture notes 004 §9.6, word for word (``nn`` spelled out as
    ``torch.nn``), so a notebook can run it beside :func:`attnlib.masked_softmax`.

    It hides with ``masked_fill(~mask, -1e6)``, takes a softmax, multiplies by the mask (so
    the hidden keys get exactly 0 even where ``-1e6`` did not hide them) and divides by the new
    row sum, giving an empty row zeros. In float16 ``masked_fill`` with ``-1e6`` raises
    ``RuntimeError`` (the value does not fit) whenever ``valid_lens`` is given.

    Args:
        x: ``(B, L, S)`` scores (not modified).
        valid_lens: None, or integer ``(B,)`` or ``(B, L)``: keys at positions ``>= valid_len``
            are hidden.

    Returns:
        Weights ``(B, L, S)`` in the scores' dtype.
    """
    if valid_lens is None:
        return torch.nn.functional.softmax(x, dim=-1)

    shape = x.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens.repeat_interleave(shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)

    flat = x.reshape(-1, shape[-1])
    mask = torch.arange(shape[-1], device=x.device)[None, :] < valid_lens[:, None]
    masked = flat.masked_fill(~mask, -1e6)
    weights = torch.nn.functional.softmax(masked, dim=-1) * mask
    normalizer = weights.sum(dim=-1, keepdim=True)
    weights = torch.where(
        normalizer > 0,
        weights / normalizer.clamp_min(torch.finfo(weights.dtype).tiny),
        torch.zeros_like(weights),
    )
    return weights.reshape(shape)
