"""Key picture of notebook 01: the learned bilinear score e_ij = x_i W_Q W_Kᵀ x_jᵀ is not symmetric (C04)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from attnlib import plotting
from attnlib.figures import register_figure

__all__ = ["score_asymmetry", "bilinear_asymmetry_figure"]


def score_asymmetry(scores, axes=None, *, labels: Sequence[str] | None = None, fmt: str = "{:.1f}"):
    """Draw a score matrix E, its transpose Eᵀ and E − Eᵀ side by side on one colour scale.

    Entry (i, j) of the first panel is e_ij ("token i reads token j"); of the second, e_ji (the
    same pair read the other way). The third panel is zero everywhere only if E is symmetric.

    Args:
        scores: ``(L, L)`` square score matrix (tensor or array, any device).
        axes: three axes to draw into (None: a new pyplot figure with three panels).
        labels: one label per token (default ``x1 .. xL``).
        fmt: format of the numbers written in the cells.

    Returns:
        ``(images, texts)``: the three ``AxesImage`` and their cell-label texts.
    """
    e = plotting.to_numpy(scores)
    if e.ndim != 2 or e.shape[0] != e.shape[1]:
        raise ValueError(f"scores must be a square (L, L) matrix, got shape {tuple(e.shape)}")
    n = e.shape[0]
    labels = list(labels) if labels is not None else [f"x{i + 1}" for i in range(n)]
    if len(labels) != n:
        raise ValueError(f"labels has {len(labels)} entries but scores is {n}x{n}")
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 3, figsize=(10.5, 3.4), layout="constrained")
    if len(axes) != 3:
        raise ValueError(f"axes must hold 3 axes, got {len(axes)}")
    panels = [
        (e, "$e_{ij}$: token i reads token j"),
        (e.T, "$e_{ji}$: the same pair, reversed"),
        (e - e.T, "$e_{ij} - e_{ji}$"),
    ]
    vmax = float(np.abs(np.concatenate([p.ravel() for p, _ in panels])).max()) or 1.0
    images, texts = [], []
    for ax, (mat, title) in zip(axes, panels):
        im = plotting.heatmap(mat, ax=ax, row_labels=labels, col_labels=labels, title=title,
                              xlabel="j", ylabel="i", cmap="RdBu_r", vmin=-vmax, vmax=vmax,
                              colorbar=ax is axes[-1])
        images.append(im)
        texts.append(plotting.cell_labels(ax, mat, fmt, threshold=-np.inf))
    return images, texts


@register_figure("bilinear_asymmetry", formats=("png", "svg"))
def bilinear_asymmetry_figure(n_tokens: int = 5, d_model: int = 4, d_k: int = 3, seed: int = 0):
    """The key picture: E = (X W_Q)(X W_K)ᵀ for random X, W_Q, W_K, next to Eᵀ and E − Eᵀ.

    Args:
        n_tokens, d_model, d_k: sizes of X ``(n, d)`` and of the projections ``(d, d_k)``.
        seed: seed of a private CPU generator (the global one is left alone).

    Returns:
        The matplotlib ``Figure``.
    """
    import torch
    from matplotlib.figure import Figure

    from attnlib import dot_score

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_tokens, d_model, generator=g, dtype=torch.float64)  # (n, d)
    w_q = torch.randn(d_model, d_k, generator=g, dtype=torch.float64)  # (d, d_k)
    w_k = torch.randn(d_model, d_k, generator=g, dtype=torch.float64)  # (d, d_k)
    e = dot_score(x @ w_q, x @ w_k)  # (n, n)
    fig = Figure(figsize=(10.5, 3.4), layout="constrained")
    axes = fig.subplots(1, 3)
    score_asymmetry(e, axes)
    fig.suptitle("A learned bilinear score $x_i W_Q W_K^T x_j^T$ is not symmetric (C04)")
    return fig
