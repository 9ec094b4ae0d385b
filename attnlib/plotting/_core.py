"""The boundary of the drawing layer: tensors in, float64 numpy arrays out; axes on demand."""

from __future__ import annotations

import numpy as np

from attnlib.util.fonts import uses_cjk_font
from attnlib.util.i18n import get_language

__all__ = ["to_numpy", "masked", "math_text"]


def math_text(tex: str, plain: str) -> str:
    """``tex`` (matplotlib mathtext, ``$...$``) in English, ``plain`` (the same math in Unicode,
    e.g. ``xᵢ W_Kᵀ``) in a language drawn with the fallback CJK font: mathtext takes every glyph
    of a string from its own math fonts and cannot fall back, so a message that holds both math
    and Chinese must carry its math as plain text."""
    return plain if uses_cjk_font(get_language()) else tex


def to_numpy(x) -> np.ndarray:
    """Return ``x`` as a float64 numpy array on the CPU (tensors of any device or dtype, arrays,
    lists)."""
    import torch  # a core dependency

    if isinstance(x, torch.Tensor):
        # bfloat16/float16 have no numpy dtype: go through float64 on the CPU.
        return x.detach().to(device="cpu", dtype=torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _axes(ax, figsize=(4.0, 3.2)):
    """Return ``ax``, or a new axes from pyplot (so a notebook cell displays it)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _as_matrix(name: str, x) -> np.ndarray:
    a = to_numpy(x)
    while a.ndim > 2 and a.shape[0] == 1:  # drop leading batch/head dims of size 1
        a = a[0]
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (L, S) (leading size-1 dims are dropped), "
            f"got shape {tuple(a.shape)}"
        )
    return a


def masked(weights, mask=None) -> np.ma.MaskedArray:
    """Return ``weights`` as a masked array hiding cells where ``mask`` is False (True = may
    attend).

    Args:
        weights: ``(L, S)`` values.
        mask: bool ``(L, S)`` or broadcastable, True = visible; None hides nothing.
    Returns:
        ``np.ma.MaskedArray`` of shape ``(L, S)`` for ``AxesImage.set_data``.
    """
    w = _as_matrix("weights", weights)
    if mask is None:
        return np.ma.masked_array(w, mask=np.zeros_like(w, dtype=bool))
    m = np.broadcast_to(to_numpy(mask).astype(bool), w.shape)
    return np.ma.masked_array(w, mask=~m)
