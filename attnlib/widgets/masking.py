"""The masking explorer: padding lengths per batch row and a causal switch, on one batch's weights.

Teaches C11 (hidden positions get weight exactly 0), C25 (valid_lens per batch row; a row with
valid_len 0 gives zero weights), C36 (the causal mask hides j > i) and C37 (the two masks combine).
Hidden cells are drawn grey and hatched, so "hidden" and "visible but weight 0" look different.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.attention import dot_product_attention
from attnlib.masks import causal_mask, padding_mask
from attnlib.widgets.base import Explorer, int_slider, new_figure, register, toggle

__all__ = ["masking_explorer", "combined_visible", "hatch_overlay", "weights_rgba", "demo_batch",
           "DEFAULT_VALID_LENS"]

#: Starting valid lengths of the three batch rows (out of 6 tokens).
DEFAULT_VALID_LENS = (4, 6, 2)

_CELL_PX = 8  # pixels per cell in the hatch overlay


def combined_visible(valid_lens, num_tokens: int, causal: bool) -> torch.Tensor:
    """The mask the explorer applies: padding (per batch row) AND, if asked, causal.

    Args:
        valid_lens: ``(B,)`` integer lengths in ``[0, num_tokens]``.
        num_tokens: L = S.
        causal: also hide keys j > i.

    Returns:
        Boolean ``(B, L, S)``, True = may attend.
    """
    lens = torch.as_tensor(valid_lens)
    visible = padding_mask(lens, num_tokens).unsqueeze(1)  # (B, 1, S)
    visible = visible.expand(lens.shape[0], num_tokens, num_tokens)  # (B, L, S)
    if causal:
        visible = visible & causal_mask(num_tokens, device=lens.device)  # (B, L, S)
    return visible


def hatch_overlay(visible, *, cell_px: int = _CELL_PX, color=(0.25, 0.25, 0.25), alpha: float = 0.45,
                  ) -> np.ndarray:
    """An RGBA image with diagonal stripes over the hidden cells (transparent elsewhere).

    Args:
        visible: boolean ``(L, S)``, True = may attend (left clear).
        cell_px: pixels per cell side.
        color: RGB of the stripes.
        alpha: opacity of the stripes.

    Returns:
        ``(L * cell_px, S * cell_px, 4)`` float array for ``imshow(..., extent=...)`` / ``set_data``.
    """
    vis = np.asarray(plotting.to_numpy(visible), dtype=bool)
    if vis.ndim != 2:
        raise ValueError(f"visible must be 2-D (L, S), got shape {vis.shape}")
    if cell_px < 2:
        raise ValueError(f"cell_px must be >= 2, got {cell_px}")
    rows, cols = np.indices((cell_px, cell_px))
    stripe = ((rows + cols) % 4) < 2  # (cell_px, cell_px) diagonal stripes
    hidden = np.kron(~vis, np.ones((cell_px, cell_px), dtype=bool)).astype(bool)  # (L*px, S*px)
    tiled = np.tile(stripe, vis.shape)
    rgba = np.zeros(hidden.shape + (4,))
    rgba[..., :3] = color
    rgba[..., 3] = np.where(hidden & tiled, alpha, 0.0)
    return rgba


def weights_rgba(weights, visible, *, cmap: str = "viridis", vmin: float = 0.0, vmax: float = 1.0,
                 hidden_color=(0.85, 0.85, 0.85), cell_px: int = _CELL_PX) -> np.ndarray:
    """One RGBA picture of a weight matrix: visible cells in ``cmap``, hidden cells grey and hatched.

    Drawing this single image is cheaper than a masked heatmap plus a hatch overlay.

    Args:
        weights: ``(L, S)`` weights.
        visible: boolean ``(L, S)``, True = may attend.
        cmap, vmin, vmax: colour map and its limits for the visible cells.
        hidden_color: RGB of the hidden cells (under the stripes).
        cell_px: pixels per cell side.

    Returns:
        ``(L * cell_px, S * cell_px, 4)`` float array for ``AxesImage.set_data``.
    """
    import matplotlib

    w = plotting.to_numpy(weights)
    vis = np.asarray(plotting.to_numpy(visible), dtype=bool)
    if w.ndim != 2 or w.shape != vis.shape:
        raise ValueError(f"weights {w.shape} and visible {vis.shape} must both be (L, S)")
    norm = np.clip((w - vmin) / (vmax - vmin), 0.0, 1.0)
    rgba = matplotlib.colormaps[cmap](norm)  # (L, S, 4)
    rgba[~vis] = (*hidden_color, 1.0)
    big = np.kron(rgba, np.ones((cell_px, cell_px, 1)))  # (L*px, S*px, 4)
    stripes = hatch_overlay(vis, cell_px=cell_px)  # (L*px, S*px, 4)
    a = stripes[..., 3:4]
    big[..., :3] = big[..., :3] * (1.0 - a) + stripes[..., :3] * a
    return big


def demo_batch(*, batch: int = 3, num_tokens: int = 6, d_k: int = 8, d_v: int = 4, seed: int = 0):
    """The explorer's random self-attention batch, from its own seeded generator.

    Args:
        batch: B.
        num_tokens: L = S.
        d_k: width of queries and keys.
        d_v: width of values.
        seed: seed of a private ``torch.Generator`` (the global generator is not touched).

    Returns:
        ``(q (B, L, Dk), k (B, L, Dk), v (B, L, Dv))`` in float64.
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, num_tokens, d_k, generator=gen, dtype=torch.float64)  # (B, L, Dk)
    k = torch.randn(batch, num_tokens, d_k, generator=gen, dtype=torch.float64)  # (B, S, Dk)
    v = torch.randn(batch, num_tokens, d_v, generator=gen, dtype=torch.float64)  # (B, S, Dv)
    return q, k, v


