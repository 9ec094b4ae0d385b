"""Key picture of notebook 01: the learned bilinear score e_ij = x_i W_Q W_Kᵀ x_jᵀ is not
symmetric (C04)."""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.core.scoring import dot_score, score_asymmetry
from attnlib.figures import register_figure
from attnlib.plotting import math_text
from attnlib.util.i18n import _

__all__ = ["bilinear_asymmetry_figure"]


@register_figure("bilinear_asymmetry", formats=("png", "svg"))
def bilinear_asymmetry_figure(n_tokens: int = 5, d_model: int = 4, d_k: int = 3, seed: int = 0):
    """The key picture: E = (X W_Q)(X W_K)ᵀ for random X, W_Q, W_K, next to Eᵀ and E − Eᵀ.

    Args:
        n_tokens, d_model, d_k: sizes of X ``(n, d)`` and of the projections ``(d, d_k)``.
        seed: seed of a private CPU generator (the global one is left alone).

    Returns:
        The matplotlib ``Figure``.
    """
    from matplotlib.figure import Figure

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_tokens, d_model, generator=g, dtype=torch.float64)  # (n, d)
    w_q = torch.randn(d_model, d_k, generator=g, dtype=torch.float64)  # (d, d_k)
    w_k = torch.randn(d_model, d_k, generator=g, dtype=torch.float64)  # (d, d_k)
    e = dot_score(x @ w_q, x @ w_k)  # (n, n)
    fig = Figure(figsize=(10.5, 3.4), layout="constrained")
    plotting.score_asymmetry_panels(score_asymmetry(e), fig.subplots(1, 3))
    score = math_text("$x_i W_Q W_K^T x_j^T$", "xᵢ W_Q W_Kᵀ xⱼᵀ")
    fig.suptitle(_("A learned bilinear score {score} is not symmetric", score=score))
    return fig