@register("masking")
def masking_explorer(valid_lens=DEFAULT_VALID_LENS, *, num_tokens: int = 6, d_k: int = 8,
                     causal: bool = False, seed: int = 0) -> Explorer:
    """Sliders for each batch row's valid length and a causal toggle, over one batch of self-attention.

    Args:
        valid_lens: the starting length of each of the B = 3 batch rows, in ``[0, num_tokens]``.
        num_tokens: L = S, tokens per row (2..10).
        d_k: width of the random queries and keys.
        causal: start with the causal mask on.
        seed: seed of the explorer's own generator for the random queries, keys and values.

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``len0``, ``len1``, ``len2``,
        ``causal`` and a readout of query 2's weights in each batch row, each row's weight sums
        per query, the largest weight on a hidden key and the number of fully hidden query rows.
    """
    lens = tuple(int(n) for n in valid_lens)
    if len(lens) != 3:
        raise ValueError(f"valid_lens must give 3 lengths (one per batch row), got {valid_lens!r}")
    if not 2 <= num_tokens <= 10:
        raise ValueError(f"num_tokens must be in [2, 10], got {num_tokens}")
    if any(not 0 <= n <= num_tokens for n in lens):
        raise ValueError(f"valid_lens must lie in [0, num_tokens={num_tokens}], got {lens}")
    B, L = 3, num_tokens
    q, k, v = demo_batch(batch=B, num_tokens=L, d_k=d_k, seed=seed)  # (B, L, Dk), (B, S, Dk), (B, S, Dv)

    controls = {f"len{b}": int_slider(f"valid_len (row {b})", 0, L, lens[b], width="230px")
                for b in range(B)}
    controls["causal"] = toggle("causal mask (hide j > i)", causal)

    # Every (row, length, causal) combination is small: compute them all once, so that a slider
    # move only looks results up and moves pixels.
    table = {}
    for c in (False, True):
        for n in range(L + 1):
            lens_n = torch.full((B,), n)  # (B,)
            _, w_n = dot_product_attention(q, k, v, valid_lens=lens_n, is_causal=c)  # (B, L, S)
            vis_n = combined_visible(lens_n[:1], L, c)[0]  # (L, S)
            pictures = [weights_rgba(w_n[b], vis_n) for b in range(B)]
            table[c, n] = (w_n.numpy(), vis_n.numpy(), pictures)

    def compute(len0, len1, len2, causal):
        rows = [table[bool(causal), int(n)] for n in (len0, len1, len2)]
        weights = np.stack([rows[b][0][b] for b in range(B)])  # (B, L, S)
        visible = np.stack([rows[b][1] for b in range(B)])  # (B, L, S)
        return weights, visible, [rows[b][2][b] for b in range(B)]

    probe = min(2, L - 1)  # the query whose weights the readout lists
    w0, vis0, pictures0 = compute(*lens, causal)
    fig, axes = new_figure(1, B, figsize=(8.4, 3.0))
    images = []
    for b, ax in enumerate(axes):
        im = plotting.heatmap(w0[b], ax=ax, mask=vis0[b], vmin=0.0, vmax=1.0, colorbar=(b == B - 1),
                              title=f"batch row {b}", xlabel="key j",
                              ylabel="query i" if b == 0 else "")
        im.set_data(pictures0[b])  # the same cells as one RGBA picture, hidden ones hatched
        if b > 0:
            ax.tick_params(labelleft=False)  # one set of query labels is enough (and faster)
        images.append(im)

    def update(len0, len1, len2, causal):
        weights, visible, pictures = compute(len0, len1, len2, causal)
        for b in range(B):
            images[b].set_data(pictures[b])
        hidden_w = np.where(visible, 0.0, weights)  # weights on hidden keys only
        shown = {"valid_lens": [int(len0), int(len1), int(len2)]}
        for b in range(B):
            shown[f"row {b}: weights of query {probe}"] = weights[b, probe]
        for b in range(B):
            shown[f"row {b}: row sums (per query)"] = weights[b].sum(-1)
        shown["max weight on a hidden key"] = float(np.abs(hidden_w).max())
        shown["fully hidden query rows"] = int((~visible.any(-1)).sum())
        return shown

    ex = Explorer(controls, update, fig, columns=[str(j) for j in range(L)], digits=3,
                  dynamic=images)
    ex.data = {"q": q, "k": k, "v": v}  # the inputs, for tests and curious readers
    return ex
